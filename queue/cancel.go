package queue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/heed-go/heed/queue/jobstore"
)

// cancels holds the cancel functions of the jobs a worker is running, so
// that a cancellation heard from the store ends the right handler. The
// zero value is ready to use.
type cancels struct {
	mu sync.Mutex
	m  map[int64]context.CancelCauseFunc
}

func (c *cancels) add(id int64, f context.CancelCauseFunc) {
	c.mu.Lock()
	if c.m == nil {
		c.m = map[int64]context.CancelCauseFunc{}
	}
	c.m[id] = f
	c.mu.Unlock()
}

func (c *cancels) remove(id int64) {
	c.mu.Lock()
	delete(c.m, id)
	c.mu.Unlock()
}

// cancel ends job id's handler with ErrCancelled, if this worker runs it.
func (c *cancels) cancel(id int64) {
	c.mu.Lock()
	f := c.m[id]
	c.mu.Unlock()
	if f != nil {
		f(ErrCancelled)
	}
}

// startCancels listens for cancellations when the store can tell them.
func (w *Worker) startCancels() {
	n, ok := w.store.(jobstore.CancelNotifier)
	if !ok {
		return // the lease renewal finds them
	}
	ch, err := n.JobCancelNotify(w.ctx)
	if err != nil {
		w.log("cancel notifications unavailable; cancelled jobs are noticed at their lease renewal", err)
		return
	}
	w.loops.Go(func() {
		for {
			select {
			case <-w.stopping:
				return
			case id, ok := <-ch:
				if !ok {
					return
				}
				w.cancels.cancel(id)
			}
		}
	})
}

// whyLost returns ErrCancelled (wrapped) when err says that job id's lease
// was lost and the job was cancelled by an operator, and err otherwise.
func (w *Worker) whyLost(id int64, err error) error {
	if !errors.Is(err, jobstore.ErrLeaseLost) {
		return err
	}
	ctx, cancel := context.WithTimeout(w.ctx, 5*time.Second)
	defer cancel()
	if j, gerr := w.store.JobGet(ctx, id); gerr == nil && j.State == StateCancelled {
		return cancelledError(id)
	}
	return err
}

// cancelledError says that job ID was cancelled by an operator. It
// matches ErrCancelled without that sentinel's words after its own, which
// said the package twice ("queue: job 7: queue: job cancelled by an
// operator").
type cancelledError int64

func (e cancelledError) Error() string {
	return fmt.Sprintf("queue: job %d cancelled by an operator", int64(e))
}

func (e cancelledError) Is(target error) bool { return target == ErrCancelled }
