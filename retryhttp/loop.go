package retryhttp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/heed-go/heed/clock"
	"github.com/heed-go/heed/deadline"
	"github.com/heed-go/heed/internal/clockctx"
	"github.com/heed-go/heed/internal/wire"
	"github.com/heed-go/heed/retry"
)

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
// MaxResponseBody. Those errors, and any other but ctx.Err(), have the
// URL's secrets removed from their message and no URL prefix of their own,
// as http.Transport's errors have none: http.Client.Do adds one, the
// *url.Error "Get \"URL\": ...", which quotes the raw URL; log
// [RedactError](err) to have it redacted, once. Use errors.As and
// errors.Is to reach the cause.
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
	p := t.policy(req.URL)
	var h retry.History // UpstreamOwns is set by run when a decision needs it
	if dl, ok := ctx.Deadline(); ok {
		h.Deadline = dl
	}
	// A request that may hedge keeps what its attempts share in a racer
	// from a pool, written there from the start (a copy made when the
	// race starts cost each hedged request 30 ns of write barriers while
	// the GC marks): its attempts run on goroutines of their own
	// (retry.Call.Race). The others keep it on the stack, and every
	// request keeps its retry.Call there (Race keeps no pointer to it).
	var (
		stack call
		c     = &stack
		r     *racer
		rw    = &rewinder{ok: true}
	)
	if p.Hedge != nil {
		r = racerPool.Get().(*racer)
		c, rw = &r.c, &r.rw
		r.reset(t, req)
	} else {
		*c = call{t: t, req: req}
	}
	c.propagate = t.Propagate == nil || t.Propagate(req)

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
	repeatable := idempotent || c.key != "" && !t.KeyedRetriesOff
	// Ownership is claimed (Retry-Attempt sent) only by a call that will
	// retry this request itself, or that passes on an owner's claim from
	// upstream: a call that will not retry leaves the retries to the layer
	// below.
	c.claim = c.propagate && (repeatable && p.MaxAttempts() != 1 || c.upstreamOwns(ctx))
	if c.claim {
		// Read once, from the caller's context: a race's attempts get a
		// context of their own, and looking through it costs each
		// hedged request one more call.
		c.upAttempt = wire.UpstreamAttempt(ctx)
	}

	// No body (the common case) can be sent again as it is.
	first := req.Body
	if first != nil && first != http.NoBody {
		// A body without GetBody is buffered only if it may be sent again.
		wantRetry := req.GetBody == nil && p.MaxAttempts() != 1 && !c.upstreamOwns(ctx)
		var err error
		if first, *rw, err = prepareBody(req, t.maxBuffered(), wantRetry); err != nil {
			if r != nil {
				r.release()
			}
			return nil, err
		}
	}
	// A request whose caller owns the retries is never hedged
	// (retry.Hedge), nor one that is not safe to repeat.
	hedge := r
	if !repeatable || !rw.ok || c.upstreamOwns(ctx) {
		hedge = nil
	}
	resp, err := c.run(ctx, p, h, first, rw, repeatable, hedge)
	if r != nil {
		r.release() // not deferred in run: a deferred call there cost 30 ns
	}
	if err != nil {
		return nil, urlError(req, err)
	}
	return resp, nil
}

func closeReqBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// call is the state of one RoundTrip.
type call struct {
	t       *Transport
	req     *http.Request
	key     string // the idempotency key sent, if any (see keyRead)
	genKey  string // a generated key to add
	keyRead bool   // key holds the request's Idempotency-Key, if any
	owns    int8   // deadline.UpstreamOwns of the context: 0 unknown, 1 false, 2 true
	// propagate: attempts carry Timeout-Remaining, and Retry-Attempt when
	// claim is set too.
	propagate bool
	claim     bool
	upAttempt int // the upstream owner's attempt number (wire.UpstreamAttempt), read when claim is set
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

// peekKey is idempotencyKey without keeping what it reads, for the
// attempts of a race, which share one call and run at the same time.
func (c *call) peekKey() string {
	if c.keyRead {
		return c.key
	}
	if v := c.req.Header[IdempotencyKeyHeader]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// upstreamOwns returns deadline.UpstreamOwns(ctx), looked up on first use: a
// context lookup walks the whole chain of contexts, and a request that
// succeeds at once never needs it.
func (c *call) upstreamOwns(ctx context.Context) bool {
	if c.owns == 0 {
		c.owns = 1
		if deadline.UpstreamOwns(ctx) {
			c.owns = 2
		}
	}
	return c.owns == 2
}

// attempt is the result of one attempt.
type attempt struct {
	resp   *http.Response
	err    error // the transport error, unmarked
	cancel context.CancelFunc
	// raceCancel ends the context of a race's winner (retry.Call.Race).
	raceCancel context.CancelFunc
	timedOut   bool
	prog       *progress
}

func (c *call) run(ctx context.Context, p *retry.Policy, h retry.History, body io.ReadCloser, rw *rewinder, repeatable bool, r *racer) (*http.Response, error) {
	t := c.t
	clk := p.Clock
	now := clock.Now(clk)
	rc := &retry.Call{Policy: *p, History: h}
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
			return nil, c.refused(ctx, p, rc, body, last)
		}
		if repeatable && lim.Reason == retry.ReasonDeadline && t.AttemptShare > 0 {
			// The share of the time left, so that a retry fits.
			rc.History.UpstreamOwns = c.upstreamOwns(ctx)
			lim = rc.ShareLimit(lim, now, t.attemptShare())
		}
		start := now
		var a attempt
		if r != nil {
			start = c.race(&a, ctx, r, rc, now, lim, body, rw, tracing)
		} else {
			c.send(&a, ctx, c.req, rc.History.Attempts+1, now, lim, body, rw, tracing)
		}
		body = nil
		if a.err == nil && rc.History.Attempts == 0 && !t.retryable(a.resp.StatusCode) && !t.keyedConflict(c, a.resp) && p.Breaker == nil && p.Observe == nil && t.Logger == nil && (p.Hedge == nil || p.Hedge.Delay > 0) {
			// Fast path: a first attempt accepted, and nothing needs the
			// time (a retry that succeeds goes through End, which tells
			// the budget; a hedge sent counts as an attempt, and an
			// adaptive hedge delay learns the latency in End).
			return c.final(a)
		}
		now = clock.Now(clk)

		if a.err != nil && ctx.Err() != nil {
			rc.Abandon(now)
			c.discard(a)
			return nil, ctx.Err()
		}
		cl := c.classify(&a, now, clk, rw, repeatable)
		rc.History.UpstreamOwns = c.upstreamOwns(ctx)
		d := rc.End(now, cl.res)
		last = a.err
		if d.Action != retry.Done || t.Logger != nil || p.Observe != nil {
			c.observe(ctx, p, &attemptLog{class: cl.class, status: cl.status, err: a.err, prog: a.prog, d: d}, now.Sub(start))
		}

		switch d.Action {
		case retry.Done:
			return c.final(a)
		case retry.GiveUp:
			return c.giveUp(rc, a, &cl, d)
		}

		// Retry: free the connection, then wait.
		c.discard(a)
		if err := clockctx.Sleep(ctx, clk, &timer, d.Delay); err != nil {
			return nil, err
		}
		var err error
		if body, err = rw.body(); err != nil {
			return nil, retry.Permanent(err)
		}
		now = clock.Now(clk)
	}
}

// refused ends a call that rc did not admit to another attempt, and
// returns its error; body is the unsent attempt's, last the error of the
// last attempt sent.
func (c *call) refused(ctx context.Context, p *retry.Policy, rc *retry.Call, body io.ReadCloser, last error) error {
	d := rc.Last()
	if d.Reason == retry.ReasonBreakerOpen {
		// Tell our own caller that we are healthy and our
		// dependency is not (when we serve it through
		// deadline.Middleware), so that its breaker does not open.
		deadline.MarkUpstreamOpen(ctx)
	}
	if body != nil {
		body.Close()
	}
	if d.Reason == retry.ReasonDeadline && ctx.Err() != nil {
		return ctx.Err()
	}
	c.observe(ctx, p, &attemptLog{d: d, err: d.Err}, 0)
	if last == nil {
		last = d.Err
	}
	return rc.Exhausted(last)
}

// giveUp returns the result of attempt a, classified as cl, on which rc
// gave up with d.
func (c *call) giveUp(rc *retry.Call, a attempt, cl *classified, d retry.Decision) (*http.Response, error) {
	if a.resp == nil {
		return nil, rc.Exhausted(a.err)
	}
	if cl.hinted && (d.Reason == retry.ReasonDeadline || d.Reason == retry.ReasonTimeBudget || d.Reason == retry.ReasonPushbackTooLong) {
		// The server's wait does not fit: say so with an
		// error carrying its hint, so the caller can come
		// back later, instead of sleeping into the deadline.
		c.discard(a)
		return nil, rc.Exhausted(retry.After(cl.hint, cl.res.Err))
	}
	return c.final(a)
}

// classified is an attempt's result classified for the call protocol.
type classified struct {
	res    retry.Result
	class  attemptClass
	status int
	hint   time.Duration
	hinted bool
}

// classify classifies attempt a, ended at now, for the call protocol: the
// class is handed over as data; an error the transport does not know is
// left to the policy's classifier. It must not change c: the attempts of
// a race call it at the same time. A zero now is read from clk when a
// Retry-After needs it (a race's attempt: most need no clock).
func (c *call) classify(a *attempt, now time.Time, clk clock.Clock, rw *rewinder, repeatable bool) (cl classified) {
	t := c.t
	res := &cl.res
	*res = retry.Result{Err: a.err, TimedOut: a.timedOut}
	if a.err != nil {
		gotConn := -1
		if a.prog != nil {
			gotConn = 0
			if a.prog.bits.Load()&pConn != 0 {
				gotConn = 1
			}
		}
		res.Outcome, cl.class = classifyErr(a.err, gotConn)
		if a.timedOut {
			res.Outcome = retry.OutcomeTimeout // our own limit cut it
		} else if res.Outcome == retry.OutcomeSuccess && errors.Is(a.err, context.DeadlineExceeded) {
			// Neither our limit nor the caller's: a wrapping
			// transport's, say. Worth a retry if time is left.
			res.Outcome = retry.OutcomeTransient
		}
	} else {
		cl.status = a.resp.StatusCode
		if wire.UpstreamOpen(a.resp) {
			// A healthy server whose own dependency is refused by its
			// breaker: not worth a retry, and no failure of this
			// server's, so our breaker does not count it.
			res.Err = &StatusError{StatusCode: cl.status, Status: a.resp.Status}
			res.Outcome = retry.OutcomePermanent
		} else if t.retryable(cl.status) || t.keyedConflict(c, a.resp) {
			cl.class = classRetryableStatus
			se := &StatusError{StatusCode: cl.status, Status: a.resp.Status}
			if v := a.resp.Header.Get("Retry-After"); v != "" {
				if now.IsZero() {
					now = clock.Now(clk)
				}
				cl.hint, cl.hinted = ParseRetryAfter(v, now)
			}
			se.RetryAfter = cl.hint
			res.Err, res.Outcome = se, retry.OutcomeTransient
			if cl.hinted {
				res.Outcome, res.Wait = retry.OutcomePushback, cl.hint
			}
		}
	}
	// Is this attempt safe to repeat?
	canRepeat := rw.ok && (repeatable || cl.class == classNeverSent || cl.status == http.StatusRequestTimeout)
	res.NotRepeatable = !canRepeat
	return cl
}

// race makes the attempt rc admitted at now with the hedges its policy
// allows beside it (retry.Call.Race), for a request that is safe to
// repeat, writes the attempt the call goes on with into a (zero) and
// returns when it started; the others' responses are drained. Each hedge
// sends a body of its own (GetBody, or the buffer).
func (c *call) race(a *attempt, ctx context.Context, r *racer, rc *retry.Call, now time.Time, lim retry.Limit, body io.ReadCloser, rw *rewinder, tracing bool) time.Time {
	// c and rw are r's (see RoundTrip). The attempts must not change
	// them: they read the key with peekKey (c.owns was read by
	// RoundTrip, which races only without an upstream owner).
	if clk := rc.Policy.Clock; r.clk != clk {
		r.clk = clk
	}
	if r.body != body {
		r.body = body
	}
	r.now, r.tracing, r.first = now, tracing, rc.History.Attempts+1
	attempts := rc.History.Attempts
	_, n, cancel := rc.Race(ctx, now, lim, r.fn)
	// The attempts the race made (the first and the hedges sent) filled
	// slots 0 to used-1; the others stay zero.
	k, used := n-r.first, 1+rc.History.Attempts-attempts
	*a = r.slots[k]
	if cancel != nil {
		a.raceCancel = cancel
	}
	start := r.now
	if k > 0 {
		start = r.starts[k]
	}
	for j := range used {
		if j != k {
			c.discard(r.slots[j])
		}
		r.slots[j].clear()
	}
	if r.body != nil {
		r.body = nil
	}
	return start
}

// racer is what the attempts of one race share.
type racer struct {
	c       call
	rw      rewinder
	clk     clock.Clock
	body    io.ReadCloser // the first attempt's
	now     time.Time     // when the first attempt started
	tracing bool
	first   int // the first attempt's number
	slots   [maxRacers]attempt
	starts  [maxRacers]time.Time
	fn      func(ctx context.Context, n int, lim retry.Limit) retry.Result // makes an attempt (see racerPool)
}

// reset makes r's call and rewinder those of a new request req, as
// RoundTrip starts them. A field is written only when it changes: each
// pointer written costs a write barrier while the GC marks.
func (r *racer) reset(t *Transport, req *http.Request) {
	c := &r.c
	if c.t != t {
		c.t = t
	}
	c.req = req
	if c.key != "" {
		c.key = ""
	}
	if c.genKey != "" {
		c.genKey = ""
	}
	c.keyRead, c.owns, c.propagate, c.claim, c.upAttempt = false, 0, false, false, 0
	if r.rw.getBody != nil {
		r.rw.getBody = nil
	}
	if r.rw.buf != nil {
		r.rw.buf = nil
	}
	r.rw.ok = true
}

// release puts r back in the pool, without the request and body it holds
// (the rest is overwritten by the next request).
func (r *racer) release() {
	r.c.req = nil
	if r.rw.getBody != nil || r.rw.buf != nil {
		r.rw.getBody, r.rw.buf = nil, nil
	}
	if r.body != nil {
		r.body = nil
	}
	racerPool.Put(r)
}

var racerPool = sync.Pool{New: func() any {
	r := new(racer)
	// r.fn makes attempt n of the race, the first or a hedge. It is a
	// closure, not a method value r.attempt: a method value calls through
	// a wrapper, which copies the retry.Result once more (a struct of six
	// fields, copied through memory right after it was written: the
	// processor stalls, as the stores cannot be forwarded to the wider
	// loads of the copy).
	r.fn = func(ctx context.Context, n int, lim retry.Limit) retry.Result {
		k := n - r.first
		b, start := r.body, r.now
		if k > 0 {
			start = clock.Now(r.clk)
			var err error
			if b, err = r.rw.body(); err != nil {
				r.slots[k] = attempt{err: err}
				return retry.Result{Err: err, Outcome: retry.OutcomePermanent}
			}
		}
		if k > 0 {
			r.starts[k] = start // the first's is r.now
		}
		a := &r.slots[k] // zero: race clears the slots it used
		r.c.send(a, ctx, r.c.req, n, start, lim, b, &r.rw, r.tracing)
		if a.err == nil && a.resp.StatusCode < 400 && r.rw.ok && !r.c.t.retryable(a.resp.StatusCode) {
			// classAccepted, as classify would say, without its cost (the
			// common case: most races send no hedge and look no further).
			return retry.Result{}
		}
		return r.c.classify(a, time.Time{}, r.clk, &r.rw, true).res
	}
	return r
}}

// clear zeroes a, writing only the fields that are not zero already (a
// pointer written costs a write barrier while the GC marks).
func (a *attempt) clear() {
	if a.resp != nil {
		a.resp = nil
	}
	if a.err != nil {
		a.err = nil
	}
	if a.cancel != nil {
		a.cancel = nil
	}
	if a.raceCancel != nil {
		a.raceCancel = nil
	}
	if a.prog != nil {
		a.prog = nil
	}
	a.timedOut = false
}

// maxRacers is the most attempts a race makes: the first and
// retry.Hedge's largest Max.
const maxRacers = 5

// final returns the response of attempt a to the caller, with a body that
// releases the attempt's context when closed and enforces the size cap.
func (c *call) final(a attempt) (*http.Response, error) {
	resp, max := a.resp, c.t.MaxResponseBody
	if max > 0 && resp.ContentLength > max {
		c.discard(a)
		return nil, retry.Permanent(&bodyTooLargeError{size: resp.ContentLength, max: max})
	}
	if (a.cancel != nil || a.raceCancel != nil || max > 0) && resp.Body != nil && resp.StatusCode != http.StatusSwitchingProtocols {
		resp.Body = &finalBody{rc: resp.Body, cancel: a.cancel, raceCancel: a.raceCancel, max: max, left: max}
	}
	return resp, nil
}

func (c *call) discard(a attempt) {
	discard(a.resp, c.t.drainLimit())
	if a.cancel != nil {
		a.cancel()
	}
	if a.raceCancel != nil {
		a.raceCancel()
	}
}

type bodyTooLargeError struct{ size, max int64 }

func (e *bodyTooLargeError) Error() string {
	return "retryhttp: response body too large: Content-Length " + itoa(e.size) + " exceeds " + itoa(e.max)
}
func (e *bodyTooLargeError) Unwrap() error { return ErrBodyTooLarge }
