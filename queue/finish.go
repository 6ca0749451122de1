package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/clock"
	"github.com/heed-go/heed/queue/jobstore"
)

// resultBackoff paces the retries of a result write: from 50 ms up to 2 s
// (or a quarter of the lease, if less), full jitter.
var resultBackoff = backoff.Schedule{Base: 50 * time.Millisecond, Cap: 2 * time.Second}

// minResultTimeout is the least time one result write gets before it is
// retried, however short the lease: on a loaded machine a commit can take
// longer than a short lease, and cutting it off then only turns finished
// work into a "lost" attempt.
const minResultTimeout = 5 * time.Second

// resultTimeout bounds one try of a result write (alone or in a batch).
func (w *Worker) resultTimeout() time.Duration { return max(w.cfg.Lease, minResultTimeout) }

// resultRetryFor is how long a worker keeps retrying a result write: ten
// leases, and at least a minute. The lease token guards every try, so a
// write that comes after another worker rescued the job fails with
// ErrLeaseLost instead of overwriting its attempt.
func (w *Worker) resultRetryFor() time.Duration { return max(10*w.cfg.Lease, time.Minute) }

// storeResult writes the transition t that ends an attempt, retrying with
// backoff while the store fails: within the lease the attempt still holds
// and beyond it, since only a rescue by another worker (which changes the
// lease token, so that the write fails with ErrLeaseLost) makes the result
// wrong. It gives up, returning the last error, on ErrLeaseLost, on a
// store error that retrying cannot fix (ErrNotFound, ErrInvalid), after
// resultRetryFor, and when the shutdown grace ends (for a rescue's
// result: when shutdown begins); the lease then expires and the attempt is
// rescued as lost.
func (w *Worker) storeResult(t jobstore.Transition) error {
	start := w.now()
	// Retry at least four times a lease: once the store is back, the
	// result should land before a rescuer finds the expired lease.
	sched := resultBackoff
	sched.Cap = max(min(sched.Cap, w.cfg.Lease/4), sched.Base)
	var wait time.Duration
	for n := 1; ; n++ {
		err := w.writeResult(t)
		if err == nil {
			if n > 1 {
				w.storeOK()
			}
			return nil
		}
		if errors.Is(err, jobstore.ErrLeaseLost) || errors.Is(err, ErrNotFound) || errors.Is(err, ErrInvalid) {
			return err
		}
		if w.now().Sub(start) >= w.resultRetryFor() {
			return fmt.Errorf("queue: gave up storing the result of job %d after %d tries: %w", t.ID, n, err)
		}
		w.storeFailed(fmt.Sprintf("store the result of job %d", t.ID), err)
		wait = sched.Next(n, wait, w.cfg.Rand)
		// A rescue's result is not worth delaying shutdown for: the job
		// stays leased and is rescued again.
		var stop <-chan struct{}
		if t.Entry.Outcome == jobstore.OutcomeLost {
			stop = w.stopping
		}
		timer := clock.Or(w.cfg.Clock).NewTimer(wait)
		select {
		case <-timer.C():
		case <-w.jobCtx.Done(): // the shutdown grace ended
			timer.Stop()
			return err
		case <-stop:
			timer.Stop()
			return err
		}
	}
}

// writeResult makes one try at writing t: through the completer when the
// store batches, else alone.
func (w *Worker) writeResult(t jobstore.Transition) error {
	if w.batcher != nil {
		c := completion{t: t, done: make(chan error, 1)}
		w.complete <- c
		return <-c.done
	}
	ctx, cancel := context.WithTimeout(w.ctx, w.resultTimeout())
	defer cancel()
	return w.store.JobTransition(ctx, t)
}
