// Package retry runs an operation again when it fails in a way that may pass,
// and stops when repeating cannot help.
//
// Most callers want [Do] (or [DoValue]) with a [Policy]; the zero Policy is a
// sensible default: 3 attempts in total, exponential backoff from 100 ms to
// 5 s with full jitter, retrying only errors known to be transient.
//
// Every retry decision is made by [Decide], a pure function of the policy,
// the history of the call, the error and the current time. The steps
// around it (breaker admission and outcome, budget accounting, the
// attempt's limits, the trace) are the call protocol, [Call]. Do, the HTTP
// transport (retryhttp), the job queue (queue) and the simulator (sim) all
// go through it, so one policy behaves the same everywhere; the suite in
// retry/executortest checks that they do. Each decision carries its reason,
// and the list of them (the trace) is passed to the observer and kept on
// the error returned when a call gives up.
//
// # For users
//
// [Do], [DoValue] and [Policy] (with [Policy.Validate]); the marks
// [Transient], [Permanent] and [After] an operation puts on its errors, and
// [IsTransient], the default classifier; [ErrExhausted] and
// [*ExhaustedError] for a call that gave up; [Policy.Observe] and
// [LogObserver] to see each [Event]; and, to read a [Decision], its
// [Action], [Reason] and [Outcome]. The executors in retryhttp, heedgrpc
// and queue take the same Policy.
//
// # For executor authors
//
// An executor (an HTTP transport, a gRPC interceptor, a job worker) runs
// each call through a [Call], the one door into the call protocol, and
// keeps nothing of its own about retries:
//
//   - [Call.Admit] before each attempt: the attempt's [Limit], or a
//     refusal whose decision is [Call.Last];
//   - [Call.ShareLimit], between Admit and the attempt, for an executor
//     that gives attempts a share of the caller's deadline;
//   - the attempt, then [Call.End] with its [Result], which returns the
//     [Decision] (done, retry after its Delay, give up, or defer);
//     [Call.Abandon] instead when the caller went away;
//   - [Call.Exhausted] for the error of a call that gave up, and
//     [Call.Trace] for its decisions;
//   - with [Policy.Hedge], [Call.Race] (or [Call.HedgeAt] and [Call.Hedge]
//     for an executor that runs attempts on its own clock, such as sim).
//
// [Decide] is the pure rule behind End, for an executor whose state lives
// elsewhere (a job store keeps the [History]); [Policy.Classify] and
// [Policy.Fits] are the rules it applies. retry/executortest is the
// conformance suite every executor passes.
package retry

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/breaker"
	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/clock"
)

// Defaults for the zero fields of a [Policy].
const (
	// DefaultAttempts is the number of attempts in total, the first one
	// included: one call and at most two retries. More retries rarely help a
	// call that a person or another service is waiting on, and each layer
	// that retries multiplies load on a struggling dependency.
	DefaultAttempts = 3
	// DefaultMaxPushback caps how long a server may ask a call to wait
	// (with [After]); a longer request is clamped to it.
	DefaultMaxPushback = 30 * time.Second
)

// defaultMinAttemptTime is the least time an attempt is assumed to need to
// be useful when the policy has neither MinAttemptTime nor AttemptTimeout
// (see Policy.MinAttemptTime).
const defaultMinAttemptTime = 10 * time.Millisecond

// Unlimited as Policy.Attempts removes the attempt limit. It is the
// documented name of any negative Attempts (heed's convention: zero is the
// documented default, a negative number or duration turns a limit off);
// the call then ends only on success, a permanent error, the time budget
// or the caller's deadline. Pair it with TimeBudget or a context deadline.
const Unlimited = -1

// Policy says when and how a call is retried.
//
// The zero value is ready to use (see [DefaultAttempts] and the zero
// [backoff.Schedule]). A Policy is a plain value: copy it, share it between
// goroutines and reuse it for every call; it holds no per-call state. Its
// Budget and Breaker, when set, are shared by every call that uses it, which
// is the point of them.
type Policy struct {
	// Attempts is the number of attempts in total, the first included
	// (default 3; 1 means no retries; negative, such as Unlimited, means
	// no limit).
	Attempts int

	// Backoff is the schedule of delays between attempts (default:
	// exponential from 100 ms, doubling, capped at 5 s, full jitter).
	Backoff backoff.Schedule

	// AttemptTimeout limits each attempt (default: none; a negative value
	// is none too, which turns off a default that executors such as the
	// queue set). An attempt that
	// runs out of it counts as a transient failure. The attempt's context is
	// also limited by the caller's deadline and TimeBudget, whichever ends
	// first.
	AttemptTimeout time.Duration

	// TimeBudget is the time budget of the whole call, counted from the
	// start of the first attempt (default: none; a negative value is none
	// too, which turns off a default that executors such as the queue set;
	// the caller's context deadline still applies). A retry whose wait plus MinAttemptTime would
	// end after it is not started.
	TimeBudget time.Duration

	// MinAttemptTime is the least time an attempt needs to be useful: a
	// retry is started only if its wait plus this still fits before the
	// deadline (default: AttemptTimeout when set, so that only whole
	// attempts are started; otherwise 10 ms). A value
	// longer than AttemptTimeout counts as AttemptTimeout. Set it below
	// AttemptTimeout for attempts that usually end well before their
	// timeout.
	MinAttemptTime time.Duration

	// Retryable classifies errors that carry no mark from [Transient],
	// [Permanent] or [After]: it reports whether err may pass on a retry.
	// The default is [IsTransient]. To retry every error:
	//
	//	Retryable: func(error) bool { return true },
	Retryable func(err error) bool

	// MaxPushback is the longest wait requested by the server through
	// [After] that a call honours (default 30 s). A call asked to wait
	// longer gives up with ReasonPushbackTooLong and the server's wait as
	// the decision's Delay, rather than come back before the server
	// asked. Durable calls (jobs) honour any wait within their time budget.
	MaxPushback time.Duration

	// Budget, when set, limits the retries to one destination (a bucket
	// that requests, time and successful retries fill: see package
	// budget); a retry it refuses ends the call (a durable call waits for
	// it instead). Share one Budget between every policy that calls the
	// same dependency.
	Budget *budget.Budget

	// Breaker, when set, is asked before every attempt; while it is open
	// the call gives up without calling the operation (a durable call waits
	// until it may admit again).
	Breaker *breaker.Breaker

	// Hedge, when set, sends hedged requests: when an attempt has not
	// answered after a delay, another one races it (see [Hedge]). Default:
	// none. Hedges count in Attempts and in the Budget, and are refused by
	// the Breaker. The executors that make requests hedge (retryhttp,
	// heedgrpc's unary calls, the simulator); [Do] makes one attempt at a
	// time and ignores it, since a function that a hedge could run beside
	// its first attempt would have to live on the heap, and Do allocates
	// nothing.
	Hedge *Hedge

	// Observe, when set, is called after every attempt with the decision
	// taken, on the goroutine that called Do. It must not block. See
	// [LogObserver] for a log/slog adapter.
	Observe func(ctx context.Context, e Event)

	// Clock is the time source for waits and decisions (default: real
	// time). Per-attempt context deadlines always use the context package's
	// own clock.
	Clock clock.Clock

	// Rand is the source of jitter (default: math/rand/v2's global source).
	// A seeded source makes delays reproducible; it must be safe for
	// concurrent use if the policy is shared between goroutines.
	Rand rand.Source
}

// Validate reports the first invalid field of p, naming it, or nil.
// [Do] returns the same error when a call first needs to retry; calling
// Validate when a policy is built catches a mistake earlier.
func (p *Policy) Validate() error {
	switch {
	case p.MinAttemptTime < 0:
		return fmt.Errorf("retry: Policy.MinAttemptTime is %v, must not be negative", p.MinAttemptTime)
	case p.MaxPushback < 0:
		return fmt.Errorf("retry: Policy.MaxPushback is %v, must not be negative", p.MaxPushback)
	}
	if err := p.Backoff.Validate(); err != nil {
		return fmt.Errorf("retry: Policy.Backoff: %w", err)
	}
	if p.Hedge != nil {
		return p.Hedge.validate()
	}
	return nil
}

// MaxAttempts returns the attempt limit after defaults: Attempts, or
// DefaultAttempts when it is zero, or 0 (no limit) when it is negative.
func (p *Policy) MaxAttempts() int {
	switch {
	case p.Attempts == 0:
		return DefaultAttempts
	case p.Attempts < 0:
		return 0
	}
	return p.Attempts
}

func (p *Policy) maxPushback() time.Duration {
	if p.MaxPushback > 0 {
		return p.MaxPushback
	}
	return DefaultMaxPushback
}

// MinAttempt returns the time an attempt is taken to need after defaults:
// MinAttemptTime, capped at AttemptTimeout; when MinAttemptTime is zero,
// AttemptTimeout, or 10 ms without one.
func (p *Policy) MinAttempt() time.Duration {
	m := p.MinAttemptTime
	switch {
	case m == 0 && p.AttemptTimeout > 0:
		return p.AttemptTimeout
	case m == 0:
		return defaultMinAttemptTime
	case p.AttemptTimeout > 0 && p.AttemptTimeout < m:
		return p.AttemptTimeout
	}
	return m
}
