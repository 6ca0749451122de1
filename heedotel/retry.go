package heedotel

import (
	"context"

	"github.com/heed-go/heed/retry"
)

// The outcomes and reasons heed knows, plus one slot for an unknown value
// (a newer heed), so that attribute sets are indexed, not looked up.
const (
	numOutcomes = int(retry.OutcomeRefused) + 2
	numReasons  = int(retry.ReasonPushbackTooLong) + 2
)

func outcomeIndex(o retry.Outcome) int { return min(int(o), numOutcomes-1) }
func reasonIndex(r retry.Reason) int   { return min(int(r), numReasons-1) }

// outcomeName is o's attribute value; the unknown slot is "unknown".
func outcomeName(i int) string { return retry.Outcome(i).Key() }
func reasonName(i int) string  { return retry.Reason(i).Key() }

// refusedEvent reports whether e says no attempt was made: a breaker
// refused it (Action GiveUp, Reason breaker_open, Err breaker.ErrOpen). An
// attempt that ran and failed always has an Outcome other than success, so
// an error with OutcomeSuccess marks such an event.
func refusedEvent(e *retry.Event) bool {
	return e.Err != nil && e.Outcome == retry.OutcomeSuccess
}

// opSets are the attribute sets of one operation, built when its observer
// is made.
type opSets struct {
	base     opts
	outcomes [numOutcomes]opts // op, outcome
	reasons  [numReasons]opts  // op, reason
}

// RetryObserver returns a function for retry.Policy.Observe that records
// every attempt of retry.Do (or retry.DoValue) under the operation name op:
// heed.retry.attempts and heed.retry.attempt.duration by outcome class,
// heed.retry.retries and heed.retry.delay by reason for a retry,
// heed.retry.give_ups by reason for a give-up, heed.retry.call.duration
// (from the first attempt to the final decision) when a call ends, and
// heed.retry.breaker.refused for an event that reports a circuit breaker's
// refusal (Action GiveUp, Reason breaker_open, an error but no attempt
// outcome), which counts as a give-up but not as an attempt.
//
// op should be a fixed name from the program ("payments.charge"), never
// data: it becomes an attribute. The function allocates nothing per event;
// call RetryObserver once per operation, not per call. To keep another
// observer, call both from your own function.
//
// A call cancelled by its caller's context reports no final decision, so
// it is counted in attempts but not in call.duration.
func (m *Metrics) RetryObserver(op string) func(context.Context, retry.Event) {
	s := &opSets{base: newOpts(keyOperation.String(op))}
	for i := range s.outcomes {
		s.outcomes[i] = newOpts(keyOperation.String(op), keyOutcome.String(outcomeName(i)))
	}
	for i := range s.reasons {
		s.reasons[i] = newOpts(keyOperation.String(op), keyReason.String(reasonName(i)))
	}
	return func(ctx context.Context, e retry.Event) { m.observeRetry(ctx, s, &e) }
}

func (m *Metrics) observeRetry(ctx context.Context, s *opSets, e *retry.Event) {
	r := &s.reasons[reasonIndex(e.Reason)]
	if refusedEvent(e) {
		m.refused.Add(ctx, 1, s.base.add...)
	} else {
		o := &s.outcomes[outcomeIndex(e.Outcome)]
		m.attempts.Add(ctx, 1, o.add...)
		m.attemptDur.Record(ctx, e.Duration.Seconds(), o.rec...)
	}
	switch e.Action {
	case retry.Retry:
		m.retries.Add(ctx, 1, r.add...)
		m.delay.Record(ctx, e.Delay.Seconds(), r.rec...)
	case retry.Done:
		m.callDur.Record(ctx, e.Elapsed.Seconds(), r.rec...)
	default: // GiveUp
		m.giveUps.Add(ctx, 1, r.add...)
		m.callDur.Record(ctx, e.Elapsed.Seconds(), r.rec...)
	}
}
