package jobstore

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

	// DeadCauseCounts counts every dead job by [CauseKey] and queue,
	// largest count first (then by kind, reason, cause and queue), at
	// most limit counts (0: all of them). It reads an index of the
	// causes, not the jobs. A database whose schema predates that index
	// (one release behind, opened to read) returns an error matching
	// [ErrSchemaTooOld].
	DeadCauseCounts(ctx context.Context, limit int) ([]DeadCauseCount, error)

	// DeadOfCause returns the dead jobs of key, as [DeadCause] without
	// their error text (Error is empty: the index of causes answers
	// without reading the jobs), newest death first ((FinishedAt, ID)
	// descending), at most limit (0: all). Its errors are those of
	// DeadCauseCounts.
	DeadOfCause(ctx context.Context, key CauseKey, limit int) ([]DeadCause, error)
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

// CauseKey names a cause of death in the dead-letter: the jobs of one
// kind and dead reason whose last history entry's error text starts the
// same way once digits are set aside. Cause is computed by the store's
// database from each dead job's row (so that every writer, whatever its
// version, keeps it right): the first 300 characters of that error text,
// with every digit read as "0" ("dial tcp 00.0.0.0:0000: connection
// refused"). Texts that differ only in their numbers (addresses, ports,
// counts, many IDs) share a key.
type CauseKey struct {
	Kind   string
	Reason string // Job.DeadReason
	Cause  string
}

// DeadCauseCount is one count of [Inspector.DeadCauseCounts]: the dead
// jobs of one [CauseKey] in one queue.
type DeadCauseCount struct {
	CauseKey
	Queue string
	Count int // at least 1
	// First and Last are when the oldest and the newest of them died.
	First, Last time.Time
	// MaxID is the highest ID among them, a sample.
	MaxID int64
}
