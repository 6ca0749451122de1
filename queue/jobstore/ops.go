package jobstore

import (
	"context"
	"fmt"
	"strings"
)

// StateCancelled is the state of a job an operator cancelled (with
// [queue.Client.Cancel]) before it finished: it never runs again. Like
// StateSucceeded and StateDead it is final: the job has a FinishedAt, can
// be deleted, and is removed by retention (see WorkerConfig.RetainCancelled).
const StateCancelled State = "cancelled"

// Finished reports whether s is a final state: succeeded, dead or
// cancelled.
func (s State) Finished() bool {
	return s == StateSucceeded || s == StateDead || s == StateCancelled
}

// Outcomes of the history entries operators add.
const (
	// OutcomeCancelled marks the entry [queue.Client.Cancel] appends (Action
	// ActionCancel; Worker is the operator). When the job was running, the
	// attempt it interrupted is not recorded: its result is dropped.
	OutcomeCancelled = "cancelled"
	// OutcomeRunNow marks the entry [queue.Client.RunNow] appends (Action
	// ActionRunNow): the job's wait was cut short.
	OutcomeRunNow = "run_now"
)

// Actions of the entries operators add, stored as spelled here.
const (
	ActionCancel = "cancel"  // an operator cancelled the job
	ActionRunNow = "run_now" // an operator made the job due now
)

// JobOps are the operator's changes to jobs that are not attempts: cancel,
// run now, delete, and retention's pruning. They are part of [Store].
type JobOps interface {
	// JobCancel cancels the jobs that match p.Filter and are available or
	// running (p.Filter.State, when set, is one of those two): each becomes
	// StateCancelled with FinishedAt = p.Now, its lease cleared (Worker is
	// kept), and p.Entry appended to its history. A worker running one of
	// them loses its lease: its renewal and its result fail with
	// ErrLeaseLost. A store that implements [CancelNotifier] tells the
	// running worker at once. It returns how many jobs it cancelled.
	JobCancel(ctx context.Context, p OpParams) (int, error)

	// JobRunNow makes the jobs that match p.Filter, available with
	// AvailableAt after p.Now (scheduled, waiting for a retry, snoozed or
	// deferred), available at p.Now, with p.Entry appended to their
	// history, and wakes the workers of their queues. p.Filter.State,
	// when set, must be StateAvailable. It returns how many jobs it changed.
	JobRunNow(ctx context.Context, p OpParams) (int, error)

	// JobDelete deletes the finished (succeeded, dead or cancelled) jobs
	// that match f (f.State, when set, is one of those three) and returns
	// how many. Jobs in other states are never touched.
	JobDelete(ctx context.Context, f JobFilter) (int, error)

	// JobPrune deletes up to p.Limit jobs in the finished state p.State
	// that finished before p.Before, oldest first, in one short statement,
	// and returns how many: retention calls it in a loop (see
	// WorkerConfig.RetainSucceeded).
	JobPrune(ctx context.Context, p PruneParams) (int, error)
}

// CancelNotifier is implemented by stores that can tell the worker running
// a job that it was cancelled (pgstore through LISTEN/NOTIFY, for any
// process; sqlitestore at once within its own process, within a quarter
// second from others). A [queue.Worker] cancels the
// job's handler context when told; without a notification it notices at
// the job's next lease renewal (within a third of the lease).
type CancelNotifier interface {
	// JobCancelNotify returns a channel that receives the ID of each
	// running job that [JobOps.JobCancel] cancelled. Notifications may be
	// dropped when the receiver is slow; the channel is closed when ctx
	// ends or the store stops listening.
	JobCancelNotify(ctx context.Context) (<-chan int64, error)
}

// opsFilter checks a filter for op (cancel, run now, delete): valid, and
// its State, when set, one of allowed.
func opsFilter(f JobFilter, op string, allowed ...State) (JobFilter, error) {
	if err := f.Validate(); err != nil {
		return f, err
	}
	if f.State == "" {
		return f, nil
	}
	for _, s := range allowed {
		if f.State == s {
			return f, nil
		}
	}
	return f, &InputError{Field: "JobFilter.State", Reason: fmt.Sprintf("is %s; %s takes jobs that are %s", f.State, op, oneOf(allowed))}
}

// oneOf spells states as a person lists them: "a", "a or b", "a, b or c".
func oneOf(states []State) string {
	words := make([]string, len(states))
	for i, s := range states {
		words[i] = string(s)
	}
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// CancelFilter checks f for [Store.JobCancel]: valid, and its State, when
// set, available or running. Errors match ErrInvalid.
func CancelFilter(f JobFilter) error {
	_, err := opsFilter(f, "cancel", StateAvailable, StateRunning)
	return err
}

// RunNowFilter checks f for [Store.JobRunNow]: valid, and its State, when
// set, available. Errors match ErrInvalid.
func RunNowFilter(f JobFilter) error {
	_, err := opsFilter(f, "run now", StateAvailable)
	return err
}

// DeleteFilter checks f for [Store.JobDelete]: valid, and its State, when
// set, finished. Errors match ErrInvalid.
func DeleteFilter(f JobFilter) error {
	_, err := opsFilter(f, "delete", StateSucceeded, StateDead, StateCancelled)
	return err
}

// RetentionBatch is the most jobs one retention statement deletes (the
// Limit of the [PruneParams] a queue worker hands [JobOps.JobPrune]): each
// is a short transaction, so retention never holds locks (or, on SQLite,
// the single writer) for long, and a pause between batches lets other
// writes through.
const RetentionBatch = 1000
