package queue

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/heed-go/heed/internal/redact"
	"github.com/heed-go/heed/queue/internal/check"
	"github.com/heed-go/heed/queue/jobstore"
	"github.com/heed-go/heed/retry"
)

// DefaultQueue is the queue of jobs enqueued without one.
const DefaultQueue = "default"

// EnqueueOptions are the optional settings of a new job. The zero value
// enqueues on DefaultQueue, to run now, at priority 0, with the worker's
// policy and no unique key.
type EnqueueOptions struct {
	// Queue is the queue's name (default DefaultQueue).
	Queue string
	// At is when the job may first run (default: now). Set At or In, not
	// both.
	At time.Time
	// In delays the first run by this much (must not be negative).
	In time.Duration
	// Priority orders due jobs of one queue: lower runs first (default 0).
	Priority int
	// MaxAttempts overrides the worker's attempt limit when positive;
	// a negative number (retry.Unlimited) removes it, and is stored as
	// retry.Unlimited; 0 keeps the worker's.
	MaxAttempts int
	// Policy overrides the worker's backoff, time budget and attempt
	// timeout for this job.
	Policy JobPolicy
	// UniqueKey, when set, makes the enqueue return the existing job with
	// this key while it is available or running (or in Unique.ByState),
	// instead of a duplicate.
	UniqueKey string
	// Unique derives the unique key from the job itself (kind, args,
	// queue, period) and sets the states in which it is held; see
	// [UniqueOptions]. ByArgs, ByQueue and ByPeriod cannot be combined
	// with UniqueKey; ByState can.
	Unique UniqueOptions
}

// NewJobInsert validates a new job and returns the row to insert, with now
// as its creation time. Most callers want [Client.Enqueue]; stores that
// offer a transactional enqueue (pgstore's EnqueueTx) use it so that their
// jobs are validated exactly as the Client's are.
//
// args is taken as [Client.Enqueue] takes it: marshalled with
// encoding/json, a json.RawMessage or []byte as is, nil as {}. It must be
// valid JSON (an empty args is taken as {}) of at most
// [jobstore.MaxArgs] bytes; kind and queue names at most [jobstore.MaxName] bytes of UTF-8
// without control characters. Errors match ErrInvalid and name the bad
// field.
func NewJobInsert(kind string, jobArgs any, opts EnqueueOptions, now time.Time) (jobstore.JobInsert, error) {
	args, err := encodeArgs(jobArgs)
	if err != nil {
		return jobstore.JobInsert{}, err
	}
	if err := check.Name("kind", kind, jobstore.MaxName); err != nil {
		return jobstore.JobInsert{}, err
	}
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if err := check.Args("args", len(args), jobstore.MaxArgs); err != nil {
		return jobstore.JobInsert{}, err
	}
	if !json.Valid(args) {
		return jobstore.JobInsert{}, &InputError{Field: "args", Reason: fmt.Sprintf("is not valid JSON: %.40q", redact.Text(string(args)))}
	}
	q := opts.Queue
	if q == "" {
		q = DefaultQueue
	}
	if err := check.Name("EnqueueOptions.Queue", q, jobstore.MaxName); err != nil {
		return jobstore.JobInsert{}, err
	}
	if err := check.OptionalName("EnqueueOptions.UniqueKey", opts.UniqueKey, jobstore.MaxUniqueKey); err != nil {
		return jobstore.JobInsert{}, err
	}
	if opts.In < 0 {
		return jobstore.JobInsert{}, &InputError{Field: "EnqueueOptions.In", Reason: fmt.Sprintf("is %v, must not be negative", opts.In)}
	}
	if opts.In != 0 && !opts.At.IsZero() {
		return jobstore.JobInsert{}, &InputError{Field: "EnqueueOptions.At", Reason: "and EnqueueOptions.In are both set; set one"}
	}
	if err := check.Policy("EnqueueOptions.Policy", opts.Policy.Backoff); err != nil {
		return jobstore.JobInsert{}, err
	}
	now = now.UTC()
	at := now.Add(opts.In)
	if !opts.At.IsZero() {
		at = opts.At.UTC()
	}
	key, states, err := uniqueOf(opts, kind, q, args, at)
	if err != nil {
		return jobstore.JobInsert{}, err
	}
	return jobstore.JobInsert{
		Kind:         kind,
		Queue:        q,
		Args:         args,
		Priority:     opts.Priority,
		MaxAttempts:  max(opts.MaxAttempts, retry.Unlimited),
		Policy:       opts.Policy,
		AvailableAt:  at,
		CreatedAt:    now,
		UniqueKey:    key,
		UniqueStates: states,
	}, nil
}
