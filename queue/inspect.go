package queue

import (
	"context"
	"time"
)

// Inspector is implemented by stores that answer the questions of a
// dashboard (package ui) beside those of [Store]: text search, the lag of
// each queue, throughput per minute and a light listing of the
// dead-letter's causes. sqlitestore and pgstore implement it;
// queue/storetest's RunInspector is its conformance suite.
//
// Implementations must be safe for concurrent use, honour ctx, and take
// every time from their arguments (never a clock).
type Inspector interface {
	// JobSearch returns the jobs that match p.Filter (as [Store.JobList]
	// selects, orders and limits them) and contain p.Text, compared
	// without regard to ASCII case, in the error text of an entry of their
	// history or, when p.InArgs, in their arguments as stored. An empty
	// text matches every job. Searching arguments is an oracle for the
	// secrets they hold: callers that show arguments redacted must not set
	// InArgs for a reader who may not see them.
	JobSearch(ctx context.Context, p SearchParams) ([]*Job, error)

	// QueueLags returns, for each queue that has jobs due at now
	// (available with AvailableAt <= now), the AvailableAt of the oldest
	// one: how long the queue has kept work waiting. Queues with nothing
	// due are absent.
	QueueLags(ctx context.Context, now time.Time) (map[string]time.Time, error)

	// Throughput counts the history entries whose FinishedAt is in [since,
	// until), per queue, minute (FinishedAt truncated to the minute, UTC)
	// and Action, for the actions "done", "retry" and "give_up" (entries
	// stored before actions had keys, with "give up", count as
	// "give_up"); entries of other actions are not counted. Counts are in no particular order
	// and never zero.
	Throughput(ctx context.Context, since, until time.Time) ([]Throughput, error)

	// DeadCauses returns the dead jobs that match f (f.State is ignored)
	// without their arguments and history: each with the error text of
	// its last history entry, as [DeadCause]. They are in the order they
	// died, (FinishedAt, ID), oldest first, or newest first with f.Newest:
	// the dead-letter's index serves "the newest N" without reading the
	// rest of the table.
	DeadCauses(ctx context.Context, f JobFilter) ([]DeadCause, error)
}

// Throughput is one count of [Inspector.Throughput].
type Throughput struct {
	Queue  string    // the job's queue
	Minute time.Time // the start of the minute, UTC
	Action string    // "done", "retry" or "give_up"
	Count  int       // entries, at least 1
}

// DeadCause is a dead job as [Inspector.DeadCauses] lists it: enough to
// group the dead-letter by cause.
type DeadCause struct {
	ID         int64
	Kind       string
	Queue      string
	Reason     string    // Job.DeadReason
	FinishedAt time.Time // when it died
	// Error is the error text of the job's last history entry ("" when
	// that entry has none).
	Error string
}
