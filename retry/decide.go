package retry

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/heed-go/heed/breaker"
)

// Action is what a [Decision] says to do next.
type Action uint8

const (
	// Done: the attempt succeeded.
	Done Action = iota
	// Retry: try again at Decision.At.
	Retry
	// GiveUp: stop; Decision.Reason says why.
	GiveUp
	// Defer: a durable call (see [Call]) cannot go on now for a reason
	// that passes with time (ReasonBreakerOpen, ReasonBudget); it tries
	// again at Decision.At, the attempt not counted.
	Defer
)

var actionNames = [...]string{Done: "done", Retry: "retry", GiveUp: "give up", Defer: "defer"}

// String returns the action in words, such as "give up", for people; see
// [Action.Key] for the form to store.
func (a Action) String() string {
	if int(a) < len(actionNames) {
		return actionNames[a]
	}
	return fmt.Sprintf("Action(%d)", a)
}

// Reason says why a [Decision] was taken.
type Reason uint8

// Reasons. ReasonSuccess goes with Done; ReasonTransient, ReasonTimeout and
// ReasonPushback with Retry; the others with GiveUp.
const (
	ReasonSuccess         Reason = iota // the attempt succeeded
	ReasonTransient                     // the error may pass on a retry
	ReasonTimeout                       // the attempt ran out of its own timeout
	ReasonPushback                      // the server asked for a wait
	ReasonPermanent                     // the error will fail the same way again
	ReasonAttempts                      // the attempt limit is reached
	ReasonTimeBudget                    // the next delay plus a whole attempt would not fit in TimeBudget
	ReasonDeadline                      // the caller's deadline is too close
	ReasonBudget                        // the retry budget is empty
	ReasonBreakerOpen                   // the circuit breaker is open
	ReasonNotRepeatable                 // repeating the request is not safe
	ReasonServerRefused                 // the server said not to retry
	ReasonUpstreamOwns                  // a caller up the chain owns retries
	ReasonPushbackTooLong               // the server asked for a wait longer than MaxPushback
)

var reasonNames = [...]string{
	ReasonSuccess:   "success",
	ReasonTransient: "transient error",
	ReasonTimeout:   "attempt timed out",
	ReasonPushback:  "server pushback",
	ReasonPermanent: "permanent error",
	ReasonAttempts:  "attempts exhausted",
	// Not "exhausted": the budget may have time left, only not enough
	// for the next delay plus a whole attempt (Policy.Fits).
	ReasonTimeBudget:    "no retry fits in the time budget left",
	ReasonDeadline:      "deadline too close",
	ReasonBudget:        "retry budget empty",
	ReasonBreakerOpen:   "circuit open",
	ReasonNotRepeatable: "not safe to repeat",
	ReasonServerRefused: "server said do not retry",
	ReasonUpstreamOwns:  "caller owns retries",
	// The server's wait is in the decision's Delay.
	ReasonPushbackTooLong: "server asked for too long a wait",
}

// String returns the reason in words, such as "deadline too close".
func (r Reason) String() string {
	if int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return fmt.Sprintf("Reason(%d)", r)
}

// History is what [Decide] knows about a call so far. Executors keep it;
// the zero value describes a call whose first attempt has not ended.
type History struct {
	// Attempts is the number of attempts made, the one that just ended
	// included.
	Attempts int
	// Start is when the first attempt started. TimeBudget counts from it.
	Start time.Time
	// Deadline is the caller's deadline (the context's), or zero for none.
	Deadline time.Time
	// LastDelay is the delay before the attempt that just ended (zero
	// before the first retry); decorrelated jitter grows from it.
	LastDelay time.Duration
	// TimedOut says the attempt that just ended ran out of its own
	// per-attempt timeout (not the caller's deadline).
	TimedOut bool
	// UpstreamOwns says a caller up the chain owns retries (see
	// [WithUpstreamOwner]): a failure is not retried here.
	UpstreamOwns bool
	// NotRepeatable says the attempt that just ended must not be repeated:
	// it may have been processed and repeating it is not known to be safe
	// (an HTTP POST without an idempotency key that failed after it was
	// sent, say). Its failure gives up with ReasonNotRepeatable.
	NotRepeatable bool
}

// Decision is the outcome of one attempt and what to do about it: done,
// retry at At after Delay, or give up. It is data, so executors log it,
// store it and show it; the trace of a call is its list of decisions.
type Decision struct {
	// Action is what to do: Done, Retry, GiveUp or Defer.
	Action Action
	// Reason is why (ReasonSuccess, ReasonTransient, ReasonAttempts, ...);
	// Reason.String words it as the trace does.
	Reason Reason
	// Attempt is the attempt this decision follows (from 1).
	Attempt int
	// Err is that attempt's error (nil when it succeeded).
	Err error
	// Outcome is the class of that attempt's result.
	Outcome Outcome
	// Delay is the wait before the next attempt (for Defer, until At). On
	// a give-up for the time budget, the deadline, the breaker, the budget
	// or a pushback longer than MaxPushback, it is the wait a retry would
	// have needed (a server's pushback included), so a caller can schedule
	// it later.
	Delay time.Duration
	// At is when the next attempt may start (Retry), or when the decision
	// was taken (Done, GiveUp).
	At time.Time
	// Elapsed is the time since the first attempt started.
	//
	// Do reads the clock only when something needs the time: a deadline
	// (the context's or TimeBudget), a Budget, a Breaker or an Observe
	// function. Without any of them, At and Elapsed are zero.
	Elapsed time.Duration
	// Hedges is the number of hedges sent beside the attempt (see
	// [Hedge]); they count in Attempt. HedgeWon says the result decided on
	// is a hedge's.
	Hedges   int
	HedgeWon bool
}

// String describes the decision in one line, such as
// "attempt 2: i/o timeout, retry in 180ms" or
// "attempt 3: 503 Service Unavailable, gave up: deadline too close".
func (d Decision) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "attempt %d: ", d.Attempt)
	if d.Err == nil {
		b.WriteString("ok")
	} else {
		b.WriteString(d.Err.Error())
	}
	switch d.Action {
	case Retry:
		fmt.Fprintf(&b, ", retry in %v", roundDelay(d.Delay))
		if d.Reason == ReasonPushback || d.Reason == ReasonTimeout {
			fmt.Fprintf(&b, " (%s)", d.Reason)
		}
	case GiveUp:
		fmt.Fprintf(&b, ", gave up: %s", d.Reason)
	}
	switch {
	case d.HedgeWon:
		fmt.Fprintf(&b, " (%d hedged, a hedge won)", d.Hedges)
	case d.Hedges > 0:
		fmt.Fprintf(&b, " (%d hedged)", d.Hedges)
	}
	return b.String()
}

// Decide decides what follows an attempt: done, retry (when and after what
// delay) or give up (and why). In this order:
//
//  1. no error: done;
//  2. a permanent error (marked with [Permanent], not accepted by the
//     classifier, or a server that said not to retry): give up at once;
//  3. an attempt that is not safe to repeat (History.NotRepeatable), a
//     caller up the chain owning retries (History.UpstreamOwns), or the
//     attempt limit reached: give up;
//  4. the delay is the backoff, or the server's pushback when that is
//     larger; a pushback longer than MaxPushback gives up (with
//     ReasonPushbackTooLong, and the server's wait as the Delay) rather
//     than come back before the server asked;
//  5. when the delay plus the time an attempt needs ([Policy.MinAttempt]:
//     MinAttemptTime, or the whole AttemptTimeout when one is set) no
//     longer fits before the deadline (the caller's, or Start +
//     TimeBudget, whichever is earlier): give up now instead of starting
//     an attempt that cannot finish;
//  6. the breaker open: give up;
//  7. the retry budget empty: give up. A granted retry takes a token from
//     the budget; the budget is asked last so that a retry that will not
//     happen spends nothing;
//  8. otherwise retry at now + delay.
//
// On a give-up at steps 4 to 7, Delay is the wait a retry would have
// needed, so that a caller can schedule the work later. [Call.End] applies
// the same rules to a result its executor has classified, and for durable
// calls leaves steps 6 and 7 to [Call.Admit].
//
// Decide reads no clock and no global random source and never sleeps: now
// and r come from the caller (a nil r uses math/rand/v2's global source).
// Its only effects are on p.Budget, which counts a granted retry. A zero
// now is allowed when nothing needs the time (no deadline, TimeBudget,
// Budget or Breaker); the decision's At and Elapsed are then zero.
func Decide(p *Policy, h History, err error, now time.Time, r rand.Source) Decision {
	return decide(p, &h, &Result{Err: err, TimedOut: h.TimedOut}, now, r, false)
}

// decide is Decide for the result res of an attempt, classified by p
// unless res.Outcome already says what it is (res is passed by pointer so
// that every argument fits in registers, and Decide is small enough to be
// inlined). A durable decision leaves the breaker and the budget to
// admission and honours any pushback.
func decide(p *Policy, h *History, res *Result, now time.Time, r rand.Source, durable bool) Decision {
	o, wait, err := res.Outcome, res.Wait, res.Err
	if err != nil && o == OutcomeSuccess {
		o, wait = p.Classify(err, res.TimedOut)
	}
	d := Decision{Attempt: h.Attempts, Err: err, At: now, Outcome: o}
	if !h.Start.IsZero() && !now.IsZero() {
		d.Elapsed = now.Sub(h.Start)
	}
	if err == nil && o == OutcomeSuccess {
		d.Action, d.Reason = Done, ReasonSuccess
		return d
	}
	d.Action = GiveUp
	switch o {
	case OutcomePermanent:
		d.Reason = ReasonPermanent
		return d
	case OutcomeRefused:
		d.Reason = ReasonServerRefused
		return d
	}
	switch limit := p.MaxAttempts(); {
	case h.NotRepeatable:
		d.Reason = ReasonNotRepeatable
		return d
	case h.UpstreamOwns:
		d.Reason = ReasonUpstreamOwns
		return d
	case limit > 0 && h.Attempts >= limit:
		d.Reason = ReasonAttempts
		return d
	}
	delay := p.Backoff.Next(h.Attempts, h.LastDelay, r)
	if o == OutcomePushback && wait > delay {
		if wait > p.maxPushback() && !durable {
			d.Reason, d.Delay = ReasonPushbackTooLong, wait
			return d
		}
		delay = wait
	}
	d.Delay = delay
	if !h.Deadline.IsZero() || p.TimeBudget > 0 {
		if ok, reason := p.fits(h, now, delay); !ok {
			d.Reason = reason
			return d
		}
	}
	if !durable {
		if p.Breaker != nil && p.Breaker.StateAt(now) == breaker.Open {
			d.Reason = ReasonBreakerOpen
			return d
		}
		// The budget is asked last, so that a retry ruled out otherwise
		// does not spend a token.
		if p.Budget != nil && !p.Budget.AllowRetryAt(now) {
			d.Reason = ReasonBudget
			return d
		}
	}
	d.Action = Retry
	if !now.IsZero() {
		d.At = now.Add(delay)
	}
	switch o {
	case OutcomeTimeout:
		d.Reason = ReasonTimeout
	case OutcomePushback:
		d.Reason = ReasonPushback
	default:
		d.Reason = ReasonTransient
	}
	return d
}

// Fits reports whether a retry decided at now, after delay, still leaves
// the time an attempt needs ([Policy.MinAttempt]) before the call's end:
// the caller's deadline (h.Deadline) or h.Start + TimeBudget, whichever is
// earlier. When it does not, it also returns which of the two it would
// break: ReasonDeadline or ReasonTimeBudget. This is the rule "retry only if
// one more whole attempt plus its delay still fits"; [Decide] applies it,
// and planning tools (heed plan) use it to say which attempts start.
func (p *Policy) Fits(h History, now time.Time, delay time.Duration) (bool, Reason) {
	return p.fits(&h, now, delay)
}

func (p *Policy) fits(h *History, now time.Time, delay time.Duration) (bool, Reason) {
	deadline, reason := h.Deadline, ReasonDeadline
	if p.TimeBudget > 0 && !h.Start.IsZero() {
		if end := h.Start.Add(p.TimeBudget); deadline.IsZero() || end.Before(deadline) {
			deadline, reason = end, ReasonTimeBudget
		}
	}
	if deadline.IsZero() {
		return true, 0
	}
	need := delay + p.MinAttempt()
	if need < delay { // overflow: a delay near the largest Duration
		need = delay
	}
	if deadline.Sub(now) < need {
		return false, reason
	}
	return true, 0
}

// roundDelay rounds d to three significant figures or so for people:
// 180ms, 1.25s, 37µs; never to zero unless d is zero.
func roundDelay(d time.Duration) time.Duration {
	switch {
	case d >= 10*time.Second:
		return d.Round(100 * time.Millisecond)
	case d >= 10*time.Millisecond:
		return d.Round(time.Millisecond)
	case d >= 10*time.Microsecond:
		return d.Round(time.Microsecond)
	}
	return d
}
