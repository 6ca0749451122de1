package retryhttp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"maps"
	"net/http"
	"net/http/httptrace"
	"time"

	"github.com/heed-go/heed/internal/wire"
	"github.com/heed-go/heed/retry"
)

// idempotentMethod reports whether RFC 9110 §9.2.2 calls method
// idempotent.
func idempotentMethod(m string) bool {
	switch m {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}

// attemptValues are the Retry-Attempt values of the first attempts,
// shared so that sending them allocates nothing.
var attemptValues = [...][]string{{"1"}, {"2"}, {"3"}, {"4"}, {"5"}, {"6"}, {"7"}, {"8"}, {"9"}}

func attemptValue(n int) []string {
	if n >= 1 && n <= len(attemptValues) {
		return attemptValues[n-1]
	}
	return []string{wire.FormatRetryAttempt(n)}
}

// newKey returns a random UUID (version 4), quoted as an sf-string.
func newKey() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var s [38]byte
	s[0], s[37] = '"', '"'
	hex.Encode(s[1:9], b[0:4])
	s[9] = '-'
	hex.Encode(s[10:14], b[4:6])
	s[14] = '-'
	hex.Encode(s[15:19], b[6:8])
	s[19] = '-'
	hex.Encode(s[20:24], b[8:10])
	s[24] = '-'
	hex.Encode(s[25:37], b[10:16])
	return string(s[:])
}

// send makes attempt number n, which must end by lim, into a, which is
// zero. It writes a in place, not returns it: an attempt is a struct the
// compiler copies through memory, and a copy read right after its fields
// were written stalls the processor (the store cannot be forwarded to the
// wider load), which a racer's slot paid twice.
func (c *call) send(a *attempt, ctx context.Context, req *http.Request, n int, now time.Time, lim retry.Limit, body io.ReadCloser, rw *rewinder, tracing bool) {
	t := c.t
	actx := ctx
	if !lim.At.IsZero() && lim.Reason != retry.ReasonDeadline {
		actx, a.cancel = context.WithTimeout(ctx, lim.At.Sub(now))
	}
	if tracing {
		a.prog = new(progress)
		actx = httptrace.WithClientTrace(actx, a.prog.trace())
	}

	if !c.propagate && c.genKey == "" && actx == req.Context() && body == req.Body && (body == nil || body == http.NoBody) {
		// Nothing to add or change: the base gets the caller's request,
		// which it must not modify either.
		a.resp, a.err = t.base.RoundTrip(req)
		if a.err != nil && a.resp != nil {
			a.resp.Body.Close()
			a.resp = nil
		}
		return
	}

	// A shallow copy of req with its own header map: the caller's request
	// and header are never written to.
	r := req.WithContext(actx)
	r.Header = copyHeader(req.Header)
	hdr := r.Header
	if c.claim {
		hdr[wire.RetryAttemptHeader] = attemptValue(max(n, c.upAttempt))
	}
	if c.propagate {
		if !lim.At.IsZero() {
			hdr[wire.Header] = []string{wire.FormatHeader(lim.At.Sub(now) - t.headerMargin())}
		}
	}
	if c.genKey != "" {
		hdr[IdempotencyKeyHeader] = []string{c.genKey}
	}
	r.Body = body
	if body != nil && body != http.NoBody {
		r.GetBody = rw.getBodyFunc()
		if rw.buf != nil && r.ContentLength <= 0 {
			r.ContentLength = int64(len(rw.buf)) // buffered: no need to chunk
		}
	}

	a.resp, a.err = t.base.RoundTrip(r)
	if a.err != nil {
		a.timedOut = a.cancel != nil && ctx.Err() == nil && errors.Is(actx.Err(), context.DeadlineExceeded)
		if a.resp != nil { // a broken RoundTripper; do not leak its body
			a.resp.Body.Close()
			a.resp = nil
		}
	}
}

// copyHeader returns a copy of h with room for the up to three fields an
// attempt adds. A header of up to five fields is cloned: such a map is
// usually one group of eight slots (unless it was made much larger), which
// maps.Clone copies whole instead of rehashing each field, and the three
// additions still fit in it. A larger header is copied into a map sized for
// the additions, so that adding them does not grow it.
func copyHeader(h http.Header) http.Header {
	if n := len(h); n > 0 && n <= 5 {
		return maps.Clone(h)
	}
	c := make(http.Header, len(h)+3)
	for k, v := range h {
		c[k] = v
	}
	return c
}
