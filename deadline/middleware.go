package deadline

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"time"
)

// RetryAttemptHeader is the name of the HTTP header a client that owns
// retries sends with every attempt: "Retry-Attempt: N", N >= 1 being the
// attempt number. A server that receives it knows its caller retries, so its
// own outbound calls for that request should not retry again (one retry owner
// per chain). [Middleware] reads it; [ParseRetryAttempt] is its grammar.
const RetryAttemptHeader = "Retry-Attempt"

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
//   - when the request carries Retry-Attempt, calls Owner on the context so
//     that retrying clients called under it make a single attempt.
//
// For a request from a peer that is not trusted both headers are ignored;
// Limit and MinRemaining still apply.
//
// The zero Middleware is usable: no own limit, 10 ms minimum, trust
// loopback and private-network peers, and no ownership marking (this
// package cannot import retry; retryhttp.Handler sets Owner to
// retry.WithUpstreamOwner, which is what most servers want). A Middleware
// is a plain value; the handler it returns is safe for concurrent use.
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

	// Owner, when set, marks the request context when a trusted request
	// carries a valid Retry-Attempt header: a caller up the chain owns the
	// retries. Set it to retry.WithUpstreamOwner (retryhttp.Handler does
	// this for you). Nil: the header is validated but nothing is marked.
	Owner func(ctx context.Context) context.Context

	// IgnoreRetryAttempt turns ownership off: the Retry-Attempt header is
	// neither checked nor acted on, so clients under the request context
	// retry on their own.
	IgnoreRetryAttempt bool
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
		if trusted(r) {
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
			if !m.IgnoreRetryAttempt {
				if v := r.Header.Values(RetryAttemptHeader); len(v) > 0 {
					_, err := ParseRetryAttempt(v[0])
					if err == nil && len(v) > 1 {
						err = &RetryAttemptError{Value: v[1], Reason: "more than one value"}
					}
					if err != nil {
						reject(w, http.StatusBadRequest, err.Error())
						return
					}
					owned = true
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
		if owned && m.Owner != nil {
			ctx = m.Owner(ctx)
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
