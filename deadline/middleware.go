package deadline

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/heed-go/heed/internal/wire"
)

// WithUpstreamOwner returns a context that says a caller further up the
// chain owns retries for this work: heed's executors called under it make a
// single attempt and give up with retry.ReasonUpstreamOwns, so a chain of
// services that all retry makes (1 + r) attempts, not (1 + r)^layers.
// [Middleware] marks a request's context so when the request carries
// Retry-Attempt from a trusted peer; heedgrpc's server does the same.
func WithUpstreamOwner(ctx context.Context) context.Context {
	if s, ok := wire.StateOf(ctx); ok && s.Owned {
		return ctx
	}
	return wire.WithState(ctx, &wire.State{Owned: true})
}

// UpstreamOwns reports whether ctx was marked by [WithUpstreamOwner] or by
// [Middleware] for a request that carried Retry-Attempt.
func UpstreamOwns(ctx context.Context) bool {
	s, ok := wire.StateOf(ctx)
	return ok && s.Owned
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
func MarkUpstreamOpen(ctx context.Context) bool { return wire.MarkUpstreamOpen(ctx) }

// DefaultMinRemaining is the least time left for which [Middleware] calls
// the handler when Middleware.MinRemaining is zero: with less, it answers
// 504 at once.
const DefaultMinRemaining = 10 * time.Millisecond

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
//     malformed (see the package documentation for their grammar): a peer we trust
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
			if v := r.Header.Values(wire.Header); len(v) > 0 {
				d, err := wire.ParseHeader(v[0])
				if err == nil && len(v) > 1 {
					err = wire.BadHeader(v[1], "more than one value")
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
				if v := r.Header.Values(wire.RetryAttemptHeader); len(v) > 0 {
					n, err := wire.ParseRetryAttempt(v[0])
					if err == nil && len(v) > 1 {
						err = &wire.RetryAttemptError{Value: v[1], Reason: "more than one value"}
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
			ctx = wire.WithState(ctx, &wire.State{Owned: owned || UpstreamOwns(ctx), Attempt: max(attempt, wire.UpstreamAttempt(ctx)), Header: w.Header()})
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
