package queue

import (
	"time"

	"github.com/heed-go/heed/clock"
	"github.com/heed-go/heed/queue/jobstore"
)

// Retention defaults: how long a worker keeps finished jobs before it
// deletes them (see WorkerConfig.RetainSucceeded and
// WorkerConfig.WithDefaults).
const (
	// defaultRetainSucceeded keeps succeeded jobs for a day: long enough
	// to look at what ran overnight, short enough that the table of a busy
	// queue stays small.
	defaultRetainSucceeded = 24 * time.Hour
	// defaultRetainDead keeps dead jobs for 30 days: the dead-letter waits
	// for a person, who may be on holiday.
	defaultRetainDead = 30 * 24 * time.Hour
	// defaultRetainCancelled keeps cancelled jobs for 7 days, for the
	// record of who cancelled what.
	defaultRetainCancelled = 7 * 24 * time.Hour
	// defaultRetentionInterval is how often a worker looks for finished
	// jobs past their retention (±20 % jitter).
	defaultRetentionInterval = time.Minute
)

// retentionPause is the pause between two full retention batches.
const retentionPause = 50 * time.Millisecond

// keep is how long finished jobs of one state are kept.
type keep struct {
	state State
	d     time.Duration
}

// retained lists the finished states a worker prunes, with how long each
// is kept.
func (w *Worker) retained() []keep {
	var r []keep
	for _, k := range []keep{{StateSucceeded, w.cfg.RetainSucceeded}, {StateDead, w.cfg.RetainDead},
		{StateCancelled, w.cfg.RetainCancelled}} {
		if k.d > 0 {
			r = append(r, k)
		}
	}
	return r
}

// startRetention starts the pruning loop unless retention is off (a
// negative RetentionInterval, or negative retention for every finished
// state).
func (w *Worker) startRetention() {
	if w.cfg.RetentionInterval > 0 && len(w.retained()) > 0 {
		w.loops.Go(w.retentionLoop)
	}
}

func (w *Worker) retentionLoop() {
	timer := clock.Or(w.cfg.Clock).NewTimer(w.jittered(w.cfg.RetentionInterval))
	defer timer.Stop()
	for {
		select {
		case <-w.stopping:
			return
		case <-timer.C():
		}
		w.prune()
		timer.Reset(w.jittered(w.cfg.RetentionInterval))
	}
}

// prune deletes the finished jobs past their retention, jobstore.RetentionBatch at
// a time, until none is left or the worker stops. It returns how many it
// deleted.
func (w *Worker) prune() int {
	total := 0
	for _, r := range w.retained() {
		before := w.now().Add(-r.d)
		for {
			n, err := w.store.JobPrune(w.ctx, jobstore.PruneParams{State: r.state, Before: before, Limit: jobstore.RetentionBatch})
			if err != nil {
				w.storeFailed("delete "+string(r.state)+" jobs past their retention", err)
				return total
			}
			w.storeOK()
			total += n
			if n < jobstore.RetentionBatch {
				break
			}
			timer := clock.Or(w.cfg.Clock).NewTimer(retentionPause)
			select {
			case <-w.stopping:
				timer.Stop()
				return total
			case <-timer.C():
			}
		}
	}
	return total
}
