package retry

import (
	"context"
	"errors"
	"github.com/heed-go/heed/deadline"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/breaker"
	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/clock/clocktest"
)

var errFlaky = Transient(errors.New("flaky"))

func fixed(d time.Duration) backoff.Schedule {
	return backoff.Schedule{Kind: backoff.Constant, Base: d, Jitter: backoff.NoJitter}
}

func TestDoWaitsTheSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var at []time.Duration
		err := Do(t.Context(), Policy{Attempts: 4, Backoff: backoff.Schedule{Base: 100 * time.Millisecond, Jitter: backoff.NoJitter}},
			func(ctx context.Context) error {
				at = append(at, time.Since(start))
				return errFlaky
			})
		want := []time.Duration{0, 100 * time.Millisecond, 300 * time.Millisecond, 700 * time.Millisecond}
		if len(at) != len(want) {
			t.Fatalf("attempts at %v, want %v", at, want)
		}
		for i := range want {
			if at[i] != want[i] {
				t.Fatalf("attempts at %v, want %v", at, want)
			}
		}
		var ex *ExhaustedError
		if !errors.As(err, &ex) || ex.Reason != ReasonAttempts || ex.Attempts != 4 || len(ex.Trace) != 4 {
			t.Fatalf("err = %v", err)
		}
		if !errors.Is(err, errFlaky) || !errors.Is(err, ErrExhausted) {
			t.Errorf("error does not wrap the cause and the sentinel: %v", err)
		}
	})
}

func TestDoSeededJitterIsReproducible(t *testing.T) {
	run := func() []time.Duration {
		var got []time.Duration
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			_ = Do(t.Context(), Policy{Attempts: 5, Rand: rand.NewPCG(3, 4)}, func(ctx context.Context) error {
				got = append(got, time.Since(start))
				return errFlaky
			})
		})
		return got
	}
	a, b := run(), run()
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("runs differ: %v vs %v", a, b)
		}
	}
}

func TestDoCancelDuringWaitReturnsCtxErr(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		calls := 0
		go func() {
			time.Sleep(150 * time.Millisecond)
			cancel()
		}()
		err := Do(ctx, Policy{Attempts: 10, Backoff: fixed(time.Second)}, func(ctx context.Context) error {
			calls++
			return errFlaky
		})
		if err != context.Canceled {
			t.Fatalf("err = %v, want context.Canceled unchanged", err)
		}
		if calls != 1 {
			t.Errorf("calls = %d", calls)
		}
	})
}

func TestDoCancelledBeforeStart(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	called := false
	if err := Do(ctx, Policy{}, func(context.Context) error { called = true; return nil }); err != context.Canceled || called {
		t.Fatalf("err = %v, called = %v", err, called)
	}
}

func TestDoGivesUpBeforeSleepingIntoTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 250*time.Millisecond)
		defer cancel()
		start := time.Now()
		calls := 0
		err := Do(ctx, Policy{Attempts: 10, Backoff: fixed(100 * time.Millisecond)}, func(ctx context.Context) error {
			calls++
			return errFlaky
		})
		var ex *ExhaustedError
		if !errors.As(err, &ex) || ex.Reason != ReasonDeadline {
			t.Fatalf("err = %v, want deadline too close", err)
		}
		// Attempts at 0, 100, 200 ms; after the third, 100 ms + 10 ms no
		// longer fit in the 50 ms left, so it stops at 200 ms.
		if calls != 3 || time.Since(start) != 200*time.Millisecond {
			t.Errorf("calls = %d, elapsed %v", calls, time.Since(start))
		}
	})
}

func TestDoAttemptTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		err := Do(t.Context(), Policy{AttemptTimeout: 50 * time.Millisecond, Backoff: fixed(10 * time.Millisecond)}, func(ctx context.Context) error {
			calls++
			if calls < 3 {
				<-ctx.Done() // hangs until the attempt's timeout
				return ctx.Err()
			}
			if _, ok := ctx.Deadline(); !ok {
				t.Error("attempt context has no deadline")
			}
			return nil
		})
		if err != nil || calls != 3 {
			t.Fatalf("err = %v, calls = %d", err, calls)
		}
	})
}

func TestDoTimeBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		err := Do(t.Context(), Policy{Attempts: Unlimited, TimeBudget: time.Second, Backoff: fixed(300 * time.Millisecond)}, func(ctx context.Context) error {
			d, ok := ctx.Deadline()
			if !ok || d.After(start.Add(time.Second)) {
				t.Errorf("attempt deadline %v beyond the budget", d)
			}
			return errFlaky
		})
		var ex *ExhaustedError
		if !errors.As(err, &ex) || ex.Reason != ReasonTimeBudget || ex.Attempts != 4 {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestDoObserve(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var events []Event
		n := 0
		err := Do(t.Context(), Policy{Backoff: fixed(time.Second), Observe: func(_ context.Context, e Event) { events = append(events, e) }},
			func(ctx context.Context) error {
				n++
				time.Sleep(20 * time.Millisecond)
				if n == 1 {
					return errFlaky
				}
				return nil
			})
		if err != nil || len(events) != 2 {
			t.Fatalf("err = %v, events = %v", err, events)
		}
		if e := events[0]; e.Action != Retry || e.Duration != 20*time.Millisecond || e.Delay != time.Second || e.Attempt != 1 {
			t.Errorf("first event %+v", e)
		}
		if e := events[1]; e.Action != Done || e.Attempt != 2 || e.Elapsed != 1040*time.Millisecond {
			t.Errorf("second event %+v", e)
		}
	})
}

func TestDoValue(t *testing.T) {
	v, err := DoValue(context.Background(), Policy{Attempts: 2, Backoff: backoff.Schedule{Kind: backoff.Immediate}}, func(context.Context) (int, error) {
		return 7, errFlaky
	})
	if v != 0 || !errors.Is(err, ErrExhausted) {
		t.Fatalf("v = %d, err = %v", v, err)
	}
}

func TestDoInvalidPolicy(t *testing.T) {
	err := Do(context.Background(), Policy{MaxPushback: -time.Second}, func(context.Context) error { return errFlaky })
	if err == nil || errors.Is(err, ErrExhausted) {
		t.Fatalf("err = %v", err)
	}
}

type myErr struct{ code int }

func (e *myErr) Error() string { return "my error" }

func TestDoErrorsAsSeesTheCause(t *testing.T) {
	err := Do(context.Background(), Policy{}, func(context.Context) error { return Permanent(&myErr{42}) })
	var me *myErr
	if !errors.As(err, &me) || me.code != 42 {
		t.Fatalf("errors.As failed on %v", err)
	}
}

func TestDoBreakerOpenDoesNotCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		br, err := breaker.New(breaker.Config{MinCalls: 2, FailureRatio: 0.5, Cooldown: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		p := Policy{Attempts: 1, Breaker: br}
		for range 2 {
			_ = Do(t.Context(), p, func(context.Context) error { return errFlaky })
		}
		called := false
		var seen []Event
		p.Observe = func(_ context.Context, e Event) { seen = append(seen, e) }
		err = Do(t.Context(), p, func(context.Context) error { called = true; return nil })
		if len(seen) != 1 || seen[0].Reason != ReasonBreakerOpen {
			t.Errorf("observer saw %+v, want one breaker-open give-up", seen)
		}
		var ex *ExhaustedError
		if called || !errors.As(err, &ex) || ex.Reason != ReasonBreakerOpen || !errors.Is(err, breaker.ErrOpen) {
			t.Fatalf("called = %v, err = %v", called, err)
		}
	})
}

func TestDoBudgetDenies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, err := budget.New(budget.Config{Ratio: 0.1, MinPerSecond: 0.1, Window: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		p := Policy{Attempts: 3, Budget: b, Backoff: backoff.Schedule{Kind: backoff.Immediate}}
		var calls atomic.Int64
		var denied int
		for range 100 { // over one window: requests count once their second is over
			time.Sleep(100 * time.Millisecond)
			err := Do(t.Context(), p, func(context.Context) error { calls.Add(1); return errFlaky })
			var ex *ExhaustedError
			if errors.As(err, &ex) && ex.Reason == ReasonBudget {
				denied++
				if !errors.Is(err, budget.ErrExhausted) {
					t.Fatalf("budget give-up does not match budget.ErrExhausted: %v", err)
				}
			}
		}
		retries := calls.Load() - 100
		// The bucket's 5, then 10% of 100 requests (the floor of 0.1/s
		// adds nothing on top): 15, less what the full bucket lost.
		if retries > 15 || retries < 13 || denied == 0 {
			t.Fatalf("retries = %d, denied = %d", retries, denied)
		}
	})
}

func TestDoFakeClock(t *testing.T) {
	clk := clocktest.New(t0)
	done := make(chan error)
	calls := 0
	go func() {
		done <- Do(context.Background(), Policy{Clock: clk, Backoff: fixed(time.Hour)}, func(context.Context) error {
			calls++
			return errFlaky
		})
	}()
	clk.BlockUntil(1)
	clk.Advance(time.Hour)
	clk.BlockUntil(1)
	clk.Advance(time.Hour)
	if err := <-done; !errors.Is(err, ErrExhausted) || calls != 3 {
		t.Fatalf("err = %v, calls = %d", err, calls)
	}
}

func TestDoAllocs(t *testing.T) {
	ctx := context.Background()
	ok := func(context.Context) error { return nil }
	if n := testing.AllocsPerRun(100, func() { _ = Do(ctx, Policy{}, ok) }); n != 0 {
		t.Errorf("success path: %v allocs, want 0", n)
	}
	imm := Policy{Backoff: backoff.Schedule{Kind: backoff.Immediate}}
	var i int
	once := func(context.Context) error {
		i++
		if i%2 == 1 {
			return errFlaky
		}
		return nil
	}
	if n := testing.AllocsPerRun(100, func() { _ = Do(ctx, imm, once) }); n > 1 {
		t.Errorf("one retry: %v allocs, want at most 1", n)
	}
	fail := func(context.Context) error { return errFlaky }
	if n := testing.AllocsPerRun(100, func() { _ = Do(ctx, imm, fail) }); n > 2 {
		t.Errorf("three failures: %v allocs, want at most 2 (one is the returned error)", n)
	}
}

func TestDoUpstreamOwnerMakesOneAttempt(t *testing.T) {
	calls := 0
	ctx := deadline.WithUpstreamOwner(context.Background())
	err := Do(ctx, Policy{Backoff: backoff.Schedule{Kind: backoff.Immediate}}, func(context.Context) error { calls++; return errFlaky })
	var ex *ExhaustedError
	if calls != 1 || !errors.As(err, &ex) || ex.Reason != ReasonUpstreamOwns {
		t.Fatalf("calls = %d, err = %v", calls, err)
	}
	if deadline.UpstreamOwns(context.Background()) {
		t.Error("a plain context is marked")
	}
}

func TestDoValueAllocs(t *testing.T) {
	ctx := context.Background()
	fn := func(context.Context) (int, error) { return 42, nil }
	if n := testing.AllocsPerRun(100, func() { _, _ = DoValue(ctx, Policy{}, fn) }); n != 0 {
		t.Errorf("DoValue success path: %v allocs, want 0", n)
	}
}

// An attempt that hangs until TimeBudget cuts it off ends the call with
// ReasonTimeBudget, not as a permanent error.
func TestDoTimeBudgetCutsAHangingAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		err := Do(t.Context(), Policy{TimeBudget: time.Second, AttemptTimeout: 10 * time.Second}, func(ctx context.Context) error {
			calls++
			<-ctx.Done()
			return ctx.Err()
		})
		var ex *ExhaustedError
		if !errors.As(err, &ex) || ex.Reason != ReasonTimeBudget || calls != 1 {
			t.Fatalf("calls = %d, err = %v", calls, err)
		}
		if o := ex.Trace[0].Outcome; o != OutcomeTimeout {
			t.Errorf("outcome %v, want timeout", o)
		}
	})
}

// A nil function is a programming error that Do names, instead of a nil
// dereference deep in its loop.
func TestDoNilFunctionPanicsSayingSo(t *testing.T) {
	for name, call := range map[string]func(){
		"Do":      func() { _ = Do(context.Background(), Policy{}, nil) },
		"DoValue": func() { _, _ = DoValue[int](context.Background(), Policy{}, nil) },
	} {
		func() {
			defer func() {
				if r, want := recover(), "retry: "+name+" with a nil function"; r != want {
					t.Errorf("%s(nil): panic %v, want %q", name, r, want)
				}
			}()
			call()
		}()
	}
}
