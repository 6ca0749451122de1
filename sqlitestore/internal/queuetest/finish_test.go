package queuetest

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
	"github.com/heed-go/heed/sqlitestore"
)

// failingWrites fails the first n result writes (alone or batched) with a
// timeout, as a loaded database does.
type failingWrites struct {
	jobstore.Store
	n      atomic.Int64
	failed atomic.Int64
}

func (s *failingWrites) fail() bool {
	if s.n.Add(-1) >= 0 {
		s.failed.Add(1)
		return true
	}
	return false
}

func (s *failingWrites) JobTransition(ctx context.Context, t jobstore.Transition) error {
	if s.fail() {
		return context.DeadlineExceeded
	}
	return s.Store.JobTransition(ctx, t)
}

// batchingFailingWrites adds TransitionBatcher, so that the worker writes
// through its completer.
type batchingFailingWrites struct{ *failingWrites }

func (s batchingFailingWrites) JobTransitions(ctx context.Context, ts []jobstore.Transition) ([]error, error) {
	if s.fail() {
		return nil, context.DeadlineExceeded
	}
	return s.Store.(*sqlitestore.Store).JobTransitions(ctx, ts)
}

// TestWorkerRetriesResultWrites: a result write that fails is retried
// under the attempt's lease token, so that finished work is recorded once
// and not run again as "lost".
func TestWorkerRetriesResultWrites(t *testing.T) {
	for name, batched := range map[string]bool{"alone": false, "batched": true} {
		t.Run(name, func(t *testing.T) {
			fw := &failingWrites{Store: openStore(t)}
			fw.n.Store(3)
			var st jobstore.Store = plainStore{fw}
			if batched {
				st = batchingFailingWrites{fw}
			}
			var runs atomic.Int64
			w := newWorker(t, st, fastConfig())
			queue.Handle(w, "once", func(context.Context, *queue.Job, msg) error { runs.Add(1); return nil })
			start(t, w)
			j := enqueue(t, queue.NewClient(fw.Store, queue.ClientConfig{}), "once", msg{1}, queue.EnqueueOptions{})
			got := waitFinal(t, fw.Store, j.ID)[j.ID]
			if got.State != queue.StateSucceeded || outcomes(got) != "success/done" || runs.Load() != 1 || fw.failed.Load() != 3 {
				t.Errorf("state %s, history %q, %d runs, %d failed writes; want succeeded, one success entry, 1 run, 3 failed writes",
					got.State, outcomes(got), runs.Load(), fw.failed.Load())
			}
		})
	}
}

// TestWorkerResultWriteLeaseLost: a result retried after another worker
// rescued the job is refused by the lease token, and dropped.
func TestWorkerResultWriteLeaseLost(t *testing.T) {
	fw := &failingWrites{Store: openStore(t)}
	fw.n.Store(1 << 30) // every write fails: the lease expires meanwhile
	var events = make(chan queue.EventKind, 16)
	cfg := fastConfig()
	cfg.Lease = time.Second
	cfg.RescueInterval = time.Hour // the rescue below stands for another worker's
	cfg.Observe = func(_ context.Context, e queue.Event) {
		select {
		case events <- e.Kind:
		default: // Observe must not block
		}
	}
	w := newWorker(t, plainStore{fw}, cfg)
	done := make(chan struct{})
	queue.Handle(w, "once", func(context.Context, *queue.Job, msg) error { close(done); return nil })
	start(t, w)
	j := enqueue(t, queue.NewClient(fw.Store, queue.ClientConfig{}), "once", msg{1}, queue.EnqueueOptions{})
	<-done
	// Another worker rescues the job once its lease has expired.
	var rescued []*queue.Job
	for deadline := time.Now().Add(10 * time.Second); len(rescued) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the lease never expired")
		}
		var err error
		rescued, err = fw.Store.JobRescue(ctx, jobstore.RescueParams{Now: time.Now(), LeaseUntil: time.Now().Add(time.Minute), Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	fw.n.Store(0) // the database is back: the stale write reaches it
	for {
		select {
		case k := <-events:
			if k == queue.EventLeaseLost {
				if got, _ := fw.Store.JobGet(ctx, j.ID); got.State != queue.StateRunning || got.LeaseToken != rescued[0].LeaseToken {
					t.Errorf("the stale result overwrote the rescue: %+v", got)
				}
				return
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the stale result write was not refused")
		}
	}
}
