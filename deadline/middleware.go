package deadline

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"
)

// RetryAttemptHeader is the name of the HTTP header that claims retry
// ownership: "Retry-Attempt: N", N >= 1 being the attempt number. A heed
// client sends it only when it will retry the request itself (it has
// attempts left and the request is safe to repeat), or when a caller above
// it owns the retries; a client that will not retry (one attempt, or a POST
// without an idempotency key) does not send it, so the layer below may
// retry instead. A server that receives it knows its caller retries, so its
// own outbound calls for that request do not retry again (one retry owner
// per chain). [Middleware] reads it; [ParseRetryAttempt] is its grammar.
const RetryAttemptHeader = "Retry-Attempt"

// UpstreamBreakerHeader is the response header by which a heed server says
// that it answered as it did because a dependency of its own is refused by
// an open circuit breaker: "Upstream-Breaker: open". The server itself is
// healthy; a heed client that receives it with a 5xx status neither retries
// the request nor counts it as a failure in its own breaker, so breakers
// do not open one after another up a chain of healthy services.
// [Middleware] adds it when [MarkUpstreamOpen] was called under the
// request's context (retryhttp does when its breaker refuses a call).
const UpstreamBreakerHeader = "Upstream-Breaker"

// reqState is what [Middleware] keeps in a request's context: whether a
// caller upstream owns retries, and the response header to mark when a
// dependency's breaker is open. One value, so that the middleware adds one
// context layer.
type reqState struct {
	owned   bool
	attempt int // the Retry-Attempt received; 0: none
	mu      sync.Mutex
	hdr     http.Header // the response's; nil outside the middleware
}

type stateKey struct{}

// WithUpstreamOwner returns a context that says a caller further up the
// chain owns retries for this work: heed's executors called under it make a
// single attempt and give up with retry.ReasonUpstreamOwns, so a chain of
// services that all retry makes (1 + r) attempts, not (1 + r)^layers.
// [Middleware] marks a request's context so when the request carries
// Retry-Attempt from a trusted peer; heedgrpc's server does the same.
func WithUpstreamOwner(ctx context.Context) context.Context {
	if s, ok := ctx.Value(stateKey{}).(*reqState); ok && s.owned {
		return ctx
	}
	return context.WithValue(ctx, stateKey{}, &reqState{owned: true})
}

// WithUpstreamAttempt returns a context that says, as [Middleware] does for
// a request that carried Retry-Attempt, that a caller further up the chain
// owns retries for this work (see [WithUpstreamOwner]) and that the
// request is its attempt number attempt, for [UpstreamAttempt]: a heed
// client called under it sends that number on, so that a server further
// down still tells a retry from a first attempt. heedgrpc's server sets it
// for a call that carries retry-attempt; it is for servers outside
// Middleware.
func WithUpstreamAttempt(ctx context.Context, attempt int) context.Context {
	return context.WithValue(ctx, stateKey{}, &reqState{owned: true, attempt: max(attempt, UpstreamAttempt(ctx))})
}

// UpstreamOwns reports whether ctx was marked by [WithUpstreamOwner] or by
// [Middleware] for a request that carried Retry-Attempt.
func UpstreamOwns(ctx context.Context) bool {
	s, ok := ctx.Value(stateKey{}).(*reqState)
	return ok && s.owned
}

// UpstreamAttempt returns the attempt number that the request served
// under ctx carried in Retry-Attempt, as [Middleware] adopted it from a
// trusted peer (or [WithUpstreamAttempt] recorded it), or 0. A heed client that passes on its caller's claim
// sends it on (the larger of it and its own attempt number), so that a
// server further down the chain still tells a user's retry from a first
// attempt and can refuse retries first under overload.
func UpstreamAttempt(ctx context.Context) int {
	if s, ok := ctx.Value(stateKey{}).(*reqState); ok {
		return s.attempt
	}
	return 0
}

// MarkUpstreamOpen records, under the context of a request served through
// [Middleware] from a trusted peer, that a dependency's circuit breaker
// refused a call: the response then carries Upstream-Breaker: open. It
// reports whether ctx belongs to such a request. retryhttp calls it when its
// breaker refuses an attempt; call it yourself for other clients. It sets
// the header on the response's header map at once, so call it before the
// handler writes its response, and not concurrently with the handler's own
// changes to the header (retryhttp calls it on the goroutine that called
// RoundTrip).
func MarkUpstreamOpen(ctx context.Context) bool {
	s, ok := ctx.Value(stateKey{}).(*reqState)
	if !ok || s.hdr == nil {
		return false
	}
	s.mu.Lock()
	s.hdr.Set(UpstreamBreakerHeader, "open")
	s.mu.Unlock()
	return true
}

// UpstreamOpen reports whether resp says that the server's own dependency
// is refused by an open circuit breaker (see [UpstreamBreakerHeader]): a 5xx
// status with Upstream-Breaker: open.
func UpstreamOpen(resp *http.Response) bool {
	return resp.StatusCode >= 500 && resp.Header.Get(UpstreamBreakerHeader) == "open"
}

// DefaultMinRemaining is the least time left for which [Middleware] calls
// the handler when Middleware.MinRemaining is zero: with less, it answers
// 504 at once.
const DefaultMinRemaining = 10 * time.Millisecond

// maxRetryAttempt bounds the Retry-Attempt values accepted (4 digits).
const maxRetryAttempt = 9999

// Middleware is the server side of the Timeout-Remaining and Retry-Attempt
// wire formats. Wrap a handler with [Middleware.Wrap]. For a request from a
// trusted peer it:
//
//   - adopts Timeout-Remaining as the request context's deadline, never
//     beyond the server's own Limit nor beyond a deadline the context already
//     has: a client can only shorten the time a request may take;
//   - answers 504 Gateway Timeout at once, without calling the handler, when
//     less than MinRemaining is left;
//   - answers 400 Bad Request with a one-line plain-text body, without
//     calling the handler, when Timeout-Remaining or Retry-Attempt is
//     malformed (see [ParseHeader] and [ParseRetryAttempt]): a peer we trust
//     that sends garbage has a bug worth seeing, and guessing could lengthen
//     its deadline;
//   - when the request carries Retry-Attempt, marks the context with
//     [WithUpstreamOwner] so that heed clients called under it make a
//     single attempt: the caller owns the retries;
//   - adds Upstream-Breaker: open to the response when a heed client called
//     under the context was refused by its open breaker ([MarkUpstreamOpen]),
//     so that the caller's breaker does not count the answer against this
//     healthy server.
//
// For a request from a peer that is not trusted the headers are ignored and
// none is added; Limit and MinRemaining still apply.
//
// The zero Middleware is usable and what most servers want: no own limit,
// 10 ms minimum, trust loopback and private-network peers, ownership on. A
// Middleware is a plain value; the handler it returns is safe for
// concurrent use.
type Middleware struct {
	// Limit is the server's own limit on the time a request may take
	// (default: none, so only the header and the incoming context bound
	// it). The adopted deadline is min(now+Limit, now+header, the
	// context's deadline).
	Limit time.Duration

	// MinRemaining is the least time worth starting the handler with
	// (default [DefaultMinRemaining]). With less left, the middleware
	// answers 504 without calling the handler. Negative means never.
	MinRemaining time.Duration

	// Trusted reports whether the request comes from a peer whose headers
	// may be honoured (default [TrustPrivate]). Strip or ignore the
	// headers at the edge of your network: use a predicate that checks an
	// authenticated identity (mTLS, a signed token) where you have one.
	Trusted func(r *http.Request) bool

	// OwnershipOff turns ownership off: the Retry-Attempt header is
	// neither checked nor acted on, so clients under the request context
	// retry on their own.
	OwnershipOff bool
}

// Wrap returns a handler that applies m to every request, then calls next.
func (m Middleware) Wrap(next http.Handler) http.Handler {
	trusted := m.Trusted
	if trusted == nil {
		trusted = TrustPrivate
	}
	minLeft := m.MinRemaining
	if minLeft == 0 {
		minLeft = DefaultMinRemaining
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := time.Now()
		ctx := r.Context()
		limit := m.Limit
		owned := false
		attempt := 0
		trust := trusted(r)
		if trust {
			if v := r.Header.Values(Header); len(v) > 0 {
				d, err := ParseHeader(v[0])
				if err == nil && len(v) > 1 {
					err = badHeader(v[1], "more than one value")
				}
				if err != nil {
					reject(w, http.StatusBadRequest, err.Error())
					return
				}
				if limit <= 0 || d < limit {
					limit = d
				}
				if d == 0 {
					limit = -1 // no time left at all
				}
			}
			if !m.OwnershipOff {
				if v := r.Header.Values(RetryAttemptHeader); len(v) > 0 {
					n, err := ParseRetryAttempt(v[0])
					if err == nil && len(v) > 1 {
						err = &RetryAttemptError{Value: v[1], Reason: "more than one value"}
					}
					if err != nil {
						reject(w, http.StatusBadRequest, err.Error())
						return
					}
					owned, attempt = true, n
				}
			}
		}
		var cancel context.CancelFunc
		switch {
		case limit < 0:
			reject(w, http.StatusGatewayTimeout, ErrTooClose.Error())
			return
		case limit > 0:
			ctx, cancel = context.WithDeadline(ctx, now.Add(limit))
			defer cancel()
		}
		if left, ok := RemainingAt(ctx, now); ok && (left <= 0 || minLeft > 0 && left < minLeft) {
			reject(w, http.StatusGatewayTimeout, ErrTooClose.Error())
			return
		}
		if trust {
			ctx = context.WithValue(ctx, stateKey{}, &reqState{owned: owned || UpstreamOwns(ctx), attempt: max(attempt, UpstreamAttempt(ctx)), hdr: w.Header()})
		}
		if ctx != r.Context() {
			r = r.WithContext(ctx)
		}
		next.ServeHTTP(w, r)
	})
}

// reject answers status with a one-line plain-text body.
func reject(w http.ResponseWriter, status int, msg string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write([]byte(msg + "\n"))
}

// TrustPrivate is the default trust predicate of [Middleware]: it trusts
// peers whose address (r.RemoteAddr) is loopback, private (RFC 1918, RFC
// 4193) or link-local. Behind a reverse proxy on the same host every peer
// looks local: strip the headers at the proxy, or use a stricter predicate.
func TrustPrivate(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	ip = ip.Unmap()
	return ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast()
}

// TrustAll trusts every peer. Use it only where an edge proxy already strips
// Timeout-Remaining and Retry-Attempt from outside requests.
func TrustAll(*http.Request) bool { return true }

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
