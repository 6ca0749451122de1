// Package overload protects a server from more work than it can do: a
// limit on requests in its handlers that adapts to their latency, a short
// queue in front that refuses at once what cannot finish in time, and
// refusals that tell the caller when to come back.
//
// Most servers want [Limiter.Wrap] inside deadline.Middleware, which adopts
// the caller's Timeout-Remaining as the request's deadline:
//
//	lim, _ := overload.New(overload.Config{})
//	http.ListenAndServe(addr, deadline.Middleware{}.Wrap(lim.Wrap(handler)))
//
// heedgrpc.Server's Limiter field applies the same limiter to gRPC calls.
// [Limiter.Acquire] is the mechanism both use, for other servers.
//
// How it decides, request by request:
//
//   - Below the limit, a request runs at once. The limit is adaptive by
//     default (a Vegas rule on the handlers' latency: it grows while
//     latency stays at its baseline and shrinks when requests start to
//     wait inside the handler) or fixed ([Config.Limit]).
//   - At the limit, a first attempt waits in a short queue. It is refused
//     at once when its deadline cannot cover the expected wait plus the
//     handler's no-queue latency, or when the queue is full. Its wait is
//     bounded as Facebook's servers bound theirs (CoDel: at most one
//     interval, 100 ms, and only 10 ms once the queue has not emptied for a
//     whole interval); while overloaded the newest waiter is served first
//     (adaptive LIFO), so the requests served are those whose callers are
//     most likely still waiting.
//   - A retry (Retry-Attempt 2 or more: heed's attempt number, 1 being the
//     first attempt) never waits, and while the limiter is refusing (a
//     refusal less than a second ago) it is refused even below the limit:
//     under overload, retries are refused before first attempts.
//   - A waiter whose caller has gone (its context is done) leaves the queue
//     and is never served.
//   - A refusal carries when to come back, from the queue's state: the time
//     the queue ahead needs to drain, at least one no-queue latency. HTTP
//     answers 503 with Retry-After (whole seconds, at least 1); heedgrpc
//     answers UNAVAILABLE with grpc-retry-pushback-ms, which heed clients
//     honour.
//
// Everything in this package is safe for concurrent use. It starts no
// goroutines: a waiter waits on its own.
package overload

import (
	"errors"
	"time"
)

// ErrOverloaded is the sentinel matched (with [errors.Is]) by every
// [*RefusedError].
var ErrOverloaded = errors.New("overload: refused")

// Reason says why a request was refused. Its Key is the word used in
// metrics.
type Reason uint8

const (
	// ReasonNone: the request was admitted.
	ReasonNone Reason = iota
	// ReasonQueueFull: at the limit, and the queue was full (or off).
	ReasonQueueFull
	// ReasonQueueTime: the request waited as long as the queue allows.
	ReasonQueueTime
	// ReasonDeadline: its deadline could not cover the expected wait plus
	// the no-queue latency.
	ReasonDeadline
	// ReasonRetry: a retry at the limit; retries do not wait.
	ReasonRetry
	// ReasonGone: its caller went away (the context ended) while it
	// waited.
	ReasonGone
)

var reasonKeys = [...]string{"none", "queue_full", "queue_time", "deadline", "retry", "caller_gone"}

// Key returns the reason's snake_case word: "none", "queue_full",
// "queue_time", "deadline", "retry" or "caller_gone".
func (r Reason) Key() string {
	if int(r) < len(reasonKeys) {
		return reasonKeys[r]
	}
	return "unknown"
}

// String returns the reason for people.
func (r Reason) String() string {
	switch r {
	case ReasonQueueFull:
		return "queue full"
	case ReasonQueueTime:
		return "waited too long"
	case ReasonDeadline:
		return "deadline too close"
	case ReasonRetry:
		return "retry refused under overload"
	case ReasonGone:
		return "caller gone"
	}
	return r.Key()
}

// RefusedError is a refusal by a [Limiter]. It matches [ErrOverloaded]
// with errors.Is; for [ReasonGone] it also unwraps to the context's error.
type RefusedError struct {
	// Reason is why the request was refused (never ReasonNone).
	Reason Reason
	// RetryAfter is when to come back: the time the queue ahead needs to
	// drain as the limiter sees it, at least the handlers' no-queue
	// latency. Zero for ReasonGone.
	RetryAfter time.Duration
	// Err is the context's error for ReasonGone, else nil.
	Err error
}

// Error returns a message such as "overload: refused (queue full), come back in 40ms".
func (e *RefusedError) Error() string {
	if e.Reason == ReasonGone {
		return "overload: refused (caller gone)"
	}
	return "overload: refused (" + e.Reason.String() + "), come back in " + e.RetryAfter.String()
}

// Is reports whether target is [ErrOverloaded].
func (e *RefusedError) Is(target error) bool { return target == ErrOverloaded }

// Unwrap returns Err.
func (e *RefusedError) Unwrap() error { return e.Err }

// Event is what a [Limiter] tells [Config.Observe] about one request: it
// was admitted (Reason zero) after waiting Waited, or refused.
type Event struct {
	Reason Reason        // why it was refused; ReasonNone when admitted
	Waited time.Duration // time in the queue; zero when admitted or refused at once
	Retry  bool          // the request was a retry
}

// Stats is a snapshot of a [Limiter].
type Stats struct {
	Limit    int           // the concurrency limit now
	InFlight int           // requests in the handler
	Queued   int           // requests waiting
	Baseline time.Duration // the handlers' no-queue latency as measured; 0 before the first sample
}
