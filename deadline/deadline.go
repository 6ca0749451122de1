// Package deadline works with the time left before a context's deadline:
// how much remains, a per-step context bounded by min(step budget,
// remaining), a fail-fast check before starting work that cannot finish in
// time, and the Timeout-Remaining wire header that carries the time left from
// one hop to the next.
//
// Most callers want [Step] to bound one attempt and [Check] to refuse to
// start an attempt that cannot finish before the deadline. [Middleware] is
// the server side of heed's HTTP wire format, which retryhttp's client
// sends: it adopts an incoming Timeout-Remaining header as the request's
// deadline (clamped to the server's own limit, from trusted peers only) and
// reads the Retry-Attempt header of heed's retry-ownership protocol.
// retryhttp.Handler wraps it with ownership marking on.
//
// The headers, for peers that do not run heed (docs/http.md has the full
// grammar):
//
//   - Timeout-Remaining: the time left before the caller's deadline, 1 to
//     8 digits and a unit (h, m, s, ms, us, ns), such as "3200ms";
//   - Retry-Attempt: N, 1 to 9999, sent by a client that will retry the
//     request itself (or passes on a claim from above): the server's own
//     heed clients then make one attempt (see [WithUpstreamOwner]);
//   - Upstream-Breaker: open, on a 5xx response, when the server's own
//     dependency is refused by an open breaker ([MarkUpstreamOpen]): a heed
//     client neither retries it nor counts it against the server.
//
// Following heed's convention, functions that read the clock have a pure
// variant taking the current time as an argument ([RemainingAt],
// [Plan.StepAt]); the plain forms are shorthand for calling them with
// time.Now(). [Check] is [Remaining] compared with the time a step needs:
// code with a clock of its own compares [RemainingAt] itself.
//
// Everything in this package is safe for concurrent use and starts no
// goroutines.
package deadline

import (
	"context"
	"errors"
	"time"
)

// ErrTooClose is the sentinel matched (with [errors.Is]) by the errors of
// [Check] and [Plan.Step] when the deadline is too close for the work to
// finish; their messages say how much time was left and needed.
var ErrTooClose = errors.New("deadline: not enough time left")

// tooCloseError reports that a context's deadline is too close for a step
// that needs Need to run: only Remaining is left. [Check] returns it; it
// matches [ErrTooClose] with [errors.Is]. It is immutable once made and safe
// to share between goroutines.
type tooCloseError struct {
	// Remaining is the time that was left before the deadline, > 0.
	Remaining time.Duration
	// Need is the time the step asked for, > Remaining.
	Need time.Duration
}

// Error returns a message such as "deadline: 40ms left, step needs 200ms".
func (e *tooCloseError) Error() string {
	return "deadline: " + e.Remaining.String() + " left, step needs " + e.Need.String()
}

// Is reports whether target is [ErrTooClose], so that
// errors.Is(err, ErrTooClose) holds for every *tooCloseError.
func (e *tooCloseError) Is(target error) bool { return target == ErrTooClose }

// Remaining returns the time left before ctx's deadline and true, or 0 and
// false when ctx has no deadline. A deadline that has already passed gives
// 0 and true, never a negative duration.
//
// Remaining is shorthand for RemainingAt(ctx, time.Now()). It does not look
// at whether ctx was canceled; use ctx.Err or [Check] for that.
func Remaining(ctx context.Context) (time.Duration, bool) {
	return RemainingAt(ctx, time.Now())
}

// RemainingAt is [Remaining] with the current time passed in: it returns
// max(0, deadline−now) and true, or 0 and false when ctx has no deadline.
// It reads no clock.
func RemainingAt(ctx context.Context, now time.Time) (time.Duration, bool) {
	dl, ok := ctx.Deadline()
	if !ok {
		return 0, false
	}
	left := dl.Sub(now) // saturates instead of overflowing
	if left < 0 {
		left = 0
	}
	return left, true
}

// Step returns a context for one step (one attempt, one call) of work under
// ctx. Its deadline is min(now+budget, ctx's deadline): the step budget
// bounds the step, and the parent's deadline still bounds everything.
//
// A budget <= 0 means "no step limit": the returned context has exactly the
// parent's deadline (or none, if the parent has none). Either way the step
// context is a new child of ctx, so canceling it never affects ctx, and
// canceling ctx cancels it.
//
// As with [context.WithTimeout], the caller must call the returned
// CancelFunc once the step is over, to release its timer. To tell "this
// step ran out of time" from "the whole call ran out of time" after the
// step fails, look at the parent: ctx.Err() is nil in the first case.
//
// Call [Check] first to avoid starting a step that cannot finish.
func Step(ctx context.Context, budget time.Duration) (context.Context, context.CancelFunc) {
	if budget <= 0 {
		return context.WithCancel(ctx)
	}
	// WithTimeout keeps the parent's deadline when it is earlier, which is
	// exactly min(budget, remaining); a huge budget saturates, no overflow.
	return context.WithTimeout(ctx, budget)
}

// Check is the fail-fast test before starting a step that needs at least
// need to be useful. It returns:
//
//   - ctx.Err(), unchanged, when ctx is already done;
//   - [context.DeadlineExceeded] when the deadline has passed but ctx has
//     not noticed yet (its timer has not fired);
//   - nil when ctx has no deadline, or at least need is left;
//   - otherwise a *tooCloseError carrying the time left and need, which
//     matches [ErrTooClose].
//
// A need <= 0 therefore only checks that ctx is not done and its deadline
// has not passed.
func Check(ctx context.Context, need time.Duration) error {
	return checkAt(ctx, need, time.Now())
}

// checkAt is [Check] with the current time passed in; apart from ctx.Err it
// reads no clock, so it is deterministic for a given ctx and now.
func checkAt(ctx context.Context, need time.Duration, now time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	left, ok := RemainingAt(ctx, now)
	switch {
	case !ok:
		return nil
	case left <= 0:
		return context.DeadlineExceeded
	case left < need:
		return &tooCloseError{Remaining: left, Need: need}
	}
	return nil
}
