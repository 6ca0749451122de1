package retry

import (
	"context"
	"errors"
	"github.com/heed-go/heed/deadline"
	"time"

	"github.com/heed-go/heed/clock"
	"github.com/heed-go/heed/internal/clockctx"
)

// Event is what Policy.Observe receives after every attempt: the decision
// taken and how long the attempt ran.
type Event struct {
	Decision
	// Duration is how long the attempt ran.
	Duration time.Duration
}

// Do calls fn until it succeeds or p gives up, and returns nil or the
// reason it stopped.
//
// Each attempt runs under a context limited to the per-attempt timeout, the
// policy's TimeBudget and the caller's deadline, whichever ends first.
// Between attempts Do waits as [Decide] says; the wait ends early when ctx
// ends.
//
// Under a context marked with [WithUpstreamOwner], Do makes one attempt:
// its caller owns the retries.
//
// When ctx ends, Do returns ctx.Err() unchanged. When p gives up, Do returns
// an [*ExhaustedError] that wraps fn's last error and matches
// [ErrExhausted]. Permanent errors give up too, after one attempt.
//
// Do is safe to call concurrently with the same policy. It allocates
// nothing on success. It panics if fn is nil: a programming error.
func Do(ctx context.Context, p Policy, fn func(context.Context) error) error {
	if fn == nil {
		panic("retry: Do with a nil function")
	}
	return do(ctx, &p, fn)
}

// DoValue is [Do] for a function that returns a value. It returns the value
// of the successful attempt, or the zero value and the error. It panics if
// fn is nil.
func DoValue[T any](ctx context.Context, p Policy, fn func(context.Context) (T, error)) (T, error) {
	if fn == nil {
		panic("retry: DoValue with a nil function")
	}
	var v T
	err := do(ctx, &p, func(ctx context.Context) error {
		var err error
		v, err = fn(ctx)
		return err
	})
	if err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}

func do(ctx context.Context, p *Policy, fn func(context.Context) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if p.AttemptTimeout <= 0 && p.TimeBudget <= 0 && p.Observe == nil && p.Budget == nil && p.Breaker == nil {
		// Fast path: nothing needs the clock before the first attempt.
		err := fn(ctx)
		if err == nil {
			return nil
		}
		return loop(ctx, p, fn, err)
	}
	return loop(ctx, p, fn, nil)
}

// loop runs the attempts through the call protocol ([Call]). When first
// is not nil, the first attempt has already run (without a clock reading,
// admission or limit: the policy has no breaker, budget or time limit to
// apply) and failed with it.
//
// The clock is read only when something needs the time: a deadline, a
// time budget, a retry budget, a breaker or an observer. A retry loop with
// none of them (immediate retries, say) reads no clock at all, and its
// decisions carry no times.
func loop(ctx context.Context, p *Policy, fn func(context.Context) error, first error) error {
	if err := p.Validate(); err != nil {
		return err
	}
	c := Call{Policy: *p}
	if d, ok := ctx.Deadline(); ok {
		c.History.Deadline = d
	}
	c.History.UpstreamOwns = deadline.UpstreamOwns(ctx)
	timed := !c.History.Deadline.IsZero() || p.TimeBudget > 0 || p.Budget != nil || p.Breaker != nil || p.Observe != nil
	var (
		timer clock.Timer
		now   time.Time
		last  error // the last attempt's error
	)
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	if timed {
		now = clock.Now(p.Clock)
	}
	for {
		err, timedOut := first, false
		attemptStart := now
		if first != nil {
			first = nil
		} else {
			lim, ok := c.Admit(now)
			if !ok {
				return refused(ctx, p, &c, last)
			}
			err, timedOut = attempt(ctx, fn, lim, now)
			if timed {
				now = clock.Now(p.Clock)
			}
		}
		if err != nil && ctx.Err() != nil {
			// The caller gave up: nothing to decide, and the breaker
			// learns nothing about the dependency.
			c.Abandon(now)
			return ctx.Err()
		}
		last = err
		d := c.End(now, Result{Err: err, TimedOut: timedOut})
		if p.Observe != nil {
			p.Observe(ctx, Event{Decision: d, Duration: now.Sub(attemptStart)})
		}
		switch d.Action {
		case Done:
			return nil
		case GiveUp:
			return c.Exhausted(err)
		}
		if err := clockctx.Sleep(ctx, p.Clock, &timer, d.Delay); err != nil {
			return err
		}
		if timed {
			now = clock.Now(p.Clock)
		}
	}
}

// refused ends a call that c did not admit to another attempt, and returns
// its error; last is the error of the last attempt.
func refused(ctx context.Context, p *Policy, c *Call, last error) error {
	d := c.Last()
	if d.Reason == ReasonDeadline && ctx.Err() != nil {
		return ctx.Err()
	}
	if p.Observe != nil {
		p.Observe(ctx, Event{Decision: d})
	}
	if last == nil {
		last = d.Err
	}
	return c.Exhausted(last)
}

// attempt runs fn once, under a context that ends at lim (the caller's
// deadline is ctx's own), and reports whether the attempt was cut off by
// the policy's own limit: its timeout or the time budget.
func attempt(ctx context.Context, fn func(context.Context) error, lim Limit, now time.Time) (error, bool) {
	if lim.At.IsZero() || lim.Reason == ReasonDeadline {
		return fn(ctx), false
	}
	// The context package measures the timeout on its own clock.
	actx, cancel := context.WithTimeout(ctx, max(lim.At.Sub(now), 0))
	err := fn(actx)
	timedOut := err != nil && ctx.Err() == nil && errors.Is(actx.Err(), context.DeadlineExceeded)
	cancel()
	return err, timedOut
}
