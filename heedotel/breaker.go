package heedotel

import (
	"context"
	"time"

	"github.com/heed-go/heed/breaker"
	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/internal/redact"
	"go.opentelemetry.io/otel/metric"
)

// numStates counts the breaker states (their attribute values are
// breaker.State.Key), and "unknown" for a value outside them.
const numStates = int(breaker.HalfOpen) + 2

func stateIndex(s breaker.State) int { return min(int(s), numStates-1) }

func stateName(i int) string {
	if i < numStates-1 {
		return breaker.State(i).Key()
	}
	return "unknown"
}

// BreakerObserver returns a function for breaker.Config.OnStateChange that
// counts heed.breaker.transitions of the breaker called name, by previous
// and new state. name should be a fixed name from the program, such as the
// dependency's ("payments"). To keep another OnStateChange, call both from
// your own function.
func (m *Metrics) BreakerObserver(name string) func(from, to breaker.State, at time.Time) {
	var sets [numStates][numStates]opts
	for f := range sets {
		for t := range sets[f] {
			sets[f][t] = newOpts(keyBreaker.String(name), keyBreakerFrom.String(stateName(f)), keyBreakerState.String(stateName(t)))
		}
	}
	return func(from, to breaker.State, _ time.Time) {
		m.breakerTransitions.Add(context.Background(), 1, sets[stateIndex(from)][stateIndex(to)].add...)
	}
}

// HostBreakerObserver returns a function for
// retryhttp.Transport.OnBreakerChange that counts heed.breaker.transitions
// of each destination host's breaker under the host's name (host and port,
// as in URL.Host), by previous and new state. The hosts are those the
// program calls, so the attribute stays bounded.
func (m *Metrics) HostBreakerObserver() func(host string, from, to breaker.State, at time.Time) {
	return func(host string, from, to breaker.State, _ time.Time) {
		o := newOpts(keyBreaker.String(redact.Host(host)), keyBreakerFrom.String(stateName(stateIndex(from))),
			keyBreakerState.String(stateName(stateIndex(to))))
		m.breakerTransitions.Add(context.Background(), 1, o.add...)
	}
}

// ObserveBreaker reports the state of b as heed.breaker.state under name:
// one series per state, 1 for the state b is in at collection time (as
// b.State() reports it) and 0 for the others. It returns the callback's
// registration: Unregister it when b is no longer used.
//
// Calls refused while b is open are counted by the executors:
// heed.retry.breaker.refused and heed.http.client.breaker.refused.
func (m *Metrics) ObserveBreaker(name string, b *breaker.Breaker) (metric.Registration, error) {
	var sets [numStates - 1]opts
	for i := range sets {
		sets[i] = newOpts(keyBreaker.String(name), keyBreakerState.String(stateName(i)))
	}
	return m.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		cur := b.State()
		for i := range sets {
			v := int64(0)
			if int(cur) == i {
				v = 1
			}
			o.ObserveInt64(m.breakerState, v, sets[i].obs...)
		}
		return nil
	}, m.breakerState)
}

// ObserveBudget reports b's sliding window under name, read with
// b.Stats() at collection time: heed.budget.window.requests, and
// heed.budget.window.retries with decision "allowed" (retries granted) and
// "denied". These are windowed counts (Budget.Config.Window, 10 s by
// default), not running totals; running totals of denials are
// heed.retry.give_ups and heed.http.client.give_ups with reason "budget".
// It returns the callback's registration: Unregister it when b is no longer
// used.
func (m *Metrics) ObserveBudget(name string, b *budget.Budget) (metric.Registration, error) {
	base := newOpts(keyBudget.String(name))
	allowed := newOpts(keyBudget.String(name), keyBudgetDecision.String("allowed"))
	denied := newOpts(keyBudget.String(name), keyBudgetDecision.String("denied"))
	return m.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		st := b.Stats()
		o.ObserveInt64(m.budgetRequests, st.Requests, base.obs...)
		o.ObserveInt64(m.budgetRetries, st.Retries, allowed.obs...)
		o.ObserveInt64(m.budgetRetries, st.Denied, denied.obs...)
		return nil
	}, m.budgetRequests, m.budgetRetries)
}
