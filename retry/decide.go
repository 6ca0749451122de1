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
)

var actionNames = [...]string{"done", "retry", "give up"}

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
	ReasonSuccess       Reason = iota // the attempt succeeded
	ReasonTransient                   // the error may pass on a retry
	ReasonTimeout                     // the attempt ran out of its own timeout
	ReasonPushback                    // the server asked for a wait
	ReasonPermanent                   // the error will fail the same way again
	ReasonAttempts                    // the attempt limit is reached
	ReasonTimeBudget                  // the policy's MaxDuration would run out
	ReasonDeadline                    // the caller's deadline is too close
	ReasonBudget                      // the retry budget is empty
	ReasonBreakerOpen                 // the circuit breaker is open
	ReasonNotRepeatable               // repeating the request is not safe
	ReasonServerRefused               // the server said not to retry
	ReasonUpstreamOwns                // a caller up the chain owns retries
)

var reasonNames = [...]string{
	ReasonSuccess:       "success",
	ReasonTransient:     "transient error",
	ReasonTimeout:       "attempt timed out",
	ReasonPushback:      "server pushback",
	ReasonPermanent:     "permanent error",
	ReasonAttempts:      "attempts exhausted",
	ReasonTimeBudget:    "time budget exhausted",
	ReasonDeadline:      "deadline too close",
	ReasonBudget:        "retry budget empty",
	ReasonBreakerOpen:   "circuit open",
	ReasonNotRepeatable: "not safe to repeat",
	ReasonServerRefused: "server said do not retry",
	ReasonUpstreamOwns:  "caller owns retries",
}

// String returns the reason in words, such as "deadline too close".
func (r Reason) String() string {
	if int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return fmt.Sprintf("Reason(%d)", r)
}

// Key returns a short identifier for the reason, for metrics and logs:
// "success", "transient", "timeout", "pushback", "permanent", "attempts",
// "time_budget", "deadline", "budget", "breaker_open", "not_repeatable",
// "server_refused", "upstream_owns".
func (r Reason) Key() string {
	if int(r) < len(reasonKeys) {
		return reasonKeys[r]
	}
	return "unknown"
}

var reasonKeys = [...]string{
	"success", "transient", "timeout", "pushback", "permanent", "attempts",
	"time_budget", "deadline", "budget", "breaker_open", "not_repeatable", "server_refused",
	"upstream_owns",
}

// History is what [Decide] knows about a call so far. Executors keep it;
// the zero value describes a call whose first attempt has not ended.
type History struct {
	// Attempts is the number of attempts made, the one that just ended
	// included.
	Attempts int
	// Start is when the first attempt started. MaxDuration counts from it.
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
	Action Action
	Reason Reason
	// Attempt is the attempt this decision follows (from 1).
	Attempt int
	// Err is that attempt's error (nil when it succeeded).
	Err error
	// Outcome is the class of that attempt's result.
	Outcome Outcome
	// Delay is the wait before the next attempt. On a give-up for the time
	// budget or the deadline, it is the wait a retry would have needed (a
	// server's pushback included), so a caller can schedule it later.
	Delay time.Duration
	// At is when the next attempt may start (Retry), or when the decision
	// was taken (Done, GiveUp).
	At time.Time
	// Elapsed is the time since the first attempt started.
	//
	// Do reads the clock only when something needs the time: a deadline
	// (the context's or MaxDuration), a Budget, a Breaker or an Observe
	// function. Without any of them, At and Elapsed are zero.
	Elapsed time.Duration
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
	return b.String()
}

// Decide decides what follows an attempt: done, retry (when and after what
// delay) or give up (and why). In this order:
//
//  1. no error: done;
//  2. a permanent error (marked with [Permanent], not accepted by the
//     classifier, or a server that said not to retry): give up at once;
//  3. the attempt limit reached, a caller up the chain owning retries
//     (History.UpstreamOwns), or an attempt that is not safe to repeat
//     (History.NotRepeatable): give up;
//  4. the breaker open: give up;
//  5. the delay is the backoff, or the server's pushback when that is larger
//     (capped at MaxPushback);
//  6. when the delay plus MinAttemptTime no longer fits before the deadline
//     (the caller's, or Start + MaxDuration, whichever is earlier): give up
//     now instead of sleeping into it;
//  7. the retry budget empty: give up. A granted retry takes a token from
//     the budget; the budget is asked after the deadline check so that a
//     retry that will not happen spends nothing;
//  8. otherwise retry at now + delay.
//
// Decide reads no clock and no global random source and never sleeps: now
// and r come from the caller (a nil r uses math/rand/v2's global source).
// Its only effects are on p.Budget, which counts a granted retry. A zero
// now is allowed when nothing needs the time (no deadline, MaxDuration,
// Budget or Breaker); the decision's At and Elapsed are then zero.
func Decide(p *Policy, h History, err error, now time.Time, r rand.Source) Decision {
	d := Decision{Attempt: h.Attempts, Err: err, At: now}
	if !h.Start.IsZero() && !now.IsZero() {
		d.Elapsed = now.Sub(h.Start)
	}
	if err == nil {
		d.Action, d.Reason = Done, ReasonSuccess
		return d
	}
	d.Action = GiveUp
	c, pushback := p.Classify(err, h.TimedOut)
	d.Outcome = c
	switch c {
	case OutcomePermanent:
		d.Reason = ReasonPermanent
		return d
	case OutcomeRefused:
		d.Reason = ReasonServerRefused
		return d
	}
	if limit := p.MaxAttempts(); limit > 0 && h.Attempts >= limit {
		d.Reason = ReasonAttempts
		return d
	}
	if h.UpstreamOwns {
		d.Reason = ReasonUpstreamOwns
		return d
	}
	if h.NotRepeatable {
		d.Reason = ReasonNotRepeatable
		return d
	}
	if p.Breaker != nil && p.Breaker.StateAt(now) == breaker.Open {
		d.Reason = ReasonBreakerOpen
		return d
	}
	delay := p.Backoff.Next(h.Attempts, h.LastDelay, r)
	if c == OutcomePushback && pushback > delay {
		delay = max(delay, min(pushback, p.maxPushback()))
	}
	d.Delay = delay

	deadline, reason := h.Deadline, ReasonDeadline
	if p.MaxDuration > 0 && !h.Start.IsZero() {
		if end := h.Start.Add(p.MaxDuration); deadline.IsZero() || end.Before(deadline) {
			deadline, reason = end, ReasonTimeBudget
		}
	}
	need := delay + p.minAttemptTime()
	if need < delay { // overflow: a delay near the largest Duration
		need = delay
	}
	if !deadline.IsZero() && deadline.Sub(now) < need {
		d.Reason = reason
		return d
	}
	// The budget is asked last, so that a retry the deadline rules out
	// does not spend a token.
	if p.Budget != nil && !p.Budget.AllowRetryAt(now) {
		d.Reason = ReasonBudget
		return d
	}

	d.Action = Retry
	if !now.IsZero() {
		d.At = now.Add(delay)
	}
	switch c {
	case OutcomeTimeout:
		d.Reason = ReasonTimeout
	case OutcomePushback:
		d.Reason = ReasonPushback
	default:
		d.Reason = ReasonTransient
	}
	return d
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
