// Package retryhttp is an HTTP client that retries only what is safe to
// repeat, only while it may help, and only within the caller's deadline.
//
// Most callers want [NewClient], or a [Transport] set as an http.Client's
// Transport. Every decision to retry or give up is made by retry.Decide
// from a retry.Policy, so an HTTP call behaves like any other heed call.
//
// What is repeated (RFC 9110 §9.2.2): GET, HEAD, OPTIONS, TRACE, PUT and
// DELETE. Other methods only when the request certainly never reached the
// server (DNS, dial or TLS-handshake failure), or when it carries an
// Idempotency-Key header and keyed retries are allowed (the default).
//
// Outcome classes ([Class]) and what becomes of them:
//
//	class             examples                                 retried when
//	accepted          2xx, 3xx, 404, 501: any status not       never: returned as is
//	                  in RetryStatus
//	retryable status  408, 429, 500, 502, 503, 504             the request is repeatable (408: any
//	                  (Retry-After honoured)                   method); on give-up the last response
//	                                                           is returned, not an error
//	never sent        refused, dial timeout, TLS handshake     always, if transient (any method)
//	                  timeout, temporary DNS failure
//	maybe processed   EOF or reset after writing, response     the request is repeatable
//	                  header timeout, attempt timeout
//	permanent         certificate verification, TLS alert,     never
//	                  unknown host, not TLS, unknown errors
//	                  that Policy.Retryable rejects
//
// "Repeatable" means an idempotent method, or an Idempotency-Key with keyed
// retries allowed, and a body that can be sent again (GetBody, or buffered
// up to MaxBufferedBody). A failure that is not repeatable gives up with
// retry.ReasonNotRepeatable. Errors are classified by type (errors.Is,
// errors.As), never by their text; how far an attempt got is recorded with
// net/http/httptrace when it matters (an unsafe request) or is logged.
//
// Note that net/http's own Transport silently resends, on a reused
// keep-alive connection that failed before any response byte, GET, HEAD,
// OPTIONS, TRACE and any request with an Idempotency-Key header, and that
// HTTP/2 resends refused streams: a server may see more requests than this
// transport counts attempts. Servers must deduplicate by key.
//
// Across services: every attempt carries Timeout-Remaining (the time left,
// minus a margin) and Retry-Attempt: N. A server wrapped in [Handler] adopts
// the first as its deadline and, because of the second, marks its context
// with retry.WithUpstreamOwner: heed clients it calls under that context
// make a single attempt, so a chain of services makes (1+r) attempts, not
// (1+r)^hops. Transport.Propagate turns the two headers off for hosts that
// are not heed services (third-party APIs).
//
// Secrets: log records and returned errors show URLs through [RedactURL]
// and idempotency keys through [KeyHash]; header values are never logged.
// Errors come as a *url.Error with the redacted URL; http.Client.Do wraps
// them in its own, which quotes the raw URL: log [RedactError](err).
package retryhttp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heed-go/heed/breaker"
	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/clock"
	"github.com/heed-go/heed/deadline"
	"github.com/heed-go/heed/retry"
)

// Defaults for the zero fields of a [Transport].
const (
	// DefaultMaxBufferedBody is how much of a request body without GetBody
	// is buffered so that it can be sent again: 64 KiB. A longer body is
	// sent once and the request is not repeated.
	DefaultMaxBufferedBody = 64 << 10
	// DefaultDrainLimit is how much of a discarded response body is read
	// before it is closed, so that its connection can be reused: 4 KiB.
	DefaultDrainLimit = 4 << 10
	// DefaultConnectTimeout limits the dial and TLS handshake of the
	// transport's own base: 10 s.
	DefaultConnectTimeout = 10 * time.Second
	// DefaultHeaderMargin is subtracted from the time left before it is
	// sent as Timeout-Remaining: 5 ms, for the request's transit and the
	// response's way back.
	DefaultHeaderMargin = 5 * time.Millisecond
)

// IdempotencyKeyHeader is the header that makes a request with any method
// safe to repeat, when the server honours it (IETF httpapi draft).
const IdempotencyKeyHeader = "Idempotency-Key"

// DefaultRetryStatus lists the response statuses retried when
// Transport.RetryStatus is nil: 408, 429, 500, 502, 503 and 504.
var DefaultRetryStatus = []int{
	http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusInternalServerError,
	http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout,
}

// Transport is an http.RoundTripper that retries what is safe to repeat.
//
// The zero value is ready to use: the default retry.Policy (3 attempts,
// exponential backoff with full jitter), a default retry budget per
// destination host, no breaker, no logging. Set the fields before the
// first request and do not change them afterwards. A Transport is safe for
// concurrent use and should be shared: its budgets and breakers are per
// destination host (URL.Host, port included) and shared by every request
// through it; one is kept for every host the Transport has called, for its
// lifetime.
type Transport struct {
	// Base makes each attempt (default: a clone of http.DefaultTransport
	// whose dial and TLS handshake are limited by ConnectTimeout).
	Base http.RoundTripper

	// Policy decides retries. Its Attempts, Backoff, AttemptTimeout (the
	// per-attempt timeout, which also bounds reading the final body),
	// TimeBudget, MinAttemptTime, MaxPushback (the cap on Retry-After,
	// default 30 s), Clock and Rand apply as in retry.Do. Observe is
	// called after every attempt. Retryable classifies transport errors
	// the transport does not know. A Budget or Breaker set here is shared
	// by all hosts instead of the per-host ones.
	Policy retry.Policy

	// RetryStatus lists the statuses retried (nil: DefaultRetryStatus;
	// an empty, non-nil slice: none).
	RetryStatus []int

	// NoKeyedRetries stops requests with an unsafe method (POST, PATCH)
	// from being repeated just because they carry an Idempotency-Key
	// (default: keyed retries are allowed). Use it for servers not known
	// to honour the header.
	NoKeyedRetries bool

	// GenerateKey adds an Idempotency-Key to every request with an unsafe
	// method that has none, the same for all its attempts: a random UUID,
	// quoted as the draft's sf-string (default: off).
	GenerateKey bool

	// ConnectTimeout limits the dial and TLS handshake of each connection
	// when Base is nil (default 10 s). With your own Base, set its
	// dialer's timeout instead.
	ConnectTimeout time.Duration

	// MaxBufferedBody is how much of a request body without GetBody is
	// buffered to be sent again (default 64 KiB; negative: never buffer,
	// so such requests are sent once).
	MaxBufferedBody int64

	// MaxResponseBody caps the final response body (default: no cap). A
	// larger Content-Length fails RoundTrip with ErrBodyTooLarge; a body
	// that grows past the cap fails its Read with ErrBodyTooLarge.
	MaxResponseBody int64

	// DrainLimit is how much of a discarded response body is read before
	// closing it (default 4 KiB; negative: close unread).
	DrainLimit int64

	// HeaderMargin is subtracted from the time left before it is sent as
	// Timeout-Remaining (default 5 ms).
	HeaderMargin time.Duration

	// Propagate chooses the requests that carry the propagation headers,
	// Retry-Attempt and Timeout-Remaining (default, nil: every request).
	// They are on by default because they are what keeps one retry owner
	// in a chain of heed services: a server wrapped in [Handler] adopts the
	// deadline and, seeing Retry-Attempt, makes its own heed clients try
	// once, so a chain of services makes (1+r) attempts, not (1+r)^hops.
	// To a third-party API they mean nothing and tell it how you retry and
	// how long you wait: return false for hosts that are not yours, for
	// example with [PropagateTo]. A request without them costs less (no
	// copy of its header), and is otherwise retried the same way.
	Propagate func(*http.Request) bool

	// Budget configures the retry budget of each destination host (zero:
	// budget's defaults, 10% of requests plus 1 retry per second).
	Budget budget.Config
	// NoBudget turns the per-host retry budgets off.
	NoBudget bool
	// Breaker, when set, gives each destination host a circuit breaker
	// with this configuration (default: none).
	Breaker *breaker.Config
	// OnBreakerChange, when set, is called on every change of state of a
	// host's breaker, with the host (URL.Host, port included), after
	// Breaker.OnStateChange (which is shared by every host's breaker and
	// cannot tell them apart). It is called as OnStateChange is: one call
	// at a time per breaker, in order.
	OnBreakerChange func(host string, from, to breaker.State, at time.Time)

	// Logger, when set, receives one record per attempt (Debug for a
	// success, Info for a retry, Warn for a give-up), with secrets
	// removed: see [RedactURL] and [KeyHash].
	Logger *slog.Logger

	initOnce sync.Once
	initErr  error
	base     http.RoundTripper
	perHost  bool      // each host has its own budget or breaker
	retrySet [8]uint64 // bitset of statuses 0..511
	hosts    sync.Map  // host -> *hostState
	// lastHost is the host state created last: a Transport that calls one
	// host finds it here without hashing the host into hosts. It is only
	// ever set to a state that hosts holds, and states do not change once
	// stored, so a stale value is merely a miss.
	lastHost atomic.Pointer[hostState]
}

// hostState is what a Transport keeps per destination host. It does not
// change once stored in Transport.hosts.
type hostState struct {
	name string // the host, as in URL.Host
	// policy is Transport.Policy with the host's budget and breaker set
	// (where the Policy has none of its own): built once per host, so
	// that a request need not copy the Policy to add them.
	policy retry.Policy
}

// NewClient returns an http.Client whose Transport is a [Transport] with
// policy p and defaults otherwise. It has no Timeout of its own: give each
// request a deadline through its context.
func NewClient(p retry.Policy) *http.Client {
	return &http.Client{Transport: &Transport{Policy: p}}
}

func (t *Transport) init() {
	t.initOnce.Do(func() {
		if err := t.Policy.Validate(); err != nil {
			t.initErr = err
			return
		}
		if !t.NoBudget {
			if err := t.Budget.Validate(); err != nil {
				t.initErr = err
				return
			}
		}
		if t.Breaker != nil {
			// Each host's breaker is made on first use: check the config
			// now, so that a bad one fails every request, as a bad budget
			// does, instead of leaving the hosts without a breaker.
			if _, err := breaker.New(*t.Breaker); err != nil {
				t.initErr = err
				return
			}
		}
		t.base = t.Base
		if t.base == nil {
			ct := t.ConnectTimeout
			if ct <= 0 {
				ct = DefaultConnectTimeout
			}
			tr := http.DefaultTransport.(*http.Transport).Clone()
			d := &net.Dialer{Timeout: ct, KeepAlive: 30 * time.Second}
			tr.DialContext = d.DialContext
			tr.TLSHandshakeTimeout = ct
			t.base = tr
		}
		t.perHost = t.Policy.Budget == nil && !t.NoBudget || t.Policy.Breaker == nil && t.Breaker != nil
		codes := t.RetryStatus
		if codes == nil {
			codes = DefaultRetryStatus
		}
		for _, c := range codes {
			if c >= 0 && c < 512 {
				t.retrySet[c/64] |= 1 << (c % 64)
			}
		}
	})
}

func (t *Transport) retryable(code int) bool {
	return code >= 0 && code < 512 && t.retrySet[code/64]&(1<<(code%64)) != 0
}

// keyedConflict reports whether resp is an Idempotency-Key server saying
// that a request with the same key is still being processed: a 409 with a
// Retry-After, to a request that carries a key, with keyed retries
// allowed (the IETF draft's answer to a concurrent duplicate; heed's
// idempotency middleware sends it). Such a request is repeated after the
// wait; any other 409 is final. It is small enough to be inlined, so that
// a response that is no 409 costs no call.
func (t *Transport) keyedConflict(c *call, resp *http.Response) bool {
	return resp.StatusCode == http.StatusConflict && t.keyedWait(c, resp)
}

// keyedWait is the rest of keyedConflict, for a 409.
func (t *Transport) keyedWait(c *call, resp *http.Response) bool {
	return !t.NoKeyedRetries && c.idempotencyKey() != "" && resp.Header.Get("Retry-After") != ""
}

// host returns the state of destination host h, creating it on first use.
func (t *Transport) host(h string) *hostState {
	if hs := t.lastHost.Load(); hs != nil && hs.name == h {
		return hs
	}
	if v, ok := t.hosts.Load(h); ok {
		return v.(*hostState)
	}
	hs := &hostState{name: h, policy: t.Policy}
	if !t.NoBudget && t.Policy.Budget == nil {
		hs.policy.Budget, _ = budget.New(t.Budget) // validated in init
	}
	if t.Breaker != nil && t.Policy.Breaker == nil {
		cfg := *t.Breaker
		if each, all := t.OnBreakerChange, cfg.OnStateChange; each != nil {
			cfg.OnStateChange = func(from, to breaker.State, at time.Time) {
				if all != nil {
					all(from, to, at)
				}
				each(h, from, to, at)
			}
		}
		hs.policy.Breaker, _ = breaker.New(cfg) // validated in init
	}
	v, loaded := t.hosts.LoadOrStore(h, hs)
	if !loaded {
		t.lastHost.Store(hs)
	}
	return v.(*hostState)
}

// CloseIdleConnections closes the idle connections of the base transport.
func (t *Transport) CloseIdleConnections() {
	t.init()
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

type opKey struct{}

// WithOperation returns a context whose requests are logged under the
// operation name op (default: the method and host).
func WithOperation(ctx context.Context, op string) context.Context {
	return context.WithValue(ctx, opKey{}, op)
}

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
	return []string{deadline.FormatRetryAttempt(n)}
}

// progress records how far an attempt got, from httptrace callbacks that
// may run on other goroutines.
type progress struct{ bits atomic.Uint32 }

const (
	pConn uint32 = 1 << iota
	pReused
	pWroteHeaders
	pWroteRequest
	pFirstByte
)

func (p *progress) trace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		GotConn: func(i httptrace.GotConnInfo) {
			b := pConn
			if i.Reused {
				b |= pReused
			}
			p.bits.Or(b)
		},
		WroteHeaders:         func() { p.bits.Or(pWroteHeaders) },
		WroteRequest:         func(httptrace.WroteRequestInfo) { p.bits.Or(pWroteRequest) },
		GotFirstResponseByte: func() { p.bits.Or(pFirstByte) },
	}
}

// String names the furthest stage reached: "no connection", "connected",
// "connected (reused)", "headers written", "request written",
// "response started".
func (p *progress) String() string {
	b := p.bits.Load()
	var s string
	switch {
	case b&pFirstByte != 0:
		s = "response started"
	case b&pWroteRequest != 0:
		s = "request written"
	case b&pWroteHeaders != 0:
		s = "headers written"
	case b&pConn != 0:
		s = "connected"
	default:
		return "no connection"
	}
	if b&pReused != 0 {
		s += " (reused connection)"
	}
	return s
}

// RoundTrip sends req, repeating it as the policy says when that is safe.
//
// It follows the http.RoundTripper contract: it does not modify req (each
// attempt is a copy), always closes req's body, and returns an error only
// when it has no response to return. After a retryable status it returns
// the last response when it gives up. The returned body stays readable
// until closed; closing it releases the attempt's context.
//
// It returns ctx.Err() when req's context ends; a *retry.ExhaustedError
// (matching retry.ErrExhausted, and budget.ErrExhausted or breaker.ErrOpen
// when those ended the call) when it gives up without a response; and an
// error wrapping ErrBodyTooLarge when the response is larger than
// MaxResponseBody. Those errors, and any other but ctx.Err(), come as a
// *url.Error whose URL is the redacted one ([RedactURL]) and whose message
// has the URL's secrets removed, so that err.Error() is safe to log; use
// errors.As and errors.Is to reach the cause. (http.Client.Do wraps them
// again with the raw URL: see [RedactError].)
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.init()
	if t.initErr != nil {
		closeReqBody(req)
		return nil, t.initErr
	}
	if req.URL == nil {
		closeReqBody(req)
		return nil, errors.New("retryhttp: nil Request.URL")
	}
	ctx := req.Context()
	if err := ctx.Err(); err != nil {
		closeReqBody(req)
		return nil, err
	}
	// The policy, never copied per request: the host's copy when the host
	// has its own budget or breaker, or the Transport's. Neither is written.
	p := &t.Policy
	if t.perHost {
		p = &t.host(req.URL.Host).policy
	}
	var h retry.History // UpstreamOwns is set by run when a decision needs it
	if dl, ok := ctx.Deadline(); ok {
		h.Deadline = dl
	}
	c := call{t: t, req: req, propagate: t.Propagate == nil || t.Propagate(req)}

	// Idempotency: by method, or by key. With an idempotent method the key
	// matters only for a 409 and for logging: it is read when needed.
	idempotent := idempotentMethod(req.Method)
	if !idempotent || t.Logger != nil {
		c.readKey()
	}
	if c.key == "" && t.GenerateKey && !idempotent {
		c.genKey = newKey()
		c.key = c.genKey
	}
	repeatable := idempotent || c.key != "" && !t.NoKeyedRetries

	// No body (the common case) can be sent again as it is.
	first, rw := req.Body, rewinder{ok: true}
	if first != nil && first != http.NoBody {
		// A body without GetBody is buffered only if it may be sent again.
		wantRetry := req.GetBody == nil && p.MaxAttempts() != 1 && !c.upstreamOwns(ctx)
		var err error
		if first, rw, err = prepareBody(req, t.maxBuffered(), wantRetry); err != nil {
			return nil, err
		}
	}
	resp, err := c.run(ctx, p, h, first, &rw, repeatable)
	if err != nil {
		return nil, urlError(req, err)
	}
	return resp, nil
}

func (t *Transport) maxBuffered() int64 {
	if t.MaxBufferedBody == 0 {
		return DefaultMaxBufferedBody
	}
	return t.MaxBufferedBody
}

func (t *Transport) drainLimit() int64 {
	if t.DrainLimit == 0 {
		return DefaultDrainLimit
	}
	return t.DrainLimit
}

func (t *Transport) headerMargin() time.Duration {
	if t.HeaderMargin == 0 {
		return DefaultHeaderMargin
	}
	return max(t.HeaderMargin, 0)
}

func closeReqBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
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

// call is the state of one RoundTrip.
type call struct {
	t       *Transport
	req     *http.Request
	key     string // the idempotency key sent, if any (see keyRead)
	genKey  string // a generated key to add
	keyRead bool   // key holds the request's Idempotency-Key, if any
	owns    int8   // retry.UpstreamOwns of the context: 0 unknown, 1 false, 2 true
	// propagate: attempts carry Retry-Attempt and Timeout-Remaining.
	propagate bool
}

// readKey reads the request's Idempotency-Key into c.key.
func (c *call) readKey() {
	if v := c.req.Header[IdempotencyKeyHeader]; len(v) > 0 { // canonical already: no Get
		c.key = v[0]
	}
	c.keyRead = true
}

// idempotencyKey returns the idempotency key sent with the request, if
// any, reading the request's header on first use.
func (c *call) idempotencyKey() string {
	if !c.keyRead {
		c.readKey()
	}
	return c.key
}

// upstreamOwns returns retry.UpstreamOwns(ctx), looked up on first use: a
// context lookup walks the whole chain of contexts, and a request that
// succeeds at once never needs it.
func (c *call) upstreamOwns(ctx context.Context) bool {
	if c.owns == 0 {
		c.owns = 1
		if retry.UpstreamOwns(ctx) {
			c.owns = 2
		}
	}
	return c.owns == 2
}

// attempt is the result of one attempt.
type attempt struct {
	resp     *http.Response
	err      error // the transport error, unmarked
	cancel   context.CancelFunc
	timedOut bool
	prog     *progress
}

func (c *call) run(ctx context.Context, p *retry.Policy, h retry.History, body io.ReadCloser, rw *rewinder, repeatable bool) (*http.Response, error) {
	t := c.t
	clk := p.Clock
	now := clock.Now(clk)
	rc := retry.Call{Policy: *p, History: h}
	var (
		timer clock.Timer
		last  error // the last attempt's error
	)
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	// Tracing costs allocations; it is on when it can change a decision
	// (a request that is not repeatable unless it never left) or when
	// attempts are logged.
	tracing := t.Logger != nil || !repeatable
	for {
		lim, ok := rc.Admit(now)
		if !ok {
			d := rc.Last()
			if body != nil {
				body.Close()
			}
			if d.Reason == retry.ReasonDeadline && ctx.Err() != nil {
				return nil, ctx.Err()
			}
			c.observe(ctx, p, &attemptLog{d: d, err: d.Err}, 0)
			if last == nil {
				last = d.Err
			}
			return nil, rc.Exhausted(last)
		}
		start := now
		a := c.send(ctx, c.req, rc.History.Attempts+1, now, lim, body, rw, tracing)
		body = nil
		if a.err == nil && !t.retryable(a.resp.StatusCode) && !t.keyedConflict(c, a.resp) && p.Breaker == nil && p.Observe == nil && t.Logger == nil {
			// Fast path: accepted, and nothing needs the time.
			return c.final(a)
		}
		now = clock.Now(clk)

		if a.err != nil && ctx.Err() != nil {
			rc.Abandon(now)
			if a.cancel != nil {
				a.cancel()
			}
			return nil, ctx.Err()
		}

		// Classify the attempt for the call protocol: the class is handed
		// over as data; an error the transport does not know is left to
		// the policy's classifier.
		var (
			res    = retry.Result{Err: a.err, TimedOut: a.timedOut}
			class  Class
			status int
			hint   time.Duration
			hinted bool
		)
		if a.err != nil {
			gotConn := -1
			if a.prog != nil {
				gotConn = 0
				if a.prog.bits.Load()&pConn != 0 {
					gotConn = 1
				}
			}
			res.Outcome, class = classifyErr(a.err, gotConn)
			if a.timedOut {
				res.Outcome = retry.OutcomeTimeout // our own limit cut it
			} else if res.Outcome == retry.OutcomeOK && errors.Is(a.err, context.DeadlineExceeded) {
				// Neither our limit nor the caller's: a wrapping
				// transport's, say. Worth a retry if time is left.
				res.Outcome = retry.OutcomeTransient
			}
		} else {
			status = a.resp.StatusCode
			if t.retryable(status) || t.keyedConflict(c, a.resp) {
				class = RetryableStatus
				se := &StatusError{StatusCode: status, Status: a.resp.Status}
				if v := a.resp.Header.Get("Retry-After"); v != "" {
					hint, hinted = ParseRetryAfter(v, now)
				}
				se.RetryAfter = hint
				res.Err, res.Outcome = se, retry.OutcomeTransient
				if hinted {
					res.Outcome, res.Wait = retry.OutcomePushback, hint
				}
			}
		}
		// Is this attempt safe to repeat?
		canRepeat := rw.ok && (repeatable || class == NeverSent || status == http.StatusRequestTimeout)
		res.NotRepeatable = !canRepeat
		rc.History.UpstreamOwns = c.upstreamOwns(ctx)
		d := rc.End(now, res)
		last = a.err
		if d.Action != retry.Done || t.Logger != nil || p.Observe != nil {
			c.observe(ctx, p, &attemptLog{class: class, status: status, err: a.err, prog: a.prog, d: d}, now.Sub(start))
		}

		switch d.Action {
		case retry.Done:
			return c.final(a)
		case retry.GiveUp:
			if a.resp != nil {
				if hinted && (d.Reason == retry.ReasonDeadline || d.Reason == retry.ReasonTimeBudget || d.Reason == retry.ReasonPushbackTooLong) {
					// The server's wait does not fit: say so with an
					// error carrying its hint, so the caller can come
					// back later, instead of sleeping into the deadline.
					c.discard(a)
					return nil, rc.Exhausted(retry.After(hint, res.Err))
				}
				return c.final(a)
			}
			return nil, rc.Exhausted(a.err)
		}

		// Retry: free the connection, then wait.
		c.discard(a)
		if d.Delay > 0 {
			if timer == nil {
				timer = clock.Or(clk).NewTimer(d.Delay)
			} else {
				timer.Reset(d.Delay)
			}
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-timer.C():
			}
		} else if err := ctx.Err(); err != nil {
			return nil, err
		}
		var err error
		if body, err = rw.body(); err != nil {
			return nil, retry.Permanent(err)
		}
		now = clock.Now(clk)
	}
}

// send makes attempt number n, which must end by lim.
func (c *call) send(ctx context.Context, req *http.Request, n int, now time.Time, lim retry.Limit, body io.ReadCloser, rw *rewinder, tracing bool) (a attempt) {
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
		return a
	}

	// A shallow copy of req with its own header map: the caller's request
	// and header are never written to.
	r := req.WithContext(actx)
	r.Header = copyHeader(req.Header)
	hdr := r.Header
	if c.propagate {
		hdr[deadline.RetryAttemptHeader] = attemptValue(n)
		if !lim.At.IsZero() {
			hdr[deadline.Header] = []string{deadline.FormatHeader(lim.At.Sub(now) - t.headerMargin())}
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
	return a
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

// final returns the response of attempt a to the caller, with a body that
// releases the attempt's context when closed and enforces the size cap.
func (c *call) final(a attempt) (*http.Response, error) {
	resp, max := a.resp, c.t.MaxResponseBody
	if max > 0 && resp.ContentLength > max {
		c.discard(a)
		return nil, retry.Permanent(&bodyTooLargeError{size: resp.ContentLength, max: max})
	}
	if (a.cancel != nil || max > 0) && resp.Body != nil && resp.StatusCode != http.StatusSwitchingProtocols {
		resp.Body = &finalBody{rc: resp.Body, cancel: a.cancel, max: max, left: max}
	}
	return resp, nil
}

func (c *call) discard(a attempt) {
	discard(a.resp, c.t.drainLimit())
	if a.cancel != nil {
		a.cancel()
	}
}

type bodyTooLargeError struct{ size, max int64 }

func (e *bodyTooLargeError) Error() string {
	return "retryhttp: response body too large: Content-Length " + itoa(e.size) + " exceeds " + itoa(e.max)
}
func (e *bodyTooLargeError) Unwrap() error { return ErrBodyTooLarge }

// observe logs the attempt and calls the policy's Observe.
func (c *call) observe(ctx context.Context, p *retry.Policy, l *attemptLog, dur time.Duration) {
	if p.Observe != nil {
		p.Observe(ctx, retry.Event{Decision: l.d, Duration: dur})
	}
	lg := c.t.Logger
	if lg == nil {
		return
	}
	req := c.req
	l.duration = dur
	l.method = req.Method
	if l.method == "" {
		l.method = http.MethodGet
	}
	l.host = req.URL.Hostname()
	l.url = RedactURL(req.URL)
	if op, ok := ctx.Value(opKey{}).(string); ok {
		l.op = op
	} else {
		l.op = l.method + " " + l.host
	}
	if k := c.idempotencyKey(); k != "" {
		l.keyHash = KeyHash(k)
	}
	logAttempt(ctx, lg, l, req.URL)
}

func itoa(n int64) string {
	var b [20]byte
	i := len(b)
	neg := n < 0
	if neg {
		n = -n
	}
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			break
		}
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}
