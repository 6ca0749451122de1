package heedotel_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/breaker"
	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/heedotel"
	"github.com/heed-go/heed/retry"
	"go.opentelemetry.io/otel/attribute"
)

var (
	errReset = errors.New("connection reset")
	// constant1ms waits exactly 1 ms between attempts.
	constant1ms = backoff.Schedule{Kind: backoff.Constant, Base: time.Millisecond, Jitter: backoff.NoJitter}
)

func outcome(s string) attribute.KeyValue { return heedotel.KeyOutcome.String(s) }
func reason(s string) attribute.KeyValue  { return heedotel.KeyReason.String(s) }

func TestRetryTwoTransientFailuresThenSuccess(t *testing.T) {
	m, r := newMetrics(t)
	calls := 0
	p := retry.Policy{Backoff: constant1ms, Observe: m.RetryObserver("charge")}
	err := retry.Do(context.Background(), p, func(context.Context) error {
		calls++
		if calls < 3 {
			return retry.Transient(errReset)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	c := collect(t, r)
	op := heedotel.KeyOperation.String("charge")
	c.wantSum("heed.retry.attempts", 3, op)
	c.wantSum("heed.retry.attempts", 2, op, outcome("transient"))
	c.wantSum("heed.retry.attempts", 1, op, outcome("success"))
	c.wantSum("heed.retry.retries", 2, op, reason("transient"))
	c.wantSum("heed.retry.give_ups", 0)
	c.wantSum("heed.retry.breaker.refused", 0)
	if _, ok := c.metric("heed.retry.give_ups"); ok {
		t.Error("heed.retry.give_ups has points after a call that succeeded")
	}
	n, sum := c.hist("heed.retry.delay", op, reason("transient"))
	if n != 2 || math.Abs(sum-0.002) > 1e-9 {
		t.Errorf("heed.retry.delay: count %d sum %v, want 2 and 0.002", n, sum)
	}
	c.wantCount("heed.retry.attempt.duration", 2, op, outcome("transient"))
	c.wantCount("heed.retry.attempt.duration", 1, op, outcome("success"))
	n, sum = c.hist("heed.retry.call.duration", op, reason("success"))
	if n != 1 || sum < 0.002 {
		t.Errorf("heed.retry.call.duration{success}: count %d sum %v, want 1 and at least the 2 ms of waits", n, sum)
	}
	for name, unit := range map[string]string{
		"heed.retry.attempts": "{attempt}", "heed.retry.retries": "{retry}",
		"heed.retry.delay": "s", "heed.retry.attempt.duration": "s", "heed.retry.call.duration": "s",
	} {
		if m, _ := c.metric(name); m.Unit != unit {
			t.Errorf("%s: unit %q, want %q", name, m.Unit, unit)
		}
	}
}

func TestRetryGiveUpReasons(t *testing.T) {
	for _, tc := range []struct {
		name     string
		policy   retry.Policy
		timeout  time.Duration
		err      error
		reason   string
		attempts int64
		outcome  string
	}{
		{name: "permanent", err: retry.Permanent(errReset), reason: "permanent", attempts: 1, outcome: "permanent"},
		{name: "attempts", policy: retry.Policy{Attempts: 2}, err: retry.Transient(errReset), reason: "attempts", attempts: 2, outcome: "transient"},
		{name: "deadline", policy: retry.Policy{Backoff: backoff.Schedule{Kind: backoff.Constant, Base: time.Hour, Jitter: backoff.NoJitter}},
			timeout: time.Minute, err: retry.Transient(errReset), reason: "deadline", attempts: 1, outcome: "transient"},
		{name: "server refused", err: retry.After(-1, errReset), reason: "server_refused", attempts: 1, outcome: "refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, r := newMetrics(t)
			p := tc.policy
			if p.Backoff == (backoff.Schedule{}) {
				p.Backoff = constant1ms
			}
			p.Observe = m.RetryObserver("op")
			ctx := context.Background()
			if tc.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.timeout)
				defer cancel()
			}
			err := retry.Do(ctx, p, func(context.Context) error { return tc.err })
			if !errors.Is(err, retry.ErrExhausted) {
				t.Fatalf("Do = %v, want a give-up", err)
			}
			c := collect(t, r)
			c.wantSum("heed.retry.give_ups", 1)
			c.wantSum("heed.retry.give_ups", 1, reason(tc.reason))
			c.wantSum("heed.retry.attempts", tc.attempts)
			c.wantSum("heed.retry.attempts", tc.attempts, outcome(tc.outcome))
			c.wantSum("heed.retry.retries", tc.attempts-1)
			c.wantCount("heed.retry.call.duration", 1, reason(tc.reason))
		})
	}
}

func TestRetryBudgetDenial(t *testing.T) {
	m, r := newMetrics(t)
	// A budget that grants nothing to one request (no burst, no floor,
	// 10% of it), and one with the defaults (a bucket of 5 retries).
	none, err := budget.New(budget.Config{MinPerSecond: -1, Burst: -1})
	if err != nil {
		t.Fatal(err)
	}
	def, err := budget.New(budget.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string]*budget.Budget{"none": none, "default": def} {
		reg, err := m.ObserveBudget(name, b)
		if err != nil {
			t.Fatal(err)
		}
		defer reg.Unregister()
	}
	obs := m.RetryObserver("op")
	ctx := context.Background()

	err = retry.Do(ctx, retry.Policy{Backoff: constant1ms, Budget: none, Observe: obs}, func(context.Context) error {
		return retry.Transient(errReset)
	})
	if !errors.Is(err, budget.ErrExhausted) {
		t.Fatalf("Do = %v, want the budget to end it", err)
	}
	calls := 0
	err = retry.Do(ctx, retry.Policy{Backoff: constant1ms, Budget: def, Observe: obs}, func(context.Context) error {
		if calls++; calls == 1 {
			return retry.Transient(errReset)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	c := collect(t, r)
	c.wantSum("heed.retry.give_ups", 1, reason("budget"))
	c.wantSum("heed.retry.retries", 1, reason("transient"))
	for _, tc := range []struct {
		budget, decision string
		want             int64
	}{
		{"none", "allowed", 0}, {"none", "denied", 1}, {"default", "allowed", 1}, {"default", "denied", 0},
	} {
		got, ok := c.gauge("heed.budget.window.retries", heedotel.KeyBudget.String(tc.budget), heedotel.KeyBudgetDecision.String(tc.decision))
		if !ok || got != tc.want {
			t.Errorf("heed.budget.window.retries{%s, %s} = %d (present %v), want %d", tc.budget, tc.decision, got, ok, tc.want)
		}
		got, ok = c.gauge("heed.budget.window.requests", heedotel.KeyBudget.String(tc.budget))
		if !ok || got != 1 {
			t.Errorf("heed.budget.window.requests{%s} = %d (present %v), want 1", tc.budget, got, ok)
		}
	}
}

func TestRetryBreakerOpensAndRefuses(t *testing.T) {
	m, r := newMetrics(t)
	b, err := breaker.New(breaker.Config{MinCalls: 2, Cooldown: time.Hour, OnStateChange: m.BreakerObserver("dep")})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := m.ObserveBreaker("dep", b)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()
	dep := heedotel.KeyBreaker.String("dep")
	state := func(s string) attribute.KeyValue { return heedotel.KeyBreakerState.String(s) }

	c := collect(t, r)
	for s, want := range map[string]int64{"closed": 1, "open": 0, "half_open": 0} {
		if got, ok := c.gauge("heed.breaker.state", dep, state(s)); !ok || got != want {
			t.Errorf("before: heed.breaker.state{%s} = %d (present %v), want %d", s, got, ok, want)
		}
	}

	p := retry.Policy{Attempts: 1, Breaker: b, Observe: m.RetryObserver("op")}
	for range 2 {
		retry.Do(context.Background(), p, func(context.Context) error { return retry.Transient(errReset) })
	}
	err = retry.Do(context.Background(), p, func(context.Context) error {
		t.Error("the open breaker let a call through")
		return nil
	})
	if !errors.Is(err, breaker.ErrOpen) {
		t.Fatalf("Do = %v, want breaker.ErrOpen", err)
	}

	c = collect(t, r)
	for s, want := range map[string]int64{"closed": 0, "open": 1, "half_open": 0} {
		if got, ok := c.gauge("heed.breaker.state", dep, state(s)); !ok || got != want {
			t.Errorf("after: heed.breaker.state{%s} = %d (present %v), want %d", s, got, ok, want)
		}
	}
	c.wantSum("heed.breaker.transitions", 1)
	c.wantSum("heed.breaker.transitions", 1, dep, heedotel.KeyBreakerFrom.String("closed"), state("open"))
	c.wantSum("heed.retry.attempts", 2, outcome("transient"))
	c.wantSum("heed.retry.give_ups", 2, reason("attempts"))
	// retry.Do does not (yet) pass a breaker's refusal to Observe, while
	// retryhttp does; when it does, it must count as a refusal and a
	// give-up, not as an attempt.
	switch c.sum("heed.retry.breaker.refused") {
	case 0:
		t.Log("retry.Do did not report the breaker's refusal to Policy.Observe")
	case 1:
		c.wantSum("heed.retry.give_ups", 1, reason("breaker_open"))
	default:
		t.Errorf("heed.retry.breaker.refused = %d, want at most 1", c.sum("heed.retry.breaker.refused"))
	}
}

// TestRetryRefusedEvent feeds the observer the event an executor reports
// when a breaker refuses an attempt (as retryhttp does): no attempt, a
// refusal, a give-up.
func TestRetryRefusedEvent(t *testing.T) {
	m, r := newMetrics(t)
	obs := m.RetryObserver("op")
	obs(context.Background(), retry.Event{Decision: retry.Decision{
		Action: retry.GiveUp, Reason: retry.ReasonBreakerOpen, Err: breaker.ErrOpen, Elapsed: time.Millisecond,
	}})
	c := collect(t, r)
	c.wantSum("heed.retry.breaker.refused", 1, heedotel.KeyOperation.String("op"))
	c.wantSum("heed.retry.attempts", 0)
	c.wantCount("heed.retry.attempt.duration", 0)
	c.wantSum("heed.retry.give_ups", 1, reason("breaker_open"))
	c.wantCount("heed.retry.call.duration", 1, reason("breaker_open"))
}

// TestRetryObserverAllocs checks that recording an event allocates nothing,
// with the SDK's real aggregation behind it: the observer alone, and
// retry.Do's success path with the observer installed.
func TestRetryObserverAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation counts")
	}
	m, _ := newMetrics(t)
	obs := m.RetryObserver("op")
	ctx := context.Background()
	ok := retry.Event{Decision: retry.Decision{Action: retry.Done, Attempt: 1}, Duration: time.Millisecond}
	retrying := retry.Event{Decision: retry.Decision{Action: retry.Retry, Reason: retry.ReasonTransient, Outcome: retry.OutcomeTransient,
		Attempt: 1, Err: errReset, Delay: time.Millisecond}}
	obs(ctx, ok) // the first measurement of a series allocates it
	obs(ctx, retrying)
	if n := testing.AllocsPerRun(100, func() { obs(ctx, ok) }); n != 0 {
		t.Errorf("observer, success: %v allocations per event, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { obs(ctx, retrying) }); n != 0 {
		t.Errorf("observer, retry: %v allocations per event, want 0", n)
	}
	p := retry.Policy{Observe: obs}
	fn := func(context.Context) error { return nil }
	if n := testing.AllocsPerRun(100, func() { retry.Do(ctx, p, fn) }); n != 0 {
		t.Errorf("retry.Do success path with the observer: %v allocations per call, want 0", n)
	}
}
