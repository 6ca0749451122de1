package jobstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/queue/internal/check"
	"github.com/heed-go/heed/retry"
)

// Errors returned by stores and by package queue. Stores return errors that
// match them with errors.Is (they may wrap them with more context).
var (
	// ErrNotFound: no job has the ID asked for.
	ErrNotFound = errors.New("queue: job not found")
	// ErrLeaseLost: the job is no longer running under the lease token
	// given (its lease expired and another worker or the rescuer took it,
	// or it was finished or deleted). Nothing was changed.
	ErrLeaseLost = errors.New("queue: lease lost")
	// ErrInvalid is matched by every error about bad input (an empty kind,
	// arguments that are not JSON, a negative duration, ...). Nothing was
	// written.
	ErrInvalid = check.ErrInvalid
	// ErrSchemaTooNew: the database's schema was written by a newer
	// version of heed than this binary knows; upgrade the binary. Stores
	// return an error naming both versions that matches it.
	ErrSchemaTooNew = errors.New("queue: database schema is newer than this binary")
	// ErrSchemaTooOld: the database's schema lacks migrations this binary
	// needs, and the store was opened without migrating (as read-only
	// commands open it). Stores return an error naming the missing
	// migrations that matches it.
	ErrSchemaTooOld = errors.New("queue: database schema is older than this binary")
)

// State is where a job is in its life.
type State string

// The states of a job. A job is inserted available (possibly for later),
// becomes running when a worker claims it, and ends succeeded or dead (or
// cancelled by an operator: [StateCancelled]). A
// retry or a snooze makes it available again; a requeue moves a dead job
// back to available.
const (
	StateAvailable State = "available" // waiting for AvailableAt, then for a worker
	StateRunning   State = "running"   // leased to one worker
	StateSucceeded State = "succeeded" // done
	StateDead      State = "dead"      // given up: in the dead-letter, see Job.DeadReason
)

// Valid reports whether s is one of the five states (StateCancelled
// included).
func (s State) Valid() bool {
	switch s {
	case StateAvailable, StateRunning, StateSucceeded, StateDead, StateCancelled:
		return true
	}
	return false
}

// The stored words of a job's history. An entry's Outcome says what came of
// the attempt (or what took its place), its Action what was decided, its
// Reason why. Together with the keys of the retry package they are one
// vocabulary: stores keep these words, [queue.Event] names them (EventKind.String
// is the Outcome word for the same happening: "lost", "snoozed",
// "released", "deferred", "cancelled"), heedotel uses them as metric
// attribute values and the ui package reads them; nothing else spells them.
// They are snake_case and never reworded (a rename is a store migration).
//
// Outcomes recorded in [Attempt].Outcome besides the keys of
// [retry.Outcome] ("success", "transient", "timeout", "pushback",
// "permanent", "refused"):
const (
	OutcomeLost     = "lost"     // the worker's lease expired (crash, hang, partition)
	OutcomeSnoozed  = "snoozed"  // the handler returned [queue.Snooze]; the attempt was given back
	OutcomeReleased = "released" // shutdown handed the job back; the attempt was given back
	OutcomeRequeued = "requeued" // an operator requeued the dead job (not an attempt)
	OutcomeExpired  = "expired"  // the time budget ended before the attempt started
	OutcomeDeferred = "deferred" // the breaker or the retry budget refused the attempt; it was given back
	// OutcomeCut marks where a store dropped old entries of a long
	// history (see [MaxHistory]); Attempt.Cut says how many. Its Action
	// is [ActionCut].
	OutcomeCut = "cut"
)

// Actions recorded in [Attempt].Action besides the keys of [retry.Action]
// ("done", "retry", "give_up", "defer"). They are stored as they are
// spelled here.
const (
	ActionSnooze  = "snooze"  // the handler returned [queue.Snooze]
	ActionRelease = "release" // shutdown handed the job back
	ActionRequeue = "requeue" // an operator requeued the dead job
	ActionCut     = "cut"     // the marker of dropped entries ([OutcomeCut])
)

// ReasonUnknownKind is the dead reason ([Job].DeadReason, and the Reason of
// the history entry) of a job whose kind has no handler on the worker that
// claimed it (a typo, or a job for a newer release): the one dead reason
// that is not the [retry.Reason.Key] of a decision. Register the handler,
// then requeue the job.
const ReasonUnknownKind = "unknown_kind"

// ParseAction returns the [retry.Action] whose [retry.Action.Key] is key
// (an [Attempt].Action of "done", "retry", "give_up" or "defer"), or an
// error naming key: the store's own actions ([ActionSnooze]…) are not
// retry actions.
func ParseAction(key string) (retry.Action, error) {
	for _, a := range [...]retry.Action{retry.Done, retry.Retry, retry.GiveUp, retry.Defer} {
		if a.Key() == key {
			return a, nil
		}
	}
	return 0, fmt.Errorf("jobstore: unknown action %q (want done, retry, give_up or defer)", key)
}

// Attempt is one entry of a job's history: an attempt and the decision
// taken after it, or an operator's requeue (Outcome "requeued", Attempt 0).
// Entries are appended and not rewritten (but for a run of deferrals,
// kept as one entry whose Count grows: [Transition].ReplaceLast); stores keep them exactly (every
// string byte for byte, times to the microsecond). A store keeps the first
// entry and the last [MaxHistory]: past that, each new entry drops the
// oldest but the first, and one entry with Outcome [OutcomeCut] after the
// first counts the entries dropped.
type Attempt struct {
	// Attempt is the attempt number (from 1), or 0 for a requeue entry.
	Attempt int `json:"attempt"`
	// Worker is the ID of the worker that ran the attempt.
	Worker string `json:"worker,omitempty"`
	// StartedAt and FinishedAt bound the attempt. For a lost attempt,
	// FinishedAt is when the rescuer noticed.
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"` // see StartedAt
	// Outcome is the class of the result: a [retry.Outcome] name or one of
	// the Outcome constants of this package.
	Outcome string `json:"outcome"`
	// Error is the error's text, when the attempt failed: redacted (URL
	// secrets, credential-like words) and cut at [MaxErrorText].
	Error string `json:"error,omitempty"`
	// Panic is the stack of the panic, when the handler panicked, cut at
	// [MaxPanicText].
	Panic string `json:"panic,omitempty"`
	// Action is what was decided: a [retry.Action.Key] ("done", "retry",
	// "give_up", "defer") or one of the Action constants of this package
	// ("snooze", "release", "requeue").
	Action string `json:"action"`
	// Reason is the decision's [retry.Reason.Key] ("transient",
	// "attempts", "time_budget", ...), or this package's own.
	Reason string `json:"reason,omitempty"`
	// Delay is the wait before the next attempt (retry, snooze).
	Delay time.Duration `json:"delay,omitempty"`
	// Cut is, on an entry with Outcome [OutcomeCut], how many entries
	// were dropped in its place.
	Cut int `json:"cut,omitempty"`
	// Count is, on an entry with Outcome [OutcomeDeferred], how many
	// consecutive deferrals of this attempt for this Reason it stands
	// for, from the first (StartedAt) to the last (FinishedAt; its Error
	// and Delay are the last's): a job that waited for an open breaker
	// through many waves has one entry. 0 means 1 (entries written before
	// counts, one per deferral).
	Count int `json:"count,omitempty"`
}

// String describes the entry in one line, such as
// "attempt 2: transient: connection reset; retry in 4s" or
// "attempt 3: permanent: no such user; give up (permanent)".
func (a Attempt) String() string {
	switch a.Outcome {
	case OutcomeRequeued:
		return "requeued by " + a.Worker
	case OutcomeCancelled:
		return "cancelled by " + a.Worker
	case OutcomeRunNow:
		return "run now by " + a.Worker
	case OutcomeCut:
		return fmt.Sprintf("... %d entries cut (the history keeps the first and the last %d)", a.Cut, MaxHistory)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "attempt %d: %s", a.Attempt, a.Outcome)
	if a.Count > 1 {
		fmt.Fprintf(&b, " %d times since %s", a.Count, a.StartedAt.Format(time.RFC3339))
	}
	if a.Error != "" {
		b.WriteString(": ")
		b.WriteString(a.Error)
	}
	b.WriteString("; ")
	act, err := ParseAction(a.Action)
	if err == nil {
		b.WriteString(act.String())
	} else {
		b.WriteString(a.Action)
	}
	switch {
	case err == nil && (act == retry.Retry || act == retry.Defer), a.Action == ActionSnooze:
		fmt.Fprintf(&b, " in %v", a.Delay)
	}
	if err == nil && (act == retry.GiveUp || act == retry.Defer) {
		fmt.Fprintf(&b, " (%s)", a.Reason)
	}
	return b.String()
}

// JobPolicy overrides parts of the worker's policy for one job. Zero
// fields keep the worker's values. Stores keep it as opaque JSON, the
// form [JobPolicy.MarshalJSON] writes.
type JobPolicy struct {
	// Backoff replaces the worker's backoff schedule when not nil.
	Backoff *backoff.Schedule `json:"backoff,omitempty"`
	// TimeBudget replaces the worker's time budget (counted from the start
	// of the first attempt) when not zero; negative: no time budget.
	TimeBudget time.Duration `json:"time_budget,omitempty"`
	// AttemptTimeout replaces the worker's per-attempt timeout when not
	// zero; negative: no per-attempt timeout.
	AttemptTimeout time.Duration `json:"attempt_timeout,omitempty"`
}

// IsZero reports whether p overrides nothing.
func (p JobPolicy) IsZero() bool { return p == JobPolicy{} }

// Job is a job as stored. Stores fill every field; times are UTC.
type Job struct {
	ID       int64           // assigned by the store, increasing
	Kind     string          // selects the handler
	Queue    string          // the queue it waits in
	Args     json.RawMessage // valid JSON, as enqueued
	State    State           // where it is in its life
	Priority int             // lower runs first; default 0
	// Attempt is the number of attempts started (the running one
	// included), since the job was enqueued or last requeued.
	Attempt int
	// MaxAttempts overrides the worker's attempt limit when positive
	// (retry.Unlimited for no limit); 0 keeps the worker's.
	MaxAttempts int
	Policy      JobPolicy // per-job overrides of the worker's policy
	// AvailableAt is when the job may next be claimed.
	AvailableAt time.Time
	CreatedAt   time.Time // when it was enqueued
	// StartedAt is when the first attempt since enqueue or requeue started
	// (zero before); the time budget counts from it.
	StartedAt time.Time
	// AttemptedAt is when the current (or last) attempt started.
	AttemptedAt time.Time
	// FinishedAt is when the job succeeded or died (zero otherwise).
	FinishedAt time.Time
	UniqueKey  string // "" for none
	// LeaseToken and LeaseUntil: the running job's lease ("" and zero
	// otherwise). Only the holder of the token may change the job.
	LeaseToken string
	LeaseUntil time.Time // see LeaseToken
	// Worker is the worker that holds (or last held) the job.
	Worker string
	// DeadReason says why a dead job gave up: a [retry.Reason.Key] such as
	// "permanent", "attempts", "time_budget", "server_refused" or
	// "pushback_too_long" (compare with retry.ReasonAttempts.Key()), or
	// [ReasonUnknownKind].
	DeadReason string
	// History is every attempt and decision, oldest first.
	History []Attempt
}

// JobInsert is a new job for [Store.JobInsert]. Build one with
// [queue.NewJobInsert], which validates it; stores may assume a valid JobInsert.
type JobInsert struct {
	Kind        string          // not empty
	Queue       string          // not empty
	Args        json.RawMessage // valid JSON
	Priority    int             // lower runs first
	MaxAttempts int             // 0: the worker's; -1: unlimited
	Policy      JobPolicy       // per-job overrides
	AvailableAt time.Time       // UTC
	CreatedAt   time.Time       // UTC
	UniqueKey   string          // "" for none
	// UniqueStates are the states in which the job holds UniqueKey, in
	// the order available, running, succeeded, dead; nil is
	// the default: available, running. Set only with UniqueKey.
	UniqueStates []State
}

// ClaimParams asks [Store.JobClaim] for up to Limit jobs of Queue (for
// store implementers).
type ClaimParams struct {
	Queue      string    // the queue to claim from
	Limit      int       // at least 1
	Now        time.Time // jobs with AvailableAt <= Now are due
	LeaseUntil time.Time // the lease given to each claimed job
	Worker     string    // recorded on each job
	// FirstOnly claims only jobs that have made no attempt (Attempt 0):
	// a worker whose retry budget refuses retries claims first attempts
	// (which the budget admits) and leaves retried jobs waiting instead
	// of claiming them only to defer them.
	FirstOnly bool
}

// RescueParams asks [Store.JobRescue] for up to Limit running jobs whose
// lease ended before Now.
type RescueParams struct {
	Now        time.Time // leases that ended before it are expired
	LeaseUntil time.Time // the new lease, held by the rescuer
	Limit      int       // at least 1
}

// LeaseParams asks [Store.JobLeaseExtend] to move a running job's lease
// .
type LeaseParams struct {
	ID         int64     // the job
	LeaseToken string    // the token its claim (or rescue) gave
	LeaseUntil time.Time // the lease's new end
}

// Validate returns an error matching ErrInvalid, naming the field, when p
// has no token or no lease end.
func (p LeaseParams) Validate() error {
	switch {
	case p.LeaseToken == "":
		return &InputError{Field: "LeaseParams.LeaseToken", Reason: "is empty"}
	case p.LeaseUntil.IsZero():
		return &InputError{Field: "LeaseParams.LeaseUntil", Reason: "is zero"}
	}
	return nil
}

// OpParams asks a store to apply an operator's change to the jobs a filter
// selects: [Store.DeadRequeue], [JobOps.JobCancel], [JobOps.JobRunNow] (for
// store implementers). Store methods that need more than two values
// besides the context take one params value, as these do.
type OpParams struct {
	Filter JobFilter // the jobs to change (each method says which states it touches)
	Now    time.Time // when: requeued and run-now jobs become available then, cancelled ones finish then; not zero
	Entry  Attempt   // appended to each changed job's history
}

// PruneParams asks [JobOps.JobPrune] to delete old finished jobs.
type PruneParams struct {
	State  State     // the finished state to prune: succeeded, dead or cancelled
	Before time.Time // jobs that finished before this
	Limit  int       // at most this many, oldest first
}

// SearchParams asks [Inspector.JobSearch] for the jobs that hold a text.
type SearchParams struct {
	Filter JobFilter // selects, orders and limits the jobs, as [Store.JobList] does
	Text   string    // compared without regard to ASCII case; empty matches every job
	InArgs bool      // also search the arguments as stored (see JobSearch)
}

// Transition moves a running job, leased with LeaseToken, out of running
// ([Store.JobTransition]). The queue decides every field; the store writes
// them as given.
type Transition struct {
	ID         int64  // the job
	LeaseToken string // the token its claim (or rescue) gave
	// State is StateAvailable (retry, snooze, release), StateSucceeded or
	// StateDead.
	State State
	// Attempt is the attempt count to store: the job's Attempt, or one less
	// when the attempt is given back (snooze, release).
	Attempt int
	// AvailableAt is when the job may run again (StateAvailable only).
	AvailableAt time.Time
	// FinishedAt is set for StateSucceeded and StateDead, zero otherwise.
	FinishedAt time.Time
	// DeadReason is set for StateDead, "" otherwise.
	DeadReason string
	// Entry is appended to the job's history.
	Entry Attempt
	// ReplaceLast makes Entry replace the history's last entry instead of
	// following it (on an empty history, Entry is appended): the queue
	// sets it for a deferral that continues a run of deferrals, whose one
	// entry counts them ([Attempt].Count). A history past MaxHistory keeps
	// its cut marker as it is.
	ReplaceLast bool
	// Now is when the transition was decided. A store that notifies
	// ([Notifier]) wakes idle workers for a job available again by then
	// (StateAvailable with AvailableAt <= Now); zero wakes nobody (workers
	// poll as well). Stores do not read the time themselves.
	Now time.Time
}

// JobFilter selects jobs for [Store.JobList], [Store.DeadRequeue] and
// [Store.DeadDelete] (users of queue also pass it to
// queue.Client.Jobs, Cancel, RunNow and Delete, and filter the dead-letter
// with [queue.DeadFilter]). Zero fields do not filter; the zero JobFilter
// selects every job (every dead job for the Dead methods). Results are in
// ascending ID order.
type JobFilter struct {
	IDs   []int64 // only these IDs (nil: any; empty non-nil: none)
	State State   // only jobs in this state; the Dead methods always select dead jobs
	Kind  string  // only jobs of this kind
	Queue string  // only jobs of this queue
	// DeadReason selects dead jobs that gave up for this reason.
	DeadReason string
	// FinishedBefore selects jobs that finished strictly before it (dead
	// or succeeded "older than").
	FinishedBefore time.Time
	// AfterID selects jobs with an ID above it (paging).
	AfterID int64
	// BeforeID selects jobs with an ID below it (paging with Newest).
	BeforeID int64
	// AvailableAfter selects jobs due strictly after it: with State
	// available, the scheduled ones.
	AvailableAfter time.Time
	// AvailableBy selects jobs due at or before it: with State available,
	// the ones a worker may claim now.
	AvailableBy time.Time
	// Retried selects jobs that have made at least one attempt: with
	// State available, the ones waiting for a retry.
	Retried bool
	// Newest lists the newest jobs first (JobList only; default: oldest
	// first).
	Newest bool
	// Limit caps the number of jobs (0: no limit).
	Limit int
}

// QueueStats counts one queue's jobs by state.
type QueueStats struct {
	Queue     string // the queue's name
	Available int    // available now (AvailableAt <= Now)
	Scheduled int    // available later (AvailableAt > Now)
	Running   int    // leased to a worker
	Succeeded int    // done (until deleted)
	Dead      int    // in the dead-letter
	Cancelled int    // cancelled by an operator (until deleted)
}

// Stats summarises a store's jobs ([Store.Stats]).
type Stats struct {
	Queues []QueueStats // sorted by queue name; queues with no jobs are absent
	// Dead is the size of the dead-letter, all queues together.
	Dead int
	// OldestDead is the FinishedAt of the oldest dead job (zero when the
	// dead-letter is empty).
	OldestDead time.Time
}

// Store is where jobs live (users
// hand a store to [queue.NewClient] and [queue.NewWorker] and call neither). It stores and never decides: every retry,
// give-up and timing decision is taken by package queue and handed to the
// store as data. heed ships sqlitestore (embedded) and pgstore (PostgreSQL);
// queue/storetest is the conformance suite every Store must pass.
//
// Implementations must be safe for concurrent use by many goroutines (and,
// for shared databases, many processes). Every method honours ctx and
// returns ctx.Err() (possibly wrapped) when it ends first. Times passed in
// may carry any location; stores keep UTC with at least microsecond
// precision and return UTC times, truncated to what they keep.
type Store interface {
	JobOps   // cancel, run now, delete, prune (queue/ops.go)
	QueueOps // pause and resume queues (queue/pause.go)

	// JobInsert inserts a new job in StateAvailable with Attempt 0 and an
	// empty history, and returns it with inserted true. When in.UniqueKey
	// is not empty and a job with that key holds it (is in one of its own
	// UniqueStates: by default available or running), it inserts nothing
	// and returns that job with inserted false; this check and the insert
	// are atomic. A job that left its UniqueStates (succeeded or died, by
	// default) does not block a new one with the same key.
	JobInsert(ctx context.Context, in JobInsert) (job *Job, inserted bool, err error)

	// JobGet returns the job with this ID, or ErrNotFound.
	JobGet(ctx context.Context, id int64) (*Job, error)

	// JobList returns the jobs that match f, in ascending ID order.
	JobList(ctx context.Context, f JobFilter) ([]*Job, error)

	// JobClaim leases up to p.Limit due jobs of p.Queue (available with
	// AvailableAt <= p.Now; with p.FirstOnly, only those with Attempt 0), in the order (Priority, AvailableAt, ID), and
	// returns them (possibly none). Each claimed job becomes running with a
	// new random LeaseToken, LeaseUntil = p.LeaseUntil, Worker = p.Worker,
	// Attempt + 1, AttemptedAt = p.Now, and StartedAt = p.Now when it was
	// zero. A job is never claimed by two callers at once. A paused queue
	// ([QueueOps.QueuePause]) gives no jobs. A limited queue
	// ([QueueOps.QueueLimit]) gives at most [Limit.Claimable] jobs, with
	// the queue's running jobs counted and its rate bucket read and moved
	// ([Limit.Took]) atomically with the claim across every caller of the
	// database; jobs held back are not written.
	JobClaim(ctx context.Context, p ClaimParams) ([]*Job, error)

	// JobLeaseExtend moves the lease of the running job p.ID held with
	// p.LeaseToken to p.LeaseUntil. It returns ErrLeaseLost when no
	// running job has this ID and token, and an error matching ErrInvalid
	// when [LeaseParams.Validate] refuses p.
	JobLeaseExtend(ctx context.Context, p LeaseParams) error

	// JobTransition applies t to the running job t.ID held with
	// t.LeaseToken: it sets State, Attempt, AvailableAt, FinishedAt and
	// DeadReason as given, appends t.Entry to the history (or, with
	// t.ReplaceLast, puts it in place of the last entry), and clears the
	// lease (token and expiry; Worker is kept). It returns ErrLeaseLost,
	// changing nothing, when no running job has this ID and token.
	JobTransition(ctx context.Context, t Transition) error

	// JobRescue takes up to p.Limit running jobs whose LeaseUntil is before
	// p.Now, gives each a new random LeaseToken and LeaseUntil =
	// p.LeaseUntil, and returns them, still running, so that the caller can
	// record the lost attempt and decide (with JobTransition). Worker,
	// Attempt and AttemptedAt are left as the lost attempt had them.
	JobRescue(ctx context.Context, p RescueParams) ([]*Job, error)

	// DeadRequeue makes the dead jobs that match p.Filter available again
	// at p.Now: Attempt 0, StartedAt, FinishedAt and DeadReason cleared,
	// p.Entry appended to the history (which is otherwise kept). A dead job
	// whose UniqueKey is held by an available or running job is left dead.
	// It returns how many jobs it requeued.
	DeadRequeue(ctx context.Context, p OpParams) (int, error)

	// DeadDelete deletes the dead jobs that match f and returns how many.
	DeadDelete(ctx context.Context, f JobFilter) (int, error)

	// Stats counts jobs per queue and state, with now splitting available
	// from scheduled, and the dead-letter's size and oldest entry.
	Stats(ctx context.Context, now time.Time) (Stats, error)

	// Migrate applies the store's pending schema migrations. It returns an
	// error matching ErrSchemaTooNew when the database is newer than the
	// store knows.
	Migrate(ctx context.Context) error

	// Close releases the store's resources.
	Close() error
}

// Notifier is implemented by stores that can wake idle workers when a job
// is inserted (pgstore with LISTEN/NOTIFY, sqlitestore within its own
// process). A [queue.Worker] uses it when its store has it, and polls as well.
type Notifier interface {
	// JobNotify returns a channel that receives the queue name of inserted
	// (or requeued) jobs. Notifications may be dropped or coalesced when the
	// receiver is slow; the channel is closed when ctx ends or the store
	// stops listening.
	JobNotify(ctx context.Context) (<-chan string, error)
}

// TransitionBatcher is implemented by stores that can apply many
// transitions in one commit. A [queue.Worker] whose store has it finishes jobs
// that end at about the same time with one write instead of one each (jobs
// that end while a batch is being written form the next batch; no timer
// delays any of them).
type TransitionBatcher interface {
	// JobTransitions applies each of ts as JobTransition would, in one
	// transaction, and returns one error per transition, in order: nil, or
	// an error matching ErrLeaseLost or ErrInvalid, which leaves that job
	// unchanged and does not affect the others. err reports a failure of
	// the batch as a whole (the database, ctx); then none was applied.
	JobTransitions(ctx context.Context, ts []Transition) (errs []error, err error)
}
