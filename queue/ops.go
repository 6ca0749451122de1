package queue

import (
	"context"
	"errors"

	"github.com/heed-go/heed/clock"
	"github.com/heed-go/heed/queue/jobstore"
)

// ErrCancelled is the cause of the context cancellation a running job's
// handler sees when an operator cancels the job (context.Cause returns
// it). The worker drops the attempt's result: the job is already
// cancelled.
var ErrCancelled = errors.New("queue: job cancelled by an operator")

// Cancel cancels the jobs that match f and have not finished: available
// ones (due now, scheduled, waiting for a retry) and running ones. Each
// ends in StateCancelled with a "cancelled" entry naming the operator in
// its history, and never runs again; a running job's handler sees its
// context cancelled with the cause ErrCancelled (at once when the store
// is a [jobstore.CancelNotifier], else at its next lease renewal) and its result
// is dropped. f.State may narrow the selection to StateAvailable or
// StateRunning; other states return an error matching ErrInvalid. It
// returns how many jobs it cancelled: cancelling a job that has finished
// (or does not exist) changes nothing and counts 0.
//
// Cancel one job with JobFilter{IDs: []int64{id}}; the zero JobFilter
// cancels every unfinished job.
func (c *Client) Cancel(ctx context.Context, f JobFilter) (int, error) {
	if err := jobstore.CancelFilter(f); err != nil {
		return 0, err
	}
	now := clock.Now(c.cfg.Clock).UTC()
	return c.store.JobCancel(ctx, jobstore.OpParams{Filter: f, Now: now, Entry: Attempt{Worker: c.cfg.Operator, StartedAt: now, FinishedAt: now,
		Outcome: jobstore.OutcomeCancelled, Action: jobstore.ActionCancel}})
}

// RunNow makes the jobs that match f and wait for a later time (scheduled,
// waiting for a retry, snoozed or deferred) available now, and wakes the
// workers of their queues. Their attempts, time budget and history are
// kept; a "run_now" entry naming the operator is added. f.State may be
// StateAvailable or empty; other states return an error matching
// ErrInvalid. It returns how many jobs it changed (jobs already due, or
// not available, count 0).
func (c *Client) RunNow(ctx context.Context, f JobFilter) (int, error) {
	if err := jobstore.RunNowFilter(f); err != nil {
		return 0, err
	}
	now := clock.Now(c.cfg.Clock).UTC()
	return c.store.JobRunNow(ctx, jobstore.OpParams{Filter: f, Now: now, Entry: Attempt{Worker: c.cfg.Operator, StartedAt: now, FinishedAt: now,
		Outcome: jobstore.OutcomeRunNow, Action: jobstore.ActionRunNow}})
}

// Delete deletes the finished jobs (succeeded, dead or cancelled) that
// match f and returns how many. Available and running jobs are never
// deleted (cancel them first). f.State may narrow the selection to one
// finished state; other states return an error matching ErrInvalid.
func (c *Client) Delete(ctx context.Context, f JobFilter) (int, error) {
	if err := jobstore.DeleteFilter(f); err != nil {
		return 0, err
	}
	return c.store.JobDelete(ctx, f)
}
