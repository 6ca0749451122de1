package heedriver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/heed-go/heed/clock"
	"github.com/heed-go/heed/internal/clockctx"
	"github.com/heed-go/heed/retry"
)

// Policy is heed's retry policy for River jobs: River's retry policy
// (Config.RetryPolicy) and a worker middleware (Config.Middleware) made
// from one [retry.Policy]. Install it in both places:
//
//	h, err := heedriver.New(retry.Policy{Budget: b, Breaker: br})
//	config := &river.Config{RetryPolicy: h, Middleware: []rivertype.Middleware{h}, ...}
//
// Make it with [New]; the zero value is not usable. It is safe for
// concurrent use by every worker of a client, and by several clients.
type Policy struct {
	river.MiddlewareDefaults
	p retry.Policy
}

// New returns the Policy for p, after p.Validate. The zero fields of p take
// retry's defaults (3 attempts, 100 ms to 5 s of backoff with full
// jitter, no time budget); a River job usually wants more patience, such as
//
//	retry.Policy{Attempts: 10, Backoff: backoff.Schedule{Base: 2 * time.Second, Cap: 5 * time.Minute},
//		TimeBudget: 24 * time.Hour, AttemptTimeout: time.Minute}
//
// (heed's own job queue's defaults). Keep River's MaxAttempts (25 by
// default, per job) at or above p.Attempts: River discards a job at its
// MaxAttempts whatever heed decides.
func New(p retry.Policy) (*Policy, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("heedriver: %w", err)
	}
	return &Policy{p: p}, nil
}

// errGaveUp is the error recorded for an attempt that never started because
// the job's time budget ended first.
var errGaveUp = errors.New("heedriver: the job's time budget ended before the attempt could start")

// Work is River's worker middleware: it runs one attempt of job through
// heed's call protocol ([retry.Call], as a durable call) and turns heed's
// decision into River's terms. See the package documentation.
func (p *Policy) Work(ctx context.Context, job *rivertype.JobRow, doInner func(context.Context) error) error {
	st := readState(job.Metadata)
	c := retry.Call{Policy: p.p, Durable: true, History: st.history(job)}
	start := p.now()
	lim, ok := c.Admit(start)
	if !ok {
		// Deferred by the breaker or the retry budget, or out of time:
		// the worker does not run.
		d := c.Last()
		st.record(ctx, job, d, &c.History, p.p.Observe, 0)
		if d.Action == retry.Defer {
			return river.JobSnooze(d.Delay)
		}
		job.MaxAttempts = job.Attempt // River discards the job now
		return errGaveUp
	}

	actx, cancel := clockctx.WithDeadline(ctx, p.p.Clock, lim.At, start)
	err, panicked, pv := run(actx, doInner)
	timeout := err != nil && ctx.Err() == nil && (errors.Is(context.Cause(actx), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded))
	cancel()
	end := p.now()
	if ctx.Err() != nil && err != nil {
		// River is stopping or the job was cancelled remotely: River
		// decides what follows; the breaker learns nothing.
		c.Abandon(end)
		return err
	}
	if panicked {
		err = fmt.Errorf("heedriver: worker panicked: %v", pv)
	}
	d := c.End(end, retry.Result{Err: err, TimedOut: timeout})
	if d.Action == retry.Retry && job.Attempt >= job.MaxAttempts && d.Reason != retry.ReasonPushback {
		// River's own limit comes first: it discards the job.
		d.Action, d.Reason, d.Delay, d.At = retry.GiveUp, retry.ReasonAttempts, 0, end
	}
	if d.Action != retry.Done || st.had {
		st.record(ctx, job, d, &c.History, p.p.Observe, end.Sub(start))
	} else if p.p.Observe != nil {
		p.p.Observe(ctx, retry.Event{Decision: d, Duration: end.Sub(start)})
	}

	switch d.Action {
	case retry.Done:
		return nil
	case retry.Retry:
		if d.Reason == retry.ReasonPushback && !panicked {
			// The server's wait: River gives the attempt back, heed
			// counts it (state.Pushbacks).
			return river.JobSnooze(d.Delay)
		}
	default:
		switch d.Reason {
		case retry.ReasonPermanent, retry.ReasonServerRefused, retry.ReasonNotRepeatable:
			if !panicked {
				return river.JobCancel(err)
			}
		}
		// A give-up that is not the job's fault (attempts, time budget):
		// River's dead letter is the discarded state, which River
		// reaches only at MaxAttempts.
		job.MaxAttempts = job.Attempt
	}
	if panicked {
		panic(pv) // River keeps the trace; state.At is the retry's time
	}
	return err
}

// run calls doInner, catching a panic.
func run(ctx context.Context, doInner func(context.Context) error) (err error, panicked bool, v any) {
	defer func() {
		if r := recover(); r != nil {
			panicked, v = true, r
		}
	}()
	return doInner(ctx), false, nil
}

// NextRetry is River's retry policy: the time heed's middleware decided for
// the job's next attempt. For a job that failed without the middleware
// (a worker without it, a job that could not be decoded), it decides as
// for a transient error: heed's backoff and jitter after the job's
// attempts, within its time budget. River cannot end a job from its retry
// policy; when heed would give up there, the job waits the backoff and
// River goes on until its MaxAttempts.
func (p *Policy) NextRetry(job *rivertype.JobRow) time.Time {
	st := readState(job.Metadata)
	if st.Action == actionRetry && st.Attempt == st.heedAttempt(job) && !st.At.IsZero() {
		return st.At
	}
	q := p.p
	q.Budget, q.Breaker = nil, nil // the middleware's, not a second count
	h := st.history(job)
	h.Attempts++ // the attempt that failed
	now := p.now()
	if h.Start.IsZero() {
		h.Start = now
	}
	d := retry.Decide(&q, h, errUnclassified, now, q.Rand)
	if d.Action == retry.Retry {
		return d.At
	}
	return now.Add(q.Backoff.Next(h.Attempts, h.LastDelay, q.Rand))
}

// errUnclassified stands for an error the retry policy does not see.
var errUnclassified = retry.Transient(errors.New("heedriver: job failed"))

func (p *Policy) now() time.Time { return clock.Now(p.p.Clock) }
