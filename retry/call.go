package retry

import (
	"errors"
	"time"

	"github.com/heed-go/heed/breaker"
)

// Call is the call protocol: the steps around [Decide] that every executor
// of a [Policy] shares, so that one policy behaves the same in [Do], the
// HTTP transport (retryhttp), the job queue (queue) and the simulator (sim).
// An executor supplies only what is its own: how to make an attempt and how
// to wait (a timer, a job's available_at, a virtual event).
//
// For every attempt the executor calls [Call.Admit], makes the attempt if
// admitted, ending it at the [Limit] Admit returned at the latest, and then
// calls [Call.End] with what the attempt produced:
//
//	c := retry.Call{Policy: p, History: retry.History{Deadline: dl}}
//	for {
//		lim, ok := c.Admit(now)
//		if !ok {
//			return c.Last() // refused: give up (or, for a durable call, defer)
//		}
//		err := attempt(lim) // ends by lim.At
//		d := c.End(now, retry.Result{Err: err})
//		if d.Action != retry.Retry {
//			return d
//		}
//		wait until d.At
//	}
//
// Admit asks the breaker, counts the call's first attempt as a request in
// the retry budget, and works out when the attempt must end. End classifies
// the result (or takes the executor's class), records the outcome in the
// breaker, decides, and keeps the trace. An executor whose caller gave up
// mid-attempt calls [Call.Abandon] instead of End.
//
// A durable call (Durable: a job that waits for its retries in a store, not
// in a goroutine) is never ended by a refusal that passes with time: while
// the breaker is open or the retry budget is empty, Admit defers it
// (Action [Defer], with the reason and the time to try again) without
// running the attempt, and a retry's budget is asked when the retry is about
// to start, not when the attempt before it failed.
//
// A Call is a value kept by one executor for one call; it is not safe for
// concurrent use. Its zero value is a call under the zero Policy. A call whose
// first attempt has not started has a zero History (Deadline and
// UpstreamOwns aside); a durable call resumed from a store sets History
// from what it stored.
type Call struct {
	// Policy is the call's policy, a copy: a Call kept on the stack then
	// allocates nothing. Its Budget and Breaker are shared with other
	// calls, which is the point of them.
	Policy Policy
	// History is what the call has done so far; Admit and End keep it.
	History History
	// Durable makes the call a durable one (see above): refusals by the
	// breaker or the budget defer it, and a server's wait longer than
	// MaxPushback is honoured (the time budget still bounds it) instead of
	// given up on.
	Durable bool

	permit breaker.Permit
	start  time.Time // when the attempt that ended last started, with a Hedge
	// hedges is the hedges sent so far; raceHedges and raceWon describe
	// the race of the attempt that ended last, for its decision.
	hedges     int
	raceHedges int
	raceWon    bool
	n          int                   // decisions in the trace
	buf        [traceInline]Decision // the first decisions of the trace
	rest       []Decision            // the others
}

// Limit is when an attempt must end at the latest, and which limit ends it
// there.
type Limit struct {
	// At is the end of the attempt; zero for none.
	At time.Time
	// Reason is the limit at At: ReasonTimeout (the policy's
	// AttemptTimeout), ReasonTimeBudget (its TimeBudget) or ReasonDeadline
	// (the caller's deadline). When two end at the same time, the caller's
	// deadline wins, then the attempt's own timeout.
	Reason Reason
}

// Result is what one attempt produced, as its executor hands it to
// [Call.End].
type Result struct {
	// Err is the attempt's error; nil for success.
	Err error
	// Outcome is the class of the result when the executor has classified
	// it itself (an HTTP status, say). When it is zero (OutcomeSuccess) and Err
	// is not nil, the policy classifies Err ([Policy.Classify]).
	Outcome Outcome
	// Wait is the wait the server asked for, with OutcomePushback.
	Wait time.Duration
	// TimedOut says the attempt was cut off at its Limit by the policy's
	// own limits (AttemptTimeout or TimeBudget), not the caller's
	// deadline. Its failure is then a timeout.
	TimedOut bool
	// NotRepeatable says the attempt may have been processed and repeating
	// it is not known to be safe: its failure gives up with
	// ReasonNotRepeatable.
	NotRepeatable bool
	// Hedge says the result is a hedge's (see [Call.Hedge]), not the
	// attempt's it raced.
	Hedge bool
}

// Errors of decisions taken before an attempt could start.
var (
	errNoTimeBudget = errors.New("retry: time budget ended before the attempt started")
	errNoDeadline   = errors.New("retry: deadline passed before the attempt started")
)

// Admit prepares the call's next attempt at now. When the attempt may
// start, it returns the attempt's [Limit] and true. Otherwise it returns
// false, and [Call.Last] is the decision that stops the call: a give-up
// (ReasonBreakerOpen when the breaker refuses; ReasonTimeBudget or
// ReasonDeadline when no time is left) or, for a durable call, a [Defer] to
// the time the breaker or the budget may admit it. A refused attempt does
// not count as one.
//
// Admit counts the first attempt as a request in the policy's Budget. For a
// durable call it also asks the budget for every retry.
func (c *Call) Admit(now time.Time) (Limit, bool) {
	p, h := &c.Policy, &c.History
	if h.Attempts == 0 && h.Start.IsZero() {
		h.Start = now
	}
	lim := c.limit(now)
	if lim.Reason != ReasonTimeout && !lim.At.IsZero() && !now.Before(lim.At) {
		err := errNoTimeBudget
		if lim.Reason == ReasonDeadline {
			err = errNoDeadline
		}
		c.refuse(GiveUp, lim.Reason, err, now, now)
		return lim, false
	}
	if p.Breaker != nil {
		permit, err := p.Breaker.AllowAt(now)
		if err != nil {
			if c.Durable {
				c.refuse(Defer, ReasonBreakerOpen, err, now, p.Breaker.ReadyAt(now))
			} else {
				c.refuse(GiveUp, ReasonBreakerOpen, err, now, now)
			}
			return lim, false
		}
		c.permit = permit
	}
	if b := p.Budget; b != nil {
		switch {
		case h.Attempts == 0:
			b.RequestAt(now)
		case c.Durable && !b.AllowRetryAt(now):
			c.Abandon(now)
			c.refuse(Defer, ReasonBudget, errBudget, now, b.RefillAt(now))
			return lim, false
		}
	}
	return lim, true
}

// Last returns the last decision in the trace: after a refused Admit, the
// refusal; after a retry or a give-up, that decision. It is the zero
// Decision when there is none.
func (c *Call) Last() Decision {
	switch {
	case c.n == 0:
		return Decision{}
	case c.n <= traceInline:
		return c.buf[c.n-1]
	}
	return c.rest[len(c.rest)-1]
}

// errBudget is the error of a durable retry the budget deferred.
var errBudget = errors.New("retry: retry budget empty")

// refuse builds and records the decision of an attempt that did not start.
func (c *Call) refuse(a Action, r Reason, err error, now, at time.Time) {
	d := Decision{Action: a, Reason: r, Attempt: c.History.Attempts, Err: err, At: at}
	if a == Defer {
		d.Delay = max(at.Sub(now), 0)
	}
	if !c.History.Start.IsZero() && !now.IsZero() {
		d.Elapsed = now.Sub(c.History.Start)
	}
	c.record(d)
}

// limit returns the end of an attempt starting at now.
func (c *Call) limit(now time.Time) Limit { return limitAt(&c.Policy, &c.History, now) }

// limitAt returns the end of an attempt starting at now of a call under p
// with history h.
func limitAt(p *Policy, h *History, now time.Time) Limit {
	var l Limit
	if p.AttemptTimeout > 0 {
		l = Limit{At: now.Add(p.AttemptTimeout), Reason: ReasonTimeout}
	}
	if p.TimeBudget > 0 && !h.Start.IsZero() {
		if end := h.Start.Add(p.TimeBudget); l.At.IsZero() || end.Before(l.At) {
			l = Limit{At: end, Reason: ReasonTimeBudget}
		}
	}
	if !h.Deadline.IsZero() && (l.At.IsZero() || !l.At.Before(h.Deadline)) {
		l = Limit{At: h.Deadline, Reason: ReasonDeadline}
	}
	return l
}

// End records the result of the attempt Admit admitted last, ended at now,
// and returns what follows: done, retry at Decision.At, or give up. It
// classifies r (unless the executor did), records the outcome in the
// breaker (a failure for transient, timeout, pushback and refused outcomes;
// nothing for a permanent error, which says nothing about the dependency's
// health), decides with [Decide]'s rules, and keeps the decision in the
// trace.
//
// End may also follow an attempt that was never admitted by this Call: a
// durable call whose worker was lost mid-attempt.
func (c *Call) End(now time.Time, r Result) Decision {
	h := &c.History
	h.Attempts++
	if r.Err == nil && r.Outcome == OutcomeSuccess {
		// Success, the common case, without the rest of the rules.
		c.outcome(now, OutcomeSuccess)
		if h.Attempts-c.hedges > 1 && c.Policy.Budget != nil {
			// A productive retry earns more; a hedge that won does not,
			// so that hedges stay within the budget's ratio.
			c.Policy.Budget.RetrySucceededAt(now)
		}
		d := Decision{Action: Done, Reason: ReasonSuccess, Attempt: h.Attempts, At: now}
		if !h.Start.IsZero() && !now.IsZero() {
			d.Elapsed = now.Sub(h.Start)
		}
		if hg := c.Policy.Hedge; hg != nil {
			c.raceWon = c.raceWon || r.Hedge && c.raceHedges > 0
			if !c.start.IsZero() && !now.IsZero() {
				hg.record(now.Sub(c.start))
			}
			c.hedgeDecision(&d)
		}
		return d
	}
	p := &c.Policy
	h.TimedOut, h.NotRepeatable = r.TimedOut, r.NotRepeatable
	d := decide(p, h, &r, now, p.Rand, c.Durable)
	if p.Hedge != nil {
		c.raceWon = c.raceWon || r.Hedge && c.raceHedges > 0
		c.hedgeDecision(&d)
	}
	c.outcome(now, d.Outcome)
	h.TimedOut, h.NotRepeatable = false, false
	if d.Action == Retry {
		h.LastDelay = d.Delay
	}
	if d.Action != Done {
		c.record(d)
	}
	return d
}

// hedgeDecision adds the race of the attempt that ended to d.
func (c *Call) hedgeDecision(d *Decision) {
	d.Hedges, d.HedgeWon = c.raceHedges, c.raceWon
	c.raceHedges, c.raceWon, c.start = 0, false, time.Time{}
}

// outcome records the outcome of the admitted attempt in the breaker: a
// failure for transient, timeout, pushback and refused outcomes, nothing for
// a permanent error.
func (c *Call) outcome(now time.Time, o Outcome) {
	if c.Policy.Breaker == nil {
		return
	}
	bo := breaker.Success
	if o.failure() {
		bo = breaker.Failure
	} else if o == OutcomePermanent {
		bo = breaker.Ignored
	}
	c.permit.RecordAt(now, bo)
	c.permit = breaker.Permit{}
}

// Abandon ends the attempt Admit admitted last without a decision: its
// caller gave up (its context ended), or the executor is handing the work
// back (a worker shutting down). The breaker learns nothing from it.
func (c *Call) Abandon(now time.Time) {
	c.permit.RecordAt(now, breaker.Ignored)
	c.permit = breaker.Permit{}
}

func (c *Call) record(d Decision) {
	if c.n < traceInline {
		c.buf[c.n] = d
	} else {
		c.rest = append(c.rest, d)
	}
	c.n++
}

// Trace returns the decisions taken so far (retries, deferrals and the
// give-up; a success is not kept), in order, in a new slice.
func (c *Call) Trace() []Decision {
	t := make([]Decision, 0, c.n)
	t = append(t, c.buf[:min(c.n, traceInline)]...)
	return append(t, c.rest...)
}

// Exhausted returns the error of a call that gave up with the last decision
// of its trace: an [*ExhaustedError] wrapping err, with the trace.
func (c *Call) Exhausted(err error) error {
	last := c.Last()
	if c.n <= traceInline {
		x := &exhausted{e: ExhaustedError{Reason: last.Reason, Attempts: c.History.Attempts, Err: err}}
		x.e.Trace = x.buf[:copy(x.buf[:], c.buf[:c.n])]
		return &x.e
	}
	return &ExhaustedError{Reason: last.Reason, Attempts: c.History.Attempts, Err: err, Trace: c.Trace()}
}

// traceInline is how many decisions a call keeps without allocating: the
// default policy's three attempts fit.
const traceInline = 3

// exhausted holds an ExhaustedError and a short trace in one allocation.
type exhausted struct {
	e   ExhaustedError
	buf [traceInline]Decision
}
