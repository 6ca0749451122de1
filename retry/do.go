package retry

import (
	"context"
	"errors"
	"time"

	"github.com/heed-go/heed/breaker"
	"github.com/heed-go/heed/clock"
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
// policy's MaxDuration and the caller's deadline, whichever ends first.
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
// nothing on success.
func Do(ctx context.Context, p Policy, fn func(context.Context) error) error {
	return do(ctx, &p, fn)
}

// DoValue is [Do] for a function that returns a value. It returns the value
// of the successful attempt, or the zero value and the error.
func DoValue[T any](ctx context.Context, p Policy, fn func(context.Context) (T, error)) (T, error) {
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
	if p.AttemptTimeout == 0 && p.MaxDuration == 0 && p.Observe == nil && p.Budget == nil && p.Breaker == nil {
		// Fast path: nothing needs the clock before the first attempt.
		err := fn(ctx)
		if err == nil {
			return nil
		}
		return loop(ctx, p, fn, err)
	}
	return loop(ctx, p, fn, nil)
}

// loop runs the attempts. When first is not nil, the first attempt has
// already run (without a clock reading) and failed with it.
//
// The clock is read only when something needs the time: a deadline, a
// time budget, a retry budget, a breaker or an observer. A retry loop with
// none of them (immediate retries, say) reads no clock at all, and its
// decisions carry no times.
func loop(ctx context.Context, p *Policy, fn func(context.Context) error, first error) error {
	var (
		h     History
		buf   [traceInline]Decision // the trace lives on the stack until a give-up
		trace = buf[:0]
		timer clock.Timer
		now   time.Time
	)
	if err := p.Validate(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok {
		h.Deadline = d
	}
	h.UpstreamOwns = UpstreamOwns(ctx)
	timed := !h.Deadline.IsZero() || p.MaxDuration > 0 || p.Budget != nil || p.Breaker != nil || p.Observe != nil
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	if timed {
		now = clock.Now(p.Clock)
		h.Start = now
	}
	if first == nil && p.Budget != nil {
		p.Budget.RequestAt(now)
	}
	for {
		err := first
		var permit breaker.Permit
		attemptStart := now
		if first != nil {
			first = nil
		} else {
			if p.Breaker != nil {
				var berr error
				if permit, berr = p.Breaker.AllowAt(now); berr != nil {
					d := Decision{Action: GiveUp, Reason: ReasonBreakerOpen, Attempt: h.Attempts, Err: berr, At: now, Elapsed: now.Sub(h.Start)}
					if p.Observe != nil {
						p.Observe(ctx, Event{Decision: d})
					}
					last := berr
					if n := len(trace); n > 0 {
						last = trace[n-1].Err
					}
					return giveUp(append(trace, d), h.Attempts, last)
				}
			}
			err = attempt(ctx, p, fn, now, &h)
			if timed {
				now = clock.Now(p.Clock)
			}
		}
		h.Attempts++

		if err != nil && ctx.Err() != nil {
			// The caller gave up: nothing to decide, and the breaker
			// learns nothing about the dependency.
			if p.Breaker != nil {
				permit.RecordAt(now, breaker.Ignored)
			}
			return ctx.Err()
		}
		d := Decide(p, h, err, now, p.Rand)
		if p.Breaker != nil {
			o := breaker.Success
			if d.Outcome.Failure() {
				o = breaker.Failure
			} else if d.Outcome == OutcomePermanent {
				o = breaker.Ignored
			}
			permit.RecordAt(now, o)
		}
		if p.Observe != nil {
			p.Observe(ctx, Event{Decision: d, Duration: now.Sub(attemptStart)})
		}
		switch d.Action {
		case Done:
			return nil
		case GiveUp:
			return giveUp(append(trace, d), h.Attempts, err)
		}
		trace = append(trace, d)
		h.LastDelay = d.Delay
		h.TimedOut = false

		if d.Delay > 0 {
			if timer == nil {
				timer = clock.Or(p.Clock).NewTimer(d.Delay)
			} else {
				timer.Reset(d.Delay)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-timer.C():
			}
		} else if err := ctx.Err(); err != nil {
			return err
		}
		if timed {
			now = clock.Now(p.Clock)
		}
	}
}

// attempt runs fn once under the attempt's context and records in h whether
// the attempt ran out of its own timeout.
func attempt(ctx context.Context, p *Policy, fn func(context.Context) error, now time.Time, h *History) error {
	h.TimedOut = false
	if p.AttemptTimeout == 0 && p.MaxDuration == 0 {
		return fn(ctx)
	}
	timeout := p.AttemptTimeout
	if p.MaxDuration > 0 {
		if left := h.Start.Add(p.MaxDuration).Sub(now); timeout == 0 || left < timeout {
			timeout = max(left, 0)
		}
	}
	// The context package measures the timeout on its own clock.
	actx, cancel := context.WithTimeout(ctx, timeout)
	err := fn(actx)
	// An attempt cut off by its own timeout or by MaxDuration is a timeout
	// outcome; when MaxDuration cut it, Decide then gives up with "time
	// budget exhausted" because no time is left.
	h.TimedOut = err != nil && ctx.Err() == nil && errors.Is(actx.Err(), context.DeadlineExceeded)
	cancel()
	return err
}

// traceInline is how many decisions a call keeps without allocating: the
// default policy's three attempts fit.
const traceInline = 3

// exhausted holds an ExhaustedError and a short trace in one allocation.
type exhausted struct {
	e   ExhaustedError
	buf [traceInline]Decision
}

func giveUp(trace []Decision, attempts int, err error) error {
	last := trace[len(trace)-1]
	if len(trace) <= traceInline {
		x := &exhausted{e: ExhaustedError{Reason: last.Reason, Attempts: attempts, Err: err}}
		x.e.Trace = x.buf[:copy(x.buf[:], trace)]
		return &x.e
	}
	return &ExhaustedError{Reason: last.Reason, Attempts: attempts, Err: err, Trace: append([]Decision(nil), trace...)}
}
