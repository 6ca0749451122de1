package queue

import (
	"context"

	"github.com/heed-go/heed/clock"
	"github.com/heed-go/heed/queue/internal/check"
	"github.com/heed-go/heed/queue/jobstore"
)

// claim claims for p, reporting whether a limit held jobs back when the
// store can tell.
func (w *Worker) claim(p jobstore.ClaimParams) ([]*Job, bool, error) {
	if hc, ok := w.store.(jobstore.HeldClaimer); ok {
		return hc.JobClaimHeld(w.ctx, p)
	}
	jobs, err := w.store.JobClaim(w.ctx, p)
	return jobs, false, err
}

// SetLimit sets queue's global limits (the zero Limit removes them). Every
// worker of every process sharing the store enforces them from its next
// claim (workers of heed releases before limits ignore them). A rate that
// is set or changed starts with a full bucket. A bad queue name or limit
// returns an error matching ErrInvalid.
func (c *Client) SetLimit(ctx context.Context, queue string, l Limit) error {
	if err := check.Name("queue", queue, jobstore.MaxName); err != nil {
		return err
	}
	if err := l.Validate(); err != nil {
		return err
	}
	return c.store.QueueLimit(ctx, queue, l, clock.Now(c.cfg.Clock).UTC())
}

// Limits returns the queues that have limits, sorted by name.
func (c *Client) Limits(ctx context.Context) ([]jobstore.QueueLimit, error) {
	return c.store.QueuesLimited(ctx)
}
