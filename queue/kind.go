package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/heed-go/heed/queue/internal/check"
	"github.com/heed-go/heed/queue/jobstore"
	"github.com/heed-go/heed/retry"
)

// JobArgs is implemented by the argument types of typed kinds: the kind
// comes from the type, so [Client.EnqueueArgs] and [HandleArgs] cannot
// disagree about it (a typo is a compile error, not a job retried for
// hours). Kind must return a constant, and must work on the zero value
// (HandleArgs calls it on one): give it a value receiver on a struct type.
//
//	type EmailArgs struct{ To string }
//
//	func (EmailArgs) Kind() string { return "email" }
//
// Plain string kinds ([Client.Enqueue], [Handle]) remain for programs that
// route by name, such as the heed command.
type JobArgs interface {
	Kind() string
}

// EnqueueArgs enqueues a job of the kind args names (args.Kind()), with
// args marshalled with encoding/json: [Client.Enqueue] for typed kinds.
func (c *Client) EnqueueArgs(ctx context.Context, args JobArgs, opts EnqueueOptions) (job *Job, inserted bool, err error) {
	if args == nil {
		return nil, false, &InputError{Field: "args", Reason: "is nil"}
	}
	return c.Enqueue(ctx, args.Kind(), args, opts)
}

// HandleArgs registers fn for the kind T names (the zero T's Kind()), as
// [Handle] does for a string kind: the job's arguments are decoded into a
// T. It panics as Handle does.
func HandleArgs[T JobArgs](w *Worker, fn func(ctx context.Context, job *Job, args T) error) {
	Handle(w, kindOf[T](), fn)
}

// kindOf returns the kind the zero T names, panicking with a clear message
// when Kind fails on it (a pointer type whose method dereferences).
func kindOf[T JobArgs]() (kind string) {
	var zero T
	defer func() {
		if r := recover(); r != nil {
			panic(fmt.Sprintf("queue: HandleArgs: %T.Kind() panicked on the zero value (%v): give Kind a value receiver on a struct type", zero, r))
		}
	}()
	return zero.Kind()
}

// HandlerFunc runs one attempt of a job: what [Middleware] wraps. Its
// error steers the job as a handler's does (see [Handle]).
type HandlerFunc func(ctx context.Context, job *Job) error

// Middleware wraps a handler: it may add context values (a logger, a
// tenant), open a tracing span around next, time it, or translate errors.
// It runs on the job's goroutine, inside the attempt's timeout, and a panic
// in it is recovered like the handler's. Set it in WorkerConfig.Middleware.
//
//	func traced(next queue.HandlerFunc) queue.HandlerFunc {
//		return func(ctx context.Context, job *queue.Job) error {
//			ctx, span := tracer.Start(ctx, "job "+job.Kind)
//			defer span.End()
//			return next(ctx, job)
//		}
//	}
type Middleware func(next HandlerFunc) HandlerFunc

// wrap applies the worker's middleware to h, the first the outermost.
func (w *Worker) wrap(h HandlerFunc) HandlerFunc {
	for i := len(w.cfg.Middleware) - 1; i >= 0; i-- {
		h = w.cfg.Middleware[i](h)
	}
	return h
}

// KindPolicy is the policy of one kind of job (WorkerConfig.Kinds),
// applied over the worker's Policy; each job's own overrides
// (EnqueueOptions.MaxAttempts and Policy) apply over it. Zero fields keep
// the worker's values.
type KindPolicy struct {
	// MaxAttempts replaces the worker's attempt limit when positive;
	// a negative number (retry.Unlimited) removes it.
	MaxAttempts int
	// Policy replaces the worker's backoff, time budget and attempt
	// timeout where set.
	Policy JobPolicy
	// Retryable, when set, classifies this kind's errors instead of the
	// worker's Policy.Retryable.
	Retryable func(error) bool
}

func checkKinds(kinds map[string]KindPolicy) error {
	for k, p := range kinds {
		if err := check.Name("WorkerConfig.Kinds", k, jobstore.MaxName); err != nil {
			return err
		}
		if err := check.Policy("WorkerConfig.Kinds["+k+"].Policy", p.Policy.Backoff); err != nil {
			return err
		}
	}
	return nil
}

// policyFor returns the policy of job: the worker's, with its kind's
// policy and then its own overrides applied.
func (w *Worker) policyFor(job *Job) retry.Policy {
	p := w.cfg.Policy
	if k, ok := w.cfg.Kinds[job.Kind]; ok {
		p = effective(p, &Job{MaxAttempts: k.MaxAttempts, Policy: k.Policy})
		if k.Retryable != nil {
			p.Retryable = k.Retryable
		}
	}
	return effective(p, job)
}

// unknownKind sends job to the dead-letter at once when w has no handler
// for its kind, and reports whether it did.
func (w *Worker) unknownKind(job *Job) bool {
	w.mu.Lock()
	h := w.handlers[job.Kind]
	w.mu.Unlock()
	if h != nil {
		return false
	}
	now := w.now()
	err := retry.Permanent(fmt.Errorf("queue: no handler for kind %q on worker %s", job.Kind, w.cfg.ID))
	t, d := decideUnknownKind(job, err, w.cfg.ID, now)
	w.finish(job, t, d, 0)
	return true
}

// decideUnknownKind is the transition of a job whose kind has no handler:
// dead with reason jobstore.ReasonUnknownKind, the attempt counted.
func decideUnknownKind(job *Job, err error, worker string, now time.Time) (jobstore.Transition, retry.Decision) {
	e := Attempt{Attempt: job.Attempt, Worker: worker, StartedAt: now, FinishedAt: now, Outcome: retry.OutcomePermanent.Key(),
		Error: errorText(err), Action: retry.GiveUp.Key(), Reason: jobstore.ReasonUnknownKind}
	return jobstore.Transition{ID: job.ID, LeaseToken: job.LeaseToken, State: StateDead, Attempt: job.Attempt, FinishedAt: now,
			DeadReason: jobstore.ReasonUnknownKind, Entry: e, Now: now},
		retry.Decision{Action: retry.GiveUp, Reason: retry.ReasonPermanent, Attempt: job.Attempt, Err: err, At: now}
}
