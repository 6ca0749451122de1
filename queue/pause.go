package queue

import (
	"context"

	"github.com/heed-go/heed/clock"
	"github.com/heed-go/heed/queue/internal/check"
	"github.com/heed-go/heed/queue/jobstore"
)

// Pause pauses queue: no worker claims its jobs until [Client.Resume]
// (jobs already running finish; new jobs can still be enqueued). Every
// worker sees it at its next claim, within its poll interval (one
// second by default) when idle. It reports whether the queue was not
// already paused. A bad queue name returns an error matching ErrInvalid.
func (c *Client) Pause(ctx context.Context, queue string) (changed bool, err error) {
	if err := check.Name("queue", queue, jobstore.MaxName); err != nil {
		return false, err
	}
	return c.store.QueuePause(ctx, queue, clock.Now(c.cfg.Clock).UTC())
}

// Resume resumes a queue paused with [Client.Pause] and wakes its
// workers. It reports whether the queue was paused.
func (c *Client) Resume(ctx context.Context, queue string) (changed bool, err error) {
	if err := check.Name("queue", queue, jobstore.MaxName); err != nil {
		return false, err
	}
	return c.store.QueueResume(ctx, queue)
}

// Paused returns the paused queues, sorted by name.
func (c *Client) Paused(ctx context.Context) ([]jobstore.PausedQueue, error) {
	return c.store.QueuesPaused(ctx)
}
