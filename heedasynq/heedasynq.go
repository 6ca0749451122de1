package heedasynq

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hibiken/asynq"

	"github.com/heed-go/heed/clock"
	"github.com/heed-go/heed/internal/clockctx"
	"github.com/heed-go/heed/retry"
)

// Policy is heed's retry policy for asynq tasks: a handler middleware and
// the server's RetryDelayFunc and IsFailure, made from one [retry.Policy].
// Install all three:
//
//	h, err := heedasynq.New(retry.Policy{Budget: b, Breaker: br}, redisOpt)
//	defer h.Close()
//	srv := asynq.NewServer(redisOpt, asynq.Config{
//		RetryDelayFunc: h.RetryDelay,
//		IsFailure:      h.IsFailure,
//		...
//	})
//	mux := asynq.NewServeMux()
//	mux.Use(h.Middleware)
//
// Make it with [New]; the zero value is not usable. It is safe for
// concurrent use by every handler of a server, and by several servers.
type Policy struct {
	p     retry.Policy
	tasks *asynq.Inspector // reads a task's record back; nil without Redis

	mu      sync.Mutex
	records map[string]record // by task ID: tasks this process retried or deferred
}

// maxRecords bounds the records a process keeps for tasks it retried or
// deferred; past it the oldest are forgotten (and read back from Redis).
const maxRecords = 100_000

// New returns the Policy for p, after p.Validate. The zero fields of p take
// retry's defaults (3 attempts, 100 ms to 5 s of backoff with full jitter,
// no time budget); background tasks usually want more patience, such as
//
//	retry.Policy{Attempts: 10, Backoff: backoff.Schedule{Base: 2 * time.Second, Cap: 5 * time.Minute},
//		TimeBudget: 24 * time.Hour, AttemptTimeout: time.Minute}
//
// (heed's own job queue's defaults). Keep asynq's MaxRetry (25 by default,
// per task) at or above p.Attempts - 1: asynq archives a task at its
// MaxRetry whatever heed decides.
//
// redis, the server's connection (nil for none), is where the middleware
// reads back heed's record of a task whose last attempt another process
// made; Close releases it. Without it, such a task's time budget counts
// from the attempt this process sees first.
func New(p retry.Policy, redis asynq.RedisConnOpt) (*Policy, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("heedasynq: %w", err)
	}
	h := &Policy{p: p, records: map[string]record{}}
	if redis != nil {
		h.tasks = asynq.NewInspector(redis)
	}
	return h, nil
}

// Close releases the connection New opened for reading records back.
func (h *Policy) Close() error {
	if h.tasks == nil {
		return nil
	}
	return h.tasks.Close()
}

// decided is the error the middleware returns for a failed attempt: the
// handler's error with heed's decision, which RetryDelay and IsFailure
// read. asynq stores its text as the task's last error.
type decided struct {
	err error
	d   retry.Decision
}

func (e *decided) Error() string {
	var reason string
	switch e.d.Action {
	case retry.Retry, retry.Defer:
		reason = fmt.Sprintf("%s in %v, %s", e.d.Action.Key(), e.d.Delay, e.d.Reason.Key())
	default:
		reason = fmt.Sprintf("%s, %s", e.d.Action.Key(), e.d.Reason.Key())
	}
	if e.err == nil {
		return "heedasynq: " + reason
	}
	return e.err.Error() + " (heed: " + reason + ")"
}

func (e *decided) Unwrap() []error {
	errs := make([]error, 0, 2)
	if e.err != nil {
		errs = append(errs, e.err)
	}
	if e.d.Action == retry.GiveUp {
		errs = append(errs, asynq.SkipRetry) // archived now
	}
	return errs
}

// errGaveUp is the error of an attempt that never started because the
// task's time budget ended first.
var errGaveUp = errors.New("heedasynq: the task's time budget ended before the attempt could start")

// Middleware is asynq's handler middleware: it runs one attempt of the task
// through heed's call protocol ([retry.Call], as a durable call) and turns
// heed's decision into asynq's terms. See the package documentation.
func (h *Policy) Middleware(next asynq.Handler) asynq.Handler {
	return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
		return h.process(ctx, t, next)
	})
}

func (h *Policy) process(ctx context.Context, t *asynq.Task, next asynq.Handler) error {
	id, _ := asynq.GetTaskID(ctx)
	retried, _ := asynq.GetRetryCount(ctx)
	rec, had := h.record(ctx, id, retried)
	c := retry.Call{Policy: h.p, Durable: true, History: retry.History{Attempts: retried, Start: rec.Start}}
	if rec.Action == actionRetry {
		c.History.LastDelay, _ = time.ParseDuration(rec.Delay)
	}
	start := h.now()
	lim, ok := c.Admit(start)
	if !ok {
		// Deferred by the breaker or the retry budget, or out of time:
		// the handler does not run.
		d := c.Last()
		h.keep(ctx, t, id, d, &c.History, 0)
		if d.Action == retry.Defer {
			return &decided{d.Err, d}
		}
		return &decided{errGaveUp, d}
	}

	actx, cancel := clockctx.WithDeadline(ctx, h.p.Clock, lim.At, start)
	err, panicked, pv := run(actx, t, next)
	timeout := err != nil && ctx.Err() == nil && (errors.Is(context.Cause(actx), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded))
	cancel()
	end := h.now()
	if ctx.Err() != nil && err != nil {
		// asynq's own deadline passed or the server is stopping: asynq
		// decides what follows; the breaker learns nothing.
		c.Abandon(end)
		return err
	}
	if panicked {
		err = fmt.Errorf("heedasynq: handler panicked: %v", pv)
	}
	d := c.End(end, retry.Result{Err: err, TimedOut: timeout})
	if max, ok := asynq.GetMaxRetry(ctx); ok && d.Action == retry.Retry && retried >= max {
		// asynq's own limit comes first: it archives the task.
		d.Action, d.Reason, d.Delay, d.At = retry.GiveUp, retry.ReasonAttempts, 0, end
	}
	if d.Action != retry.Done || had {
		h.keep(ctx, t, id, d, &c.History, end.Sub(start))
	} else if h.p.Observe != nil {
		h.p.Observe(ctx, retry.Event{Decision: d, Duration: end.Sub(start)})
	}
	if d.Action == retry.Done {
		return nil
	}
	return &decided{err, d}
}

// run calls next, catching a panic.
func run(ctx context.Context, t *asynq.Task, next asynq.Handler) (err error, panicked bool, v any) {
	defer func() {
		if r := recover(); r != nil {
			panicked, v = true, r
		}
	}()
	return next.ProcessTask(ctx, t), false, nil
}

// RetryDelay is asynq's RetryDelayFunc: the wait heed's middleware decided
// for the task's next attempt, rounded up to where asynq can schedule it
// (whole seconds). For an error that did not come through the middleware (a
// handler without it, asynq's own deadline), it decides as for a transient
// error: heed's backoff and jitter after n retries.
func (h *Policy) RetryDelay(n int, err error, _ *asynq.Task) time.Duration {
	if e, ok := errors.AsType[*decided](err); ok {
		return roundUp(e.d.Delay, time.Now())
	}
	q := h.p
	q.Budget, q.Breaker = nil, nil // the middleware's, not a second count
	d := retry.Decide(&q, retry.History{Attempts: n + 1}, errUnclassified, time.Time{}, q.Rand)
	delay := d.Delay
	if d.Action != retry.Retry {
		delay = q.Backoff.Next(n+1, 0, q.Rand)
	}
	return roundUp(delay, time.Now())
}

// errUnclassified stands for an error RetryDelay does not know.
var errUnclassified = retry.Transient(errors.New("heedasynq: task failed"))

// roundUp returns the wait, from now, to the first whole second at or after
// now + d: asynq stores a retry's time in whole seconds, rounded down,
// which would run it up to a second before heed said.
func roundUp(d time.Duration, now time.Time) time.Duration {
	at := now.Add(d)
	if t := at.Truncate(time.Second); !t.Equal(at) {
		at = t.Add(time.Second)
	}
	return at.Sub(now)
}

// IsFailure is asynq's IsFailure: false for a task heed deferred (an open
// breaker, an empty retry budget), which asynq then retries without
// counting a retry; true for every other error. A server with an IsFailure
// of its own calls this one first.
func (h *Policy) IsFailure(err error) bool {
	e, ok := errors.AsType[*decided](err)
	return !ok || e.d.Action != retry.Defer
}

func (h *Policy) now() time.Time { return clock.Now(h.p.Clock) }
