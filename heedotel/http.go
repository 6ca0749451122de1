package heedotel

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/heed-go/heed/internal/redact"
	"github.com/heed-go/heed/retry"
	"github.com/heed-go/heed/retryhttp"
	"go.opentelemetry.io/otel/attribute"
)

// maxHosts caps the destinations (method and host:port pairs) the HTTP
// instruments tell apart. Requests to further destinations are recorded
// with server.address "_OTHER" and no port, so that a client that calls
// URLs taken from data (webhooks, say) cannot grow the number of series
// without bound.
const maxHosts = 256

// Semantic-convention attribute keys of the HTTP instruments.
const (
	keyMethod     = attribute.Key("http.request.method")
	keyAddress    = attribute.Key("server.address")
	keyPort       = attribute.Key("server.port")
	keyStatusCode = attribute.Key("http.response.status_code")
	keyErrorType  = attribute.Key("error.type")
)

// Transport makes t record its calls and returns the RoundTripper to use in
// its place (as an http.Client's Transport). Every attempt is recorded as
// http.client.request.duration (the semantic convention's per-request
// histogram) and heed.http.client.attempts; retries, give-ups, waits,
// breaker refusals and whole calls as the heed.http.client.* instruments;
// all with http.request.method, server.address and server.port, and with
// the status class (heed.http.status_class) where a response came back.
// URLs, paths and query strings are never recorded, and a host name label
// that looks like a credential is recorded as REDACTED.
//
// Transport sets t.Policy.Observe, calling any observer already there
// first, so call it once, before t is used, and send requests only through
// the RoundTripper it returns (requests sent to t directly are not
// recorded). A nil t means a new zero retryhttp.Transport.
//
// The per-host breakers of t.Breaker share its OnStateChange: set it to
// [Metrics.BreakerObserver] to count their transitions, all hosts under the
// one name given. The per-host breakers and budgets themselves are not
// reachable from outside retryhttp, so they have no state or window gauges.
func (m *Metrics) Transport(t *retryhttp.Transport) http.RoundTripper {
	if t == nil {
		t = &retryhttp.Transport{}
	}
	if prev := t.Policy.Observe; prev != nil {
		t.Policy.Observe = func(ctx context.Context, e retry.Event) {
			prev(ctx, e)
			m.observeHTTP(ctx, &e)
		}
	} else {
		t.Policy.Observe = func(ctx context.Context, e retry.Event) { m.observeHTTP(ctx, &e) }
	}
	return &transport{m: m, t: t}
}

type transport struct {
	m *Metrics
	t *retryhttp.Transport
}

type callKey struct{}

// httpCall is the state of one RoundTrip, reached by the observer through
// the request's context. It is only used on the goroutine of the
// RoundTrip (retryhttp calls Observe synchronously).
type httpCall struct {
	sets *hostSets
	// ended: the transport reported a final decision (reason, class).
	ended  bool
	reason int
	class  int
	// pending: the last attempt succeeded; its status is read from the
	// response RoundTrip returns, and it is recorded then.
	pending    bool
	pendingDur time.Duration
}

// RoundTrip sends req through the instrumented retryhttp.Transport.
func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL == nil {
		return t.t.RoundTrip(req) // the transport reports the error
	}
	ctx := req.Context()
	c := &httpCall{sets: t.m.hosts.get(req.Method, req.URL)}
	start := time.Now()
	resp, err := t.t.RoundTrip(req.WithContext(context.WithValue(ctx, callKey{}, c)))
	dur := time.Since(start)
	m, hs := t.m, c.sets
	if c.pending {
		status := 0
		if err == nil && resp != nil {
			status = resp.StatusCode
		}
		m.recordHTTPAttempt(ctx, hs, status, retry.OutcomeSuccess, c.pendingDur)
		c.class = statusClass(status)
	}
	reason := c.reason
	if c.pending && err != nil {
		reason = reasonError // accepted, then refused by the transport (too large)
	}
	if !c.ended {
		// No final decision: the caller's context ended, or the call
		// failed before its first attempt (an invalid policy, a body
		// that cannot be read).
		reason, c.class = reasonError, classError
		if ctx.Err() != nil {
			reason = reasonCanceled
		}
	}
	m.httpCallDur.Record(ctx, dur.Seconds(), hs.get(setCallDur, c.class, reason).rec...)
	return resp, err
}

// CloseIdleConnections closes the idle connections of the retryhttp
// Transport's base.
func (t *transport) CloseIdleConnections() { t.t.CloseIdleConnections() }

func (m *Metrics) observeHTTP(ctx context.Context, e *retry.Event) {
	c, _ := ctx.Value(callKey{}).(*httpCall)
	if c == nil {
		return // sent to the retryhttp.Transport directly
	}
	hs := c.sets
	if e.Hedges > 0 {
		m.httpHedges.Add(ctx, int64(e.Hedges), hs.base.add...)
		if e.HedgeWon {
			m.httpHedgeWon.Add(ctx, 1, hs.base.add...)
		}
	}
	ri := reasonIndex(e.Reason)
	if refusedEvent(e) {
		m.httpRefused.Add(ctx, 1, hs.base.add...)
		m.httpGiveUps.Add(ctx, 1, hs.get(setGiveUps, classError, ri).add...)
		c.ended, c.reason, c.class = true, ri, classError
		return
	}
	if e.Action == retry.Done {
		c.ended, c.reason = true, ri
		c.pending, c.pendingDur = true, e.Duration
		return
	}
	status := 0
	if se, ok := errors.AsType[*retryhttp.StatusError](e.Err); ok {
		status = se.StatusCode
	}
	m.recordHTTPAttempt(ctx, hs, status, e.Outcome, e.Duration)
	cls := statusClass(status)
	if e.Action == retry.Retry {
		m.httpRetries.Add(ctx, 1, hs.get(setRetries, cls, ri).add...)
		m.httpDelay.Record(ctx, e.Delay.Seconds(), hs.get(setDelay, 0, ri).rec...)
		return
	}
	m.httpGiveUps.Add(ctx, 1, hs.get(setGiveUps, cls, ri).add...)
	c.ended, c.reason, c.class = true, ri, cls
}

func (m *Metrics) recordHTTPAttempt(ctx context.Context, hs *hostSets, status int, o retry.Outcome, d time.Duration) {
	oi := outcomeIndex(o)
	m.httpReqDur.Record(ctx, d.Seconds(), hs.get(setReqDur, status, oi).rec...)
	m.httpAttempts.Add(ctx, 1, hs.get(setAttempts, statusClass(status), oi).add...)
}

// Status classes: no response, 1xx to 5xx, and anything else.
const (
	classError = 0
	classOther = 6
)

var classNames = [...]string{"error", "1xx", "2xx", "3xx", "4xx", "5xx", "other"}

func statusClass(status int) int {
	switch {
	case status == 0:
		return classError
	case status >= 100 && status < 600:
		return status / 100
	}
	return classOther
}

// Final reasons of an HTTP call besides retry's: the caller's context
// ended, or the call failed before any decision.
const (
	reasonCanceled = numReasons
	reasonError    = numReasons + 1
)

func callReasonName(i int) string {
	switch i {
	case reasonCanceled:
		return "canceled"
	case reasonError:
		return "error"
	}
	return reasonName(i)
}

// Kinds of attribute sets of a destination.
const (
	setReqDur   = iota // a: status code (0: none), b: outcome
	setAttempts        // a: status class, b: outcome
	setRetries         // a: status class, b: reason
	setGiveUps         // a: status class, b: reason
	setDelay           // b: reason
	setCallDur         // a: status class, b: call reason
)

type setKey struct{ kind, a, b int }

// hostSets are the attribute sets of one destination, built on first use.
type hostSets struct {
	kv   []attribute.KeyValue // method, address, port
	base opts
	sets sync.Map // setKey -> *opts
}

func (h *hostSets) get(kind, a, b int) *opts {
	k := setKey{kind, a, b}
	if v, ok := h.sets.Load(k); ok {
		return v.(*opts)
	}
	kv := append(h.kv[:len(h.kv):len(h.kv)], h.extra(kind, a, b)...)
	o := newOpts(kv...)
	v, _ := h.sets.LoadOrStore(k, &o)
	return v.(*opts)
}

func (h *hostSets) extra(kind, a, b int) []attribute.KeyValue {
	switch kind {
	case setReqDur:
		if a == 0 {
			// No response: the outcome class says what went wrong. (An
			// attempt that succeeded but whose response the transport
			// then refused, too large, has none to name.)
			t := outcomeName(b)
			if b == int(retry.OutcomeSuccess) {
				t = "_OTHER"
			}
			return []attribute.KeyValue{keyErrorType.String(t)}
		}
		kv := []attribute.KeyValue{keyStatusCode.Int(a)}
		if a >= 400 {
			kv = append(kv, keyErrorType.String(strconv.Itoa(a)))
		}
		return kv
	case setAttempts:
		return []attribute.KeyValue{keyStatusClass.String(classNames[a]), keyOutcome.String(outcomeName(b))}
	case setRetries, setGiveUps:
		return []attribute.KeyValue{keyStatusClass.String(classNames[a]), keyReason.String(reasonName(b))}
	case setDelay:
		return []attribute.KeyValue{keyReason.String(reasonName(b))}
	default: // setCallDur
		return []attribute.KeyValue{keyStatusClass.String(classNames[a]), keyReason.String(callReasonName(b))}
	}
}

// hostTable holds the destinations seen, up to maxHosts.
type hostTable struct {
	m     sync.Map // hostKey -> *hostSets
	mu    sync.Mutex
	n     int
	other sync.Map // method -> *hostSets for destinations past maxHosts
}

type hostKey struct{ method, host string }

func (t *hostTable) get(method string, u *url.URL) *hostSets {
	method = normalizeMethod(method)
	k := hostKey{method, u.Host}
	if v, ok := t.m.Load(k); ok {
		return v.(*hostSets)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if v, ok := t.m.Load(k); ok {
		return v.(*hostSets)
	}
	if t.n >= maxHosts {
		if v, ok := t.other.Load(method); ok {
			return v.(*hostSets)
		}
		hs := newHostSets(keyMethod.String(method), keyAddress.String("_OTHER"))
		t.other.Store(method, hs)
		return hs
	}
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	p, _ := strconv.Atoi(port)
	hs := newHostSets(keyMethod.String(method), keyAddress.String(redact.Host(u.Hostname())), keyPort.Int(p))
	t.m.Store(k, hs)
	t.n++
	return hs
}

func newHostSets(kv ...attribute.KeyValue) *hostSets {
	return &hostSets{kv: kv, base: newOpts(kv...)}
}

// normalizeMethod returns the method as the semantic conventions want it:
// a known method, or "_OTHER" (so that made-up methods do not make series).
func normalizeMethod(m string) string {
	switch m {
	case "":
		return http.MethodGet
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace, "QUERY":
		return m
	}
	return "_OTHER"
}
