package jobstore

import (
	"context"
	"time"
)

// PausedQueue is a queue an operator paused.
type PausedQueue struct {
	Queue    string    // the queue's name
	PausedAt time.Time // when it was paused (UTC)
}

// QueueOps pause and resume queues. They are part of [Store]. A paused
// queue keeps its jobs and accepts new ones, but [Store.JobClaim] gives
// none of them to any worker until it is resumed; running jobs finish as
// usual. The pause is kept in the database (a row per queue), so every
// worker of every process sees it at its next claim. Limits ([Limit])
// are kept beside it in the same way.
type QueueOps interface {
	// QueuePause pauses queue (which need not have jobs) at now. It
	// returns false, changing nothing, when the queue was already paused.
	QueuePause(ctx context.Context, queue string, now time.Time) (changed bool, err error)
	// QueueResume resumes queue and wakes its workers. It returns false
	// when the queue was not paused.
	QueueResume(ctx context.Context, queue string) (changed bool, err error)
	// QueuesPaused returns the paused queues, sorted by name.
	QueuesPaused(ctx context.Context) ([]PausedQueue, error)
	// QueueLimit sets queue's [Limit] (valid: [Limit.Validate]), which
	// need not have jobs; the zero Limit removes it. [Store.JobClaim]
	// enforces it from the next claim, in every process. A rate that is
	// set or changed (Rate or RatePeriod) starts with a full bucket
	// ([Limit.FullBucket]) at now; otherwise the bucket is kept.
	QueueLimit(ctx context.Context, queue string, l Limit, now time.Time) error
	// QueuesLimited returns the queues with a limit that is not zero,
	// sorted by name, with RatePeriod as set (0 when left at its
	// default).
	QueuesLimited(ctx context.Context) ([]QueueLimit, error)
}
