package retry

import (
	"errors"
	"testing"
	"time"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/breaker"
	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/clock/clocktest"
)

func constantPolicy() Policy {
	return Policy{Attempts: 3, Backoff: backoff.Schedule{Kind: backoff.Constant, Base: 100 * time.Millisecond, Jitter: backoff.NoJitter}}
}

func TestCallLimit(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name     string
		p        Policy
		h        History
		want     Limit
		admitted bool
	}{
		{"none", Policy{}, History{}, Limit{}, true},
		{"attempt timeout", Policy{AttemptTimeout: time.Second}, History{}, Limit{t0.Add(time.Second), ReasonTimeout}, true},
		{"time budget earlier", Policy{AttemptTimeout: time.Second, TimeBudget: 500 * ms}, History{}, Limit{t0.Add(500 * ms), ReasonTimeBudget}, true},
		{"own timeout wins a tie with the budget", Policy{AttemptTimeout: time.Second, TimeBudget: time.Second}, History{}, Limit{t0.Add(time.Second), ReasonTimeout}, true},
		{"deadline earlier", Policy{AttemptTimeout: time.Second}, History{Deadline: t0.Add(200 * ms)}, Limit{t0.Add(200 * ms), ReasonDeadline}, true},
		{"deadline wins a tie", Policy{AttemptTimeout: time.Second}, History{Deadline: t0.Add(time.Second)}, Limit{t0.Add(time.Second), ReasonDeadline}, true},
		{"deadline passed", Policy{}, History{Deadline: t0}, Limit{t0, ReasonDeadline}, false},
		{"time budget spent", Policy{TimeBudget: time.Second}, History{Attempts: 1, Start: t0.Add(-time.Second)}, Limit{t0, ReasonTimeBudget}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Call{Policy: tc.p, History: tc.h}
			lim, ok := c.Admit(t0)
			d := c.Last()
			if lim != tc.want || ok != tc.admitted {
				t.Fatalf("Admit = %+v, %v; want %+v, %v", lim, ok, tc.want, tc.admitted)
			}
			if !ok && (d.Action != GiveUp || d.Reason != tc.want.Reason || d.Err == nil) {
				t.Errorf("refusal %+v, want a give-up for %v", d, tc.want.Reason)
			}
		})
	}
}

// Admit and End take a call through the protocol's steps; a durable call
// is deferred where an in-process one gives up.
func TestCallSteps(t *testing.T) {
	open := func() *breaker.Breaker {
		b, err := breaker.New(breaker.Config{MinCalls: 1, Cooldown: 5 * time.Second, Probes: 1})
		if err != nil {
			t.Fatal(err)
		}
		p, _ := b.AllowAt(t0)
		p.RecordAt(t0, breaker.Failure)
		return b
	}
	t.Run("breaker open: give up without an attempt", func(t *testing.T) {
		p := constantPolicy()
		p.Breaker = open()
		c := Call{Policy: p}
		_, ok := c.Admit(t0.Add(time.Second))
		d := c.Last()
		if ok || d.Action != GiveUp || d.Reason != ReasonBreakerOpen || !errors.Is(d.Err, breaker.ErrOpen) || c.History.Attempts != 0 {
			t.Fatalf("Admit = %+v, %v, attempts %d", d, ok, c.History.Attempts)
		}
		if err := c.Exhausted(d.Err); !errors.Is(err, breaker.ErrOpen) || !errors.Is(err, ErrExhausted) {
			t.Errorf("Exhausted = %v", err)
		}
	})
	t.Run("breaker open, durable: deferred to the end of the cooldown", func(t *testing.T) {
		p := constantPolicy()
		p.Breaker = open()
		c := Call{Policy: p, Durable: true}
		now := t0.Add(time.Second)
		_, ok := c.Admit(now)
		d := c.Last()
		if ok || d.Action != Defer || d.Reason != ReasonBreakerOpen || !d.At.Equal(t0.Add(5*time.Second)) || d.Delay != 4*time.Second {
			t.Fatalf("Admit = %+v, %v", d, ok)
		}
		if _, ok := c.Admit(t0.Add(5 * time.Second)); !ok {
			t.Fatal("not admitted as a probe after the cooldown")
		}
		if d := c.End(t0.Add(5*time.Second), Result{}); d.Action != Done || p.Breaker.StateAt(t0.Add(5*time.Second)) != breaker.Closed {
			t.Errorf("probe success: %+v, breaker %v", d, p.Breaker.StateAt(t0))
		}
	})
	t.Run("budget counts the first attempt; durable retries ask it at admission", func(t *testing.T) {
		b, _ := budget.New(budget.Config{MinPerSecond: 1, Burst: 1, Clock: clocktest.New(t0)})
		p := constantPolicy()
		p.Budget = b
		c := Call{Policy: p, Durable: true}
		if _, ok := c.Admit(t0); !ok {
			t.Fatal("first attempt refused")
		}
		if s := b.Stats(); s.Requests != 1 {
			t.Fatalf("stats %+v, want the first attempt counted as a request", s)
		}
		d := c.End(t0, Result{Err: errors.New("x"), Outcome: OutcomeTransient})
		if d.Action != Retry || b.Stats().Retries != 0 {
			t.Fatalf("End = %+v; a durable retry must not spend the budget before it starts", d)
		}
		if _, ok := c.Admit(d.At); !ok {
			t.Fatal("retry refused with the floor unspent")
		}
		c.End(d.At, Result{Err: errors.New("x"), Outcome: OutcomeTransient})
		at := d.At.Add(100 * time.Millisecond)
		_, ok := c.Admit(at)
		d = c.Last()
		if ok || d.Action != Defer || d.Reason != ReasonBudget || !d.At.Equal(b.RefillAt(at)) {
			t.Fatalf("Admit with the budget spent = %+v, %v; want a deferral to the refill", d, ok)
		}
		if c.History.Attempts != 2 {
			t.Errorf("attempts %d, want 2: a deferral is not an attempt", c.History.Attempts)
		}
	})
	t.Run("executor's class is used as given", func(t *testing.T) {
		c := Call{Policy: constantPolicy()}
		c.Admit(t0)
		// An error the classifier would call permanent, classified by the
		// executor as a pushback.
		d := c.End(t0, Result{Err: errors.New("503"), Outcome: OutcomePushback, Wait: time.Second})
		if d.Action != Retry || d.Reason != ReasonPushback || d.Delay != time.Second || d.Outcome != OutcomePushback {
			t.Fatalf("End = %+v", d)
		}
		c.Admit(d.At)
		d = c.End(d.At, Result{Err: errors.New("reset"), NotRepeatable: true, Outcome: OutcomeTransient})
		if d.Action != GiveUp || d.Reason != ReasonNotRepeatable {
			t.Fatalf("End = %+v, want not repeatable", d)
		}
		if tr := c.Trace(); len(tr) != 2 || tr[0].Reason != ReasonPushback || tr[1].Reason != ReasonNotRepeatable {
			t.Errorf("trace %v", tr)
		}
	})
	t.Run("breaker records failures, ignores permanent errors and abandoned attempts", func(t *testing.T) {
		b, _ := breaker.New(breaker.Config{MinCalls: 100, Clock: clocktest.New(t0)})
		p := constantPolicy()
		p.Breaker = b
		for _, r := range []Result{{Err: errors.New("bad input")}, {Err: Transient(errors.New("reset"))}, {}} {
			c := Call{Policy: p}
			c.Admit(t0)
			c.End(t0, r)
		}
		c := Call{Policy: p}
		c.Admit(t0)
		c.Abandon(t0)
		if got := b.Counts(); got != (breaker.Counts{Successes: 1, Failures: 1}) {
			t.Errorf("counts %+v, want 1 success and 1 failure", got)
		}
	})
	t.Run("long trace", func(t *testing.T) {
		p := constantPolicy()
		p.Attempts = 6
		c := Call{Policy: p}
		now := t0
		var d Decision
		for range 6 {
			c.Admit(now)
			d = c.End(now, Result{Err: Transient(errors.New("x"))})
			now = d.At
		}
		var ex *ExhaustedError
		if !errors.As(c.Exhausted(d.Err), &ex) || len(ex.Trace) != 6 || ex.Reason != ReasonAttempts || ex.Attempts != 6 {
			t.Fatalf("Exhausted = %+v", ex)
		}
	})
}
