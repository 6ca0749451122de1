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
// Outcome classes and what becomes of them:
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
// minus a margin), and Retry-Attempt: N when this call will retry the
// request itself (attempts left, a repeatable request) or passes on the
// claim of a caller upstream. A server wrapped in deadline.Middleware (or
// [Handler]) adopts the first as its deadline and, because of the second,
// marks its context: heed clients it calls under that context make a
// single attempt, so a chain of services makes (1+r) attempts, not
// (1+r)^hops, and a client that will not retry leaves the retries to the
// layer below. When a Transport's breaker refuses a call made under such a
// server's context, the server's answer carries Upstream-Breaker: open, and
// a Transport that receives it with a 5xx neither retries it nor counts it
// against the (healthy) server in its own breaker. Transport.Propagate turns
// the request headers off for hosts that are not heed services (third-party
// APIs).
//
// Hedging (Policy.Hedge, off by default): a request that may be repeated
// and has not been answered after the hedge's delay is sent again beside
// the first, with the next Retry-Attempt; the first acceptable response
// wins, the others are cancelled and their bodies drained. Hedges are
// attempts: they count in Policy.Attempts and in the host's retry budget,
// and its breaker refuses them. An unkeyed POST is never hedged.
//
// With a deadline on the request's context and no Policy.AttemptTimeout, an
// attempt may take all the time left: a slow server that is working is not
// cut off. Transport.AttemptShare (none by default) limits an attempt that
// may still be retried to a share of the time left, so that a server that
// never answers leaves time for a retry, at the price of cutting off slow
// answers.
//
// Secrets: log records and returned errors show URLs through [RedactURL]
// and idempotency keys as the first 8 hex digits of their SHA-256 (the
// hash idempotency.Middleware logs for the same key); header values are
// never logged.
// Errors carry no URL of their own; http.Client.Do wraps them in a
// *url.Error that quotes the raw URL: log [RedactError](err), which says
// the redacted URL once.
package retryhttp

import (
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/heed-go/heed/breaker"
	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/internal/dest"
	"github.com/heed-go/heed/retry"
)

// Defaults for the zero fields of a [Transport].
const (
	// defaultMaxBufferedBody is how much of a request body without GetBody
	// is buffered so that it can be sent again: 64 KiB. A longer body is
	// sent once and the request is not repeated.
	defaultMaxBufferedBody = 64 << 10
	// defaultDrainLimit is how much of a discarded response body is read
	// before it is closed, so that its connection can be reused: 4 KiB.
	defaultDrainLimit = 4 << 10
	// defaultConnectTimeout limits the dial and TLS handshake of the
	// transport's own base: 10 s.
	defaultConnectTimeout = 10 * time.Second
	// defaultHeaderMargin is subtracted from the time left before it is
	// sent as Timeout-Remaining: 5 ms, for the request's transit and the
	// response's way back.
	defaultHeaderMargin = 5 * time.Millisecond
)

// RetryStatusOff as Transport.RetryStatus retries no status (heed's
// convention: the zero value is the default, a negative number turns a
// setting off).
var RetryStatusOff = []int{-1}

// IdempotencyKeyHeader is the header that makes a request with any method
// safe to repeat, when the server honours it (IETF httpapi draft).
const IdempotencyKeyHeader = "Idempotency-Key"

// DefaultRetryStatus lists the response statuses retried when
// Transport.RetryStatus is empty: 408, 429, 500, 502, 503 and 504.
var DefaultRetryStatus = []int{
	http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusInternalServerError,
	http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout,
}

// Transport is an http.RoundTripper that retries what is safe to repeat.
//
// The zero value is ready to use: the default retry.Policy (3 attempts,
// exponential backoff with full jitter), the process's default retry
// budget per destination host and port (shared with every other Transport
// that calls it), all the time left for each attempt, no breaker, no
// logging. Set the fields before the first request
// and do not change them afterwards. A Transport is safe for concurrent use
// and should be shared: its breakers are per destination host (URL.Host,
// port included; http and https apart) and shared by every request
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
	// by all hosts instead of the per-host ones. Hedge (off by default)
	// hedges the requests this transport would retry (an idempotent
	// method, or an Idempotency-Key with keyed retries allowed, and a body
	// it can send again), each host with a copy of its own that learns
	// that host's latencies; every hedge sends the request's one key and a
	// body of its own (from GetBody, which must then be safe to call from
	// several goroutines at once, as http.NewRequest's is).
	Policy retry.Policy

	// RetryStatus lists the statuses retried (empty: DefaultRetryStatus).
	// [RetryStatusOff], or any list with a negative number in it, retries
	// no status: only transport errors are retried.
	RetryStatus []int

	// KeyedRetriesOff stops requests with an unsafe method (POST, PATCH)
	// from being repeated just because they carry an Idempotency-Key
	// (default: keyed retries are allowed). Use it for servers not known
	// to honour the header.
	KeyedRetriesOff bool

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

	// AttemptShare is the share of the time left before the caller's
	// deadline that an attempt may take when Policy.AttemptTimeout is zero
	// and the call may still retry, such as 0.5 (default: none, so an
	// attempt may take all the time left; negative: none). With a share, a
	// server that accepts and never answers leaves time for a retry, but a
	// slow server that is working is cut off too, and under overload its
	// work is wasted: a FIFO-queued server sends nothing before it works,
	// so the two look alike. The last attempt always may take all the time
	// left. It applies only when the request's context has a deadline; set
	// Policy.AttemptTimeout for calls without one.
	AttemptShare float64

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
	// budget's defaults, a bucket of 5 retries that starts full, refilled
	// by 9% of the requests or 1 a second, whichever is more, and by
	// retries that succeed; a negative Budget.Ratio turns the budgets
	// off). The budgets are shared by every Transport of the process that
	// calls the same host and port with the same Budget: see Budgets.
	Budget budget.Config
	// Budgets keeps the budgets per destination (default: the process's
	// registry, budget.For), keyed by host and port, so that Transports
	// made per call, or one per client object, still spend one budget per
	// destination, as a budget must to bound an outage's load. Give a
	// Transport a registry of its own only to keep its budgets apart (in
	// tests, say).
	Budgets *budget.Registry
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
	// removed: see [RedactURL]; idempotency keys appear as a hash.
	Logger *slog.Logger

	initOnce sync.Once
	initErr  error
	base     http.RoundTripper
	retrySet []int // the statuses retried
	retryMin int   // the lowest of them (no status is below it: a 2xx needs no scan)
	// Per host (URL.Host): the policy with the host's budget and breaker;
	// http apart, so that a host without a port is two destinations, port
	// 80 and port 443, without a per-request key.
	hosts, plainHosts dest.Set
}

// NewClient returns an http.Client whose Transport is a [Transport] with
// policy p and defaults otherwise. It has no Timeout of its own: give each
// request a deadline through its context. Its errors are http.Client's
// *url.Error, which quotes the request's URL as net/http writes it (query
// tokens and fragment included): log [RedactError](err).
func NewClient(p retry.Policy) *http.Client {
	return &http.Client{Transport: &Transport{Policy: p}}
}

func (t *Transport) init() {
	t.initOnce.Do(func() {
		if err := t.Policy.Validate(); err != nil {
			t.initErr = err
			return
		}
		hosts := dest.Config{Policy: t.Policy, Budget: t.Budget, Budgets: t.Budgets,
			Breaker: t.Breaker, OnBreakerChange: t.OnBreakerChange}
		if err := t.hosts.Init(hosts); err != nil {
			t.initErr = err
			return
		}
		t.plainHosts.Init(hosts) // the same config, checked above
		if math.IsNaN(t.AttemptShare) || t.AttemptShare > 1 {
			t.initErr = fmt.Errorf("retryhttp: AttemptShare is %v, must be at most 1 (negative: none)", t.AttemptShare)
			return
		}
		t.base = t.Base
		if t.base == nil {
			ct := t.ConnectTimeout
			if ct <= 0 {
				ct = defaultConnectTimeout
			}
			tr := http.DefaultTransport.(*http.Transport).Clone()
			d := &net.Dialer{Timeout: ct, KeepAlive: 30 * time.Second}
			tr.DialContext = d.DialContext
			tr.TLSHandshakeTimeout = ct
			t.base = tr
		}
		switch {
		case len(t.RetryStatus) == 0:
			t.retrySet = slices.Clone(DefaultRetryStatus)
		case slices.ContainsFunc(t.RetryStatus, func(c int) bool { return c < 0 }):
			t.retrySet = nil // off
		default:
			t.retrySet = slices.Clone(t.RetryStatus)
		}
		t.retryMin = math.MaxInt
		if len(t.retrySet) > 0 {
			t.retryMin = slices.Min(t.retrySet)
		}
	})
}

func (t *Transport) retryable(code int) bool {
	return code >= t.retryMin && slices.Contains(t.retrySet, code)
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
	return !t.KeyedRetriesOff && c.peekKey() != "" && resp.Header.Get("Retry-After") != ""
}

// policy returns the policy of a request to u: the host's copy when each
// host has its own budget or breaker, or the Transport's. It is never
// copied per request, nor written.
func (t *Transport) policy(u *url.URL) *retry.Policy {
	// The budgets are keyed by host and port, the scheme's default port
	// filled in, so that "example.com" and "example.com:443" spend one.
	hosts := &t.hosts
	if u.Scheme == "http" {
		hosts = &t.plainHosts
	}
	return &hosts.Get(u.Host, func() string { return destination(u) }).Policy
}

// destination returns u's host and port, with the scheme's default port
// when u has none: the key of its budget.
func destination(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	port := "80"
	if u.Scheme == "https" {
		port = "443"
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// CloseIdleConnections closes the idle connections of the base transport.
func (t *Transport) CloseIdleConnections() {
	t.init()
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

func (t *Transport) maxBuffered() int64 {
	if t.MaxBufferedBody == 0 {
		return defaultMaxBufferedBody
	}
	return t.MaxBufferedBody
}

func (t *Transport) drainLimit() int64 {
	if t.DrainLimit == 0 {
		return defaultDrainLimit
	}
	return t.DrainLimit
}

func (t *Transport) attemptShare() float64 { return max(t.AttemptShare, 0) }

func (t *Transport) headerMargin() time.Duration {
	if t.HeaderMargin == 0 {
		return defaultHeaderMargin
	}
	return max(t.HeaderMargin, 0)
}
