package deadline

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/heed-go/heed/backoff"
)

const msec = time.Millisecond

// checkout is a plan with no problems: 2s at the edge, 100ms reserved.
func checkoutPlan() Plan {
	return Plan{
		Deadline: 2 * time.Second,
		Reserve:  100 * msec,
		Steps: []PlanStep{
			{Name: "validate", P99: 5 * msec, Budget: 20 * msec},
			// 2 attempts: 2×120ms + at most 100ms backoff = 340ms.
			{Name: "stock", P99: 120 * msec, Budget: 400 * msec, Attempts: 2, AttemptTimeout: 300 * msec},
			{Name: "payment", P99: 400 * msec, Budget: 900 * msec},
			{Name: "save", P99: 30 * msec, Budget: 150 * msec, Attempts: 3,
				Backoff: backoff.Schedule{Kind: backoff.Constant, Base: 10 * msec}},
		},
	}
}

func TestValidate(t *testing.T) {
	step := func(edit func(*PlanStep)) Plan {
		p := Plan{Deadline: time.Second, Steps: []PlanStep{{Name: "a", P99: msec, Budget: 10 * msec}, {Name: "b", P99: msec, Budget: 10 * msec}}}
		edit(&p.Steps[1])
		return p
	}
	tests := []struct {
		name string
		p    Plan
		want string
	}{
		{"no deadline", Plan{}, "deadline: plan: Deadline is 0s, must be positive"},
		{"negative deadline", Plan{Deadline: -time.Second}, "deadline: plan: Deadline is -1s, must be positive"},
		{"negative reserve", Plan{Deadline: time.Second, Reserve: -msec}, "deadline: plan: Reserve is -1ms, must not be negative"},
		{"reserve eats the deadline", Plan{Deadline: time.Second, Reserve: time.Second}, "deadline: plan: Reserve is 1s, must be below the deadline 1s"},
		{"no steps", Plan{Deadline: time.Second}, "deadline: plan: Steps is empty, a plan needs at least one step"},
		{"no name", step(func(s *PlanStep) { s.Name = "" }), "deadline: plan step 2: Name is empty, every step needs a name"},
		{"duplicate name", step(func(s *PlanStep) { s.Name = "a" }), `deadline: plan step 2 ("a"): Name is already used by step 1`},
		{"negative p99", step(func(s *PlanStep) { s.P99 = -msec }), `deadline: plan step 2 ("b"): P99 is -1ms, must not be negative`},
		{"no p99", step(func(s *PlanStep) { s.P99 = 0 }), `P99 is missing, must be positive`},
		{"negative budget", step(func(s *PlanStep) { s.Budget = -time.Second }), `deadline: plan step 2 ("b"): Budget is -1s, must not be negative`},
		{"no budget", step(func(s *PlanStep) { s.Budget = 0 }), `Budget is missing, must be positive`},
		{"negative timeout", step(func(s *PlanStep) { s.AttemptTimeout = -time.Second }), `AttemptTimeout is -1s, must not be negative`},
		{"negative attempts", step(func(s *PlanStep) { s.Attempts = -1 }), `Attempts is -1, must be from 1 to 1000 (0 means 1)`},
		{"too many attempts", step(func(s *PlanStep) { s.Attempts = maxStepAttempts + 1 }), `Attempts is 1001`},
		{"bad backoff", step(func(s *PlanStep) { s.Backoff.Base = -msec }), `deadline: plan step 2 ("b"): Backoff.Base is -1ms, must not be negative`},
	}
	for _, tt := range tests {
		err := tt.p.Validate()
		var pe *PlanError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Validate() = %v, want a *PlanError containing %q", tt.name, err, tt.want)
			continue
		}
	}
	if err := checkoutPlan().Validate(); err != nil {
		t.Errorf("checkout: %v", err)
	}
}

func TestStepAt(t *testing.T) {
	p := checkoutPlan()
	dl := t0.Add(2 * time.Second)
	edge := fixedCtx{context.Background(), dl}
	tests := []struct {
		name    string
		ctx     context.Context
		step    string
		now     time.Time
		wantDL  time.Time // zero: an error is expected
		wantErr string
	}{
		{"budget applies", edge, "stock", t0, t0.Add(400 * msec), ""},
		{"deadline minus reserve applies", edge, "payment", t0.Add(1200 * msec), dl.Add(-100 * msec), ""},
		{"just enough for p99", edge, "payment", dl.Add(-500 * msec), dl.Add(-100 * msec), ""},
		{"refused", edge, "payment", dl.Add(-499 * msec), time.Time{},
			`deadline: step "payment" refused: 499ms left, needs 500ms (p99 400ms + reserve 100ms)`},
		{"deadline passed", edge, "save", dl, time.Time{}, context.DeadlineExceeded.Error()},
		{"no deadline: budget only", context.Background(), "save", t0, t0.Add(150 * msec), ""},
		{"unknown step", edge, "ship", t0, time.Time{}, `deadline: plan has no step "ship"`},
	}
	for _, tt := range tests {
		ctx, cancel, err := p.StepAt(tt.ctx, tt.step, tt.now)
		if tt.wantDL.IsZero() {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("%s: error %v, want %q", tt.name, err, tt.wantErr)
			}
			if ctx != tt.ctx {
				t.Errorf("%s: on error the context is not the parent", tt.name)
			}
			cancel() // must be safe
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		got, _ := ctx.Deadline()
		if !got.Equal(tt.wantDL) {
			t.Errorf("%s: deadline %v, want %v", tt.name, got.Sub(t0), tt.wantDL.Sub(t0))
		}
		cancel()
	}
}

func TestStepRefusedMatchesErrTooClose(t *testing.T) {
	p := checkoutPlan()
	dl := t0.Add(2 * time.Second)
	_, _, err := p.StepAt(fixedCtx{context.Background(), dl}, "payment", dl.Add(-300*msec))
	if !errors.Is(err, ErrTooClose) {
		t.Fatalf("%v does not match ErrTooClose", err)
	}
	var re *RefusedError
	if !errors.As(err, &re) || re.Step != "payment" || re.Remaining != 300*msec || re.P99 != 400*msec || re.Reserve != 100*msec {
		t.Errorf("RefusedError = %+v", re)
	}
	var tc *tooCloseError
	if !errors.As(err, &tc) || tc.Remaining != 300*msec || tc.Need != 500*msec {
		t.Errorf("tooCloseError = %+v", tc)
	}
}

func TestStepCanceledParent(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, stop, err := checkoutPlan().Step(ctx, "stock")
	stop()
	if err != context.Canceled {
		t.Errorf("err = %v, want context.Canceled unchanged", err)
	}
}

// Step is StepAt with the real clock; its context is a child of the
// parent and ends with it.
func TestStepRealClock(t *testing.T) {
	parent, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	before := time.Now()
	ctx, stop, err := checkoutPlan().Step(parent, "validate")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	got, _ := ctx.Deadline()
	if got.Before(before.Add(20*msec)) || got.After(time.Now().Add(20*msec)) {
		t.Errorf("deadline %v not about 20ms from now", time.Until(got))
	}
	cancel()
	<-ctx.Done()
}

func BenchmarkPlanStepAt(b *testing.B) {
	p := checkoutPlan()
	now := time.Now()
	ctx, cancel := context.WithDeadline(context.Background(), now.Add(time.Hour))
	defer cancel()
	b.ReportAllocs()
	for b.Loop() {
		c, stop, err := p.StepAt(ctx, "save", now)
		if err != nil || c == nil {
			b.Fatal(err)
		}
		stop()
	}
}
