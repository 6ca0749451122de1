package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/heed-go/heed/clock"
	"github.com/heed-go/heed/queue/jobstore"
)

// ClientConfig configures a [Client]. The zero value is ready to use.
type ClientConfig struct {
	// Observe, when set, is called after every enqueue that inserted a job
	// (EventEnqueued). It must not block.
	Observe func(ctx context.Context, e Event)
	// Clock is the time source (default: real time).
	Clock clock.Clock
	// Operator names who requeues dead jobs in their history (default
	// "operator").
	Operator string
}

// Client enqueues jobs and manages them: read, list, and the dead-letter
// (list, requeue, delete, purge). It holds no goroutines and no state but
// its store, and is safe for concurrent use. Make one with [NewClient].
type Client struct {
	store jobstore.Store
	cfg   ClientConfig
}

// NewClient returns a Client over store. It panics if store is nil (a
// programming error; NewWorker returns an error for it instead).
func NewClient(store jobstore.Store, cfg ClientConfig) *Client {
	if store == nil {
		panic("queue: NewClient with a nil store")
	}
	if cfg.Operator == "" {
		cfg.Operator = "operator"
	}
	return &Client{store: store, cfg: cfg}
}

// Store returns the client's store.
func (c *Client) Store() jobstore.Store { return c.store }

// Enqueue adds a job of kind with args, which is marshalled with
// encoding/json (a json.RawMessage or []byte is used as is, and must be
// valid JSON; nil is {}). With opts.UniqueKey set and a job with that key
// available or running, it returns that job and inserted false.
//
// Bad input (an empty kind, args that do not marshal or are not JSON, a
// negative delay, ...) returns an error matching ErrInvalid that names the
// field, and nothing is written.
func (c *Client) Enqueue(ctx context.Context, kind string, args any, opts EnqueueOptions) (job *Job, inserted bool, err error) {
	in, err := NewJobInsert(kind, args, opts, clock.Now(c.cfg.Clock))
	if err != nil {
		return nil, false, err
	}
	job, inserted, err = c.store.JobInsert(ctx, in)
	if err != nil {
		return nil, false, err
	}
	if inserted && c.cfg.Observe != nil {
		c.cfg.Observe(ctx, Event{Kind: EventEnqueued, Job: job})
	}
	return job, inserted, nil
}

// encodeArgs returns a job's args as [Client.Enqueue] stores them: args
// marshalled with encoding/json, a json.RawMessage or []byte as is (it must
// be valid JSON; [NewJobInsert] checks), nil as {}. Args that do not
// marshal return an error matching ErrInvalid.
func encodeArgs(args any) (json.RawMessage, error) {
	switch a := args.(type) {
	case nil:
		return json.RawMessage("{}"), nil
	case json.RawMessage:
		return a, nil
	case []byte:
		return json.RawMessage(a), nil
	}
	b, err := json.Marshal(args)
	if err != nil {
		return nil, &InputError{Field: "args", Reason: fmt.Sprintf("do not marshal to JSON: %v", err)}
	}
	return b, nil
}

// Job returns the job with this ID, with its full history, or an error
// matching ErrNotFound.
func (c *Client) Job(ctx context.Context, id int64) (*Job, error) {
	return c.store.JobGet(ctx, id)
}

// Jobs returns the jobs that match f, in ascending ID order.
func (c *Client) Jobs(ctx context.Context, f JobFilter) ([]*Job, error) {
	return c.store.JobList(ctx, f)
}

// DeadFilter selects dead jobs. The zero value selects every dead job.
type DeadFilter struct {
	IDs    []int64 // only these IDs (nil: any)
	Kind   string  // only jobs of this kind
	Queue  string  // only jobs of this queue
	Reason string  // the dead reason, such as "permanent" or "time_budget"
	// OlderThan selects jobs that died more than this long ago (must not
	// be negative).
	OlderThan time.Duration
	AfterID   int64 // paging: IDs above it
	Limit     int   // 0: no limit
}

func (c *Client) deadFilter(f DeadFilter) (JobFilter, error) {
	if f.OlderThan < 0 {
		return JobFilter{}, &InputError{Field: "DeadFilter.OlderThan", Reason: fmt.Sprintf("is %v, must not be negative", f.OlderThan)}
	}
	jf := JobFilter{IDs: f.IDs, State: StateDead, Kind: f.Kind, Queue: f.Queue, DeadReason: f.Reason,
		AfterID: f.AfterID, Limit: f.Limit}
	if f.OlderThan > 0 {
		jf.FinishedBefore = clock.Now(c.cfg.Clock).Add(-f.OlderThan)
	}
	return jf, jf.Validate()
}

// Dead lists the dead-letter: the dead jobs that match f, with their
// histories, in ascending ID order.
func (c *Client) Dead(ctx context.Context, f DeadFilter) ([]*Job, error) {
	jf, err := c.deadFilter(f)
	if err != nil {
		return nil, err
	}
	return c.store.JobList(ctx, jf)
}

// Requeue makes the dead jobs that match f available now, with their
// attempts and time budget reset and their history kept (a "requeued" entry
// is added). The zero DeadFilter requeues every dead job. A job whose unique
// key is held by a live job stays dead. It returns how many were requeued.
func (c *Client) Requeue(ctx context.Context, f DeadFilter) (int, error) {
	jf, err := c.deadFilter(f)
	if err != nil {
		return 0, err
	}
	now := clock.Now(c.cfg.Clock).UTC()
	return c.store.DeadRequeue(ctx, jobstore.OpParams{Filter: jf, Now: now, Entry: Attempt{Worker: c.cfg.Operator, StartedAt: now, FinishedAt: now,
		Outcome: jobstore.OutcomeRequeued, Action: jobstore.ActionRequeue}})
}

// DeleteDead deletes the dead jobs that match f and returns how many. The
// zero DeadFilter deletes every dead job; DeadFilter{OlderThan: age}
// purges those that died more than age ago. Workers also delete dead jobs
// past WorkerConfig.RetainDead (30 days by default; negative keeps them).
func (c *Client) DeleteDead(ctx context.Context, f DeadFilter) (int, error) {
	jf, err := c.deadFilter(f)
	if err != nil {
		return 0, err
	}
	return c.store.DeadDelete(ctx, jf)
}

// Stats returns the job counts per queue and state, and the dead-letter's
// size and oldest entry.
func (c *Client) Stats(ctx context.Context) (Stats, error) {
	return c.store.Stats(ctx, clock.Now(c.cfg.Clock))
}
