package wire

import (
	"context"
	"net/http"
	"strconv"
	"sync"
)

// RetryAttemptHeader is the name of the HTTP header that claims retry
// ownership: "Retry-Attempt: N", N >= 1 being the attempt number. A heed
// client sends it only when it will retry the request itself (it has
// attempts left and the request is safe to repeat), or when a caller above
// it owns the retries; a client that will not retry (one attempt, or a POST
// without an idempotency key) does not send it, so the layer below may
// retry instead. A server that receives it knows its caller retries, so its
// own outbound calls for that request do not retry again (one retry owner
// per chain). deadline.Middleware reads it; [ParseRetryAttempt] is its grammar.
const RetryAttemptHeader = "Retry-Attempt"

// UpstreamBreakerHeader is the response header by which a heed server says
// that it answered as it did because a dependency of its own is refused by
// an open circuit breaker: "Upstream-Breaker: open". The server itself is
// healthy; a heed client that receives it with a 5xx status neither retries
// the request nor counts it as a failure in its own breaker, so breakers
// do not open one after another up a chain of healthy services.
// deadline.Middleware adds it when [MarkUpstreamOpen] was called under the
// request's context (retryhttp does when its breaker refuses a call).
const UpstreamBreakerHeader = "Upstream-Breaker"

// State is what deadline.Middleware keeps in a request's context: whether
// a caller upstream owns retries, the Retry-Attempt it sent, and the
// response header to mark when a dependency's breaker is open. One value,
// so that the middleware adds one context layer.
type State struct {
	Owned   bool
	Attempt int // the Retry-Attempt received; 0: none
	mu      sync.Mutex
	Header  http.Header // the response's; nil outside the middleware
}

type stateKey struct{}

// WithState returns ctx carrying s.
func WithState(ctx context.Context, s *State) context.Context {
	return context.WithValue(ctx, stateKey{}, s)
}

// StateOf returns the State ctx carries.
func StateOf(ctx context.Context) (*State, bool) {
	s, ok := ctx.Value(stateKey{}).(*State)
	return s, ok
}

// WithUpstreamAttempt returns a context that says, as deadline.Middleware does for
// a request that carried Retry-Attempt, that a caller further up the chain
// owns retries for this work (see deadline.WithUpstreamOwner) and that the
// request is its attempt number attempt, for [UpstreamAttempt]: a heed
// client called under it sends that number on, so that a server further
// down still tells a retry from a first attempt. heedgrpc's server sets it
// for a call that carries retry-attempt; it is for servers outside
// deadline.Middleware.
func WithUpstreamAttempt(ctx context.Context, attempt int) context.Context {
	return WithState(ctx, &State{Owned: true, Attempt: max(attempt, UpstreamAttempt(ctx))})
}

// UpstreamAttempt returns the attempt number that the request served
// under ctx carried in Retry-Attempt, as deadline.Middleware adopted it from a
// trusted peer (or [WithUpstreamAttempt] recorded it), or 0. A heed client that passes on its caller's claim
// sends it on (the larger of it and its own attempt number), so that a
// server further down the chain still tells a user's retry from a first
// attempt and can refuse retries first under overload.
func UpstreamAttempt(ctx context.Context) int {
	if s, ok := StateOf(ctx); ok {
		return s.Attempt
	}
	return 0
}

// MarkUpstreamOpen records, under the context of a request served through
// deadline.Middleware from a trusted peer, that a dependency's circuit breaker
// refused a call: the response then carries Upstream-Breaker: open. It
// reports whether ctx belongs to such a request. retryhttp calls it when its
// breaker refuses an attempt (through deadline.MarkUpstreamOpen, which
// users call for other clients). It sets
// the header on the response's header map at once, so call it before the
// handler writes its response, and not concurrently with the handler's own
// changes to the header (retryhttp calls it on the goroutine that called
// RoundTrip).
func MarkUpstreamOpen(ctx context.Context) bool {
	s, ok := StateOf(ctx)
	if !ok || s.Header == nil {
		return false
	}
	s.mu.Lock()
	s.Header.Set(UpstreamBreakerHeader, "open")
	s.mu.Unlock()
	return true
}

// UpstreamOpen reports whether resp says that the server's own dependency
// is refused by an open circuit breaker (see [UpstreamBreakerHeader]): a 5xx
// status with Upstream-Breaker: open.
func UpstreamOpen(resp *http.Response) bool {
	return resp.StatusCode >= 500 && resp.Header.Get(UpstreamBreakerHeader) == "open"
}

// maxRetryAttempt bounds the Retry-Attempt values accepted (4 digits).
const maxRetryAttempt = 9999

// RetryAttemptError reports a malformed Retry-Attempt value. It matches
// [ErrBadHeader] with errors.Is.
type RetryAttemptError struct {
	Value  string // the value as received
	Reason string // what was wrong, in lower case
}

// Error returns a message such as `deadline: Retry-Attempt "x": not a number`.
func (e *RetryAttemptError) Error() string {
	return "deadline: " + RetryAttemptHeader + " " + quoteShort(e.Value) + ": " + e.Reason
}

// Is reports whether target is [ErrBadHeader].
func (e *RetryAttemptError) Is(target error) bool { return target == ErrBadHeader }

// ParseRetryAttempt parses a Retry-Attempt value: 1 to 4 ASCII digits, no
// sign, no leading zero, no whitespace, at least 1. Errors are
// [*RetryAttemptError].
func ParseRetryAttempt(s string) (int, error) {
	if s == "" || len(s) > 4 {
		return 0, &RetryAttemptError{Value: s, Reason: "want 1 to 4 digits"}
	}
	if s[0] == '0' {
		return 0, &RetryAttemptError{Value: s, Reason: "want a number from 1, without leading zeros"}
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, &RetryAttemptError{Value: s, Reason: "not a number"}
		}
	}
	n, _ := strconv.Atoi(s)
	if n > maxRetryAttempt {
		return 0, &RetryAttemptError{Value: s, Reason: "too large"}
	}
	return n, nil
}

// FormatRetryAttempt returns the Retry-Attempt value for attempt n (>= 1),
// clamped to the largest value [ParseRetryAttempt] accepts.
func FormatRetryAttempt(n int) string {
	switch {
	case n < 1:
		n = 1
	case n > maxRetryAttempt:
		n = maxRetryAttempt
	}
	return strconv.Itoa(n)
}
