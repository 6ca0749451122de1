package deadline

import (
	"context"
	"errors"
	"math"
	"slices"
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

func problemCodes(ps []Problem) []ProblemCode {
	var out []ProblemCode
	for _, p := range ps {
		out = append(out, p.Code)
	}
	return out
}

func TestCheckRules(t *testing.T) {
	tests := []struct {
		name   string
		edit   func(p *Plan)
		want   []ProblemCode
		step   string // the step named by the first problem
		substr string // in the first problem's message
	}{
		{"ok", func(*Plan) {}, nil, "", ""},
		{"ok at exactly the deadline", func(p *Plan) { p.Steps[2].Budget = 900*msec + 410*msec }, nil, "", ""},
		{"ok at exactly p99", func(p *Plan) { p.Steps[2].Budget = 400 * msec }, nil, "", ""},
		{"ok at exactly 10x", func(p *Plan) { p.Steps[0].Budget = 50 * msec }, nil, "", ""},
		{"ok when the retry exactly fits", func(p *Plan) { p.Steps[1].Budget = 340 * msec }, nil, "", ""},
		{"ok with timeout equal to budget", func(p *Plan) { p.Steps[1].AttemptTimeout = 400 * msec }, nil, "", ""},

		{"over the deadline", func(p *Plan) { p.Steps[2].Budget = 1500 * msec },
			[]ProblemCode{ProblemOverDeadline}, "",
			`step budgets add up to 2.07s, above the 1.9s the steps have (deadline 2s minus reserve 100ms): in the worst case "payment" gets 1.48s of its 1.5s and "save" is refused`},
		{"over the deadline because of the reserve", func(p *Plan) { p.Reserve = 600 * msec },
			[]ProblemCode{ProblemOverDeadline}, "", `"save" gets 80ms of its 150ms`},
		{"below p99", func(p *Plan) { p.Steps[2].Budget = 399 * msec },
			[]ProblemCode{ProblemBelowP99}, "payment", `"payment": budget 399ms is below its p99 400ms`},
		{"far above p99", func(p *Plan) { p.Steps[0].Budget = 51 * msec },
			[]ProblemCode{ProblemFarAboveP99}, "validate", `"validate": budget 51ms is 10.2× its p99 5ms`},
		{"far above what the attempts need", func(p *Plan) { p.Steps[1].Budget, p.Steps[2].Budget, p.Steps[3].Budget = 340*msec, 400*msec, 1101*msec },
			[]ProblemCode{ProblemFarAboveP99}, "save", `budget 1.101s is 10× the 110ms its 3 attempts need`},
		{"cannot retry", func(p *Plan) { p.Steps[1].Budget = 200 * msec; p.Steps[1].AttemptTimeout = 0 },
			[]ProblemCode{ProblemRetryDoesNotFit}, "stock", `"stock": cannot retry inside its budget: 2 attempts need 340ms at p99 with worst-case backoff, budget 200ms holds only the first`},
		{"only some retries fit", func(p *Plan) { p.Steps[3].Budget = 100 * msec },
			[]ProblemCode{ProblemRetryDoesNotFit}, "save", `3 attempts need 110ms at p99 with worst-case backoff, budget 100ms holds only 2 of them`},
		{"budget below p99 is not also a retry problem", func(p *Plan) { p.Steps[1].Budget = 100 * msec; p.Steps[1].AttemptTimeout = 0 },
			[]ProblemCode{ProblemBelowP99}, "stock", "below its p99"},
		{"timeout above the budget", func(p *Plan) { p.Steps[1].AttemptTimeout = 30 * time.Second },
			[]ProblemCode{ProblemTimeoutAboveUpstream}, "stock", `"stock": downstream timeout 30s is longer than the 400ms upstream gives it (its budget)`},
		{"timeout above the deadline", func(p *Plan) {
			p.Steps = p.Steps[:1]
			p.Steps[0].Budget, p.Steps[0].P99, p.Steps[0].AttemptTimeout = 1900*msec, 1*time.Second, 5*time.Second
		}, []ProblemCode{ProblemTimeoutAboveUpstream}, "validate", "than the 1.9s upstream gives it (its budget)"},
		{"several problems, plan-wide first", func(p *Plan) {
			p.Steps[0].Budget = 1100 * msec
			p.Steps[2].Budget = 300 * msec
		}, []ProblemCode{ProblemOverDeadline, ProblemFarAboveP99, ProblemBelowP99}, "", "1.95s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := checkoutPlan()
			p.Steps = slices.Clone(p.Steps)
			tt.edit(&p)
			r, err := p.Check()
			if err != nil {
				t.Fatal(err)
			}
			if got := problemCodes(r.Problems); !slices.Equal(got, tt.want) {
				t.Fatalf("problems = %v, want %v\n%v", got, tt.want, r.Problems)
			}
			if r.OK() != (len(tt.want) == 0) {
				t.Errorf("OK() = %v", r.OK())
			}
			if len(tt.want) == 0 {
				return
			}
			first := r.Problems[0]
			if first.Step != tt.step {
				t.Errorf("first problem's step = %q, want %q", first.Step, tt.step)
			}
			if !strings.Contains(first.Message, tt.substr) || first.String() != first.Message {
				t.Errorf("message %q does not contain %q", first.Message, tt.substr)
			}
			// Each step's problems are also listed in the step's report.
			var n int
			for _, s := range r.Steps {
				for _, sp := range s.Problems {
					if sp.Step != s.Name {
						t.Errorf("step %q lists a problem of %q", s.Name, sp.Step)
					}
				}
				n += len(s.Problems)
			}
			plan := 0
			if tt.want[0] == ProblemOverDeadline {
				plan = 1
			}
			if n+plan != len(r.Problems) {
				t.Errorf("%d step problems + %d plan problems, %d in all", n, plan, len(r.Problems))
			}
		})
	}
}

func TestCheckNumbers(t *testing.T) {
	p := checkoutPlan()
	p.Steps[2].Budget = 1500 * msec // over the deadline: save starts too late
	r, err := p.Check()
	if err != nil {
		t.Fatal(err)
	}
	if r.Available != 1900*msec || r.Total != 2070*msec {
		t.Errorf("available %v, total %v", r.Available, r.Total)
	}
	want := []StepReport{
		{Name: "validate", P99: 5 * msec, Budget: 20 * msec, Attempts: 1, Multiple: 4,
			Need: 5 * msec, Holds: true, AttemptsFit: 1, Start: 0, Left: 1900 * msec, Gets: 20 * msec},
		{Name: "stock", P99: 120 * msec, Budget: 400 * msec, Attempts: 2, AttemptTimeout: 300 * msec, Multiple: 400.0 / 120,
			Need: 340 * msec, Holds: true, AttemptsFit: 2, Start: 20 * msec, Left: 1880 * msec, Gets: 400 * msec},
		{Name: "payment", P99: 400 * msec, Budget: 1500 * msec, Attempts: 1, Multiple: 3.75,
			Need: 400 * msec, Holds: true, AttemptsFit: 1, Start: 420 * msec, Left: 1480 * msec, Gets: 1480 * msec},
		{Name: "save", P99: 30 * msec, Budget: 150 * msec, Attempts: 3, Multiple: 5,
			Need: 110 * msec, Holds: true, AttemptsFit: 3, Start: 1920 * msec, Left: 0, Gets: 0, Refused: true},
	}
	for i, w := range want {
		g := r.Steps[i]
		g.Problems = nil
		if math.Abs(g.Multiple-w.Multiple) > 1e-9 {
			t.Errorf("%s: multiple %v, want %v", w.Name, g.Multiple, w.Multiple)
		}
		g.Multiple = w.Multiple
		if !equalStepReport(g, w) {
			t.Errorf("step %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
}

func equalStepReport(a, b StepReport) bool {
	a.Problems, b.Problems = nil, nil
	return a.Name == b.Name && a.P99 == b.P99 && a.Budget == b.Budget && a.Attempts == b.Attempts &&
		a.AttemptTimeout == b.AttemptTimeout && a.Multiple == b.Multiple && a.Need == b.Need && a.Holds == b.Holds &&
		a.AttemptsFit == b.AttemptsFit && a.Start == b.Start && a.Left == b.Left && a.Gets == b.Gets &&
		a.Refused == b.Refused
}

// The worst case of the backoff is the upper end of each jitter range.
func TestCheckNeedUsesWorstBackoff(t *testing.T) {
	tests := []struct {
		name string
		s    backoff.Schedule
		want time.Duration // 4 attempts of 10ms
	}{
		{"default: exponential from 100ms, full jitter", backoff.Schedule{}, 40*msec + 100*msec + 200*msec + 400*msec},
		{"equal jitter has the same upper end", backoff.Schedule{Jitter: backoff.EqualJitter}, 40*msec + 700*msec},
		{"capped", backoff.Schedule{Cap: 150 * msec}, 40*msec + 100*msec + 150*msec + 150*msec},
		{"decorrelated grows from the longest", backoff.Schedule{Jitter: backoff.DecorrelatedJitter, Cap: time.Second},
			40*msec + 300*msec + 900*msec + 1000*msec},
		{"immediate", backoff.Schedule{Kind: backoff.Immediate}, 40 * msec},
	}
	for _, tt := range tests {
		p := Plan{Deadline: time.Hour, Steps: []PlanStep{{Name: "a", P99: 10 * msec, Budget: time.Minute, Attempts: 4, Backoff: tt.s}}}
		r, err := p.Check()
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Steps[0].Need; got != tt.want {
			t.Errorf("%s: need %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestCheckSaturates(t *testing.T) {
	p := Plan{Deadline: math.MaxInt64, Steps: []PlanStep{
		{Name: "a", P99: math.MaxInt64 / 2, Budget: math.MaxInt64 - 1, Attempts: MaxStepAttempts},
		{Name: "b", P99: 1, Budget: math.MaxInt64},
	}}
	r, err := p.Check()
	if err != nil {
		t.Fatal(err)
	}
	if r.Total != math.MaxInt64 || r.Steps[0].Need != math.MaxInt64 || r.Steps[0].AttemptsFit != 1 {
		t.Errorf("total %v, need %v, fit %d", r.Total, r.Steps[0].Need, r.Steps[0].AttemptsFit)
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
		{"too many attempts", step(func(s *PlanStep) { s.Attempts = MaxStepAttempts + 1 }), `Attempts is 1001`},
		{"bad backoff", step(func(s *PlanStep) { s.Backoff.Base = -msec }), `deadline: plan step 2 ("b"): Backoff.Base is -1ms, must not be negative`},
	}
	for _, tt := range tests {
		err := tt.p.Validate()
		var pe *PlanError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Validate() = %v, want a *PlanError containing %q", tt.name, err, tt.want)
			continue
		}
		if _, cerr := tt.p.Check(); cerr == nil || cerr.Error() != err.Error() {
			t.Errorf("%s: Check() error = %v, want the Validate error", tt.name, cerr)
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

// Check never panics, and its numbers agree with each other, for any valid
// plan of two steps.
func FuzzPlanCheck(f *testing.F) {
	f.Add(int64(2e9), int64(1e8), int64(5e6), int64(2e7), 1, int64(0), int64(12e7), int64(4e8), 2, int64(3e10), uint8(0), uint8(0))
	f.Add(int64(math.MaxInt64), int64(0), int64(1), int64(math.MaxInt64), 1000, int64(0), int64(math.MaxInt64/2), int64(math.MaxInt64), 1000, int64(0), uint8(3), uint8(3))
	f.Fuzz(func(t *testing.T, dl, reserve, p1, b1 int64, a1 int, t1, p2, b2 int64, a2 int, t2 int64, kind, jitter uint8) {
		p := Plan{Deadline: time.Duration(dl), Reserve: time.Duration(reserve), Steps: []PlanStep{
			{Name: "a", P99: time.Duration(p1), Budget: time.Duration(b1), Attempts: a1, AttemptTimeout: time.Duration(t1)},
			{Name: "b", P99: time.Duration(p2), Budget: time.Duration(b2), Attempts: a2, AttemptTimeout: time.Duration(t2),
				Backoff: backoff.Schedule{Kind: backoff.Kind(kind % 4), Jitter: backoff.Jitter(jitter % 4)}},
		}}
		r, err := p.Check()
		if err != nil {
			if p.Validate() == nil {
				t.Fatalf("Check failed on a valid plan: %v", err)
			}
			return
		}
		for _, s := range r.Steps {
			if s.Left < 0 || s.Left > r.Available || s.Gets > s.Budget || s.Gets > s.Left ||
				s.AttemptsFit < 0 || s.AttemptsFit > s.Attempts || s.Holds != (s.AttemptsFit == s.Attempts) ||
				s.Need < s.P99 || s.Refused != (s.Left < s.P99) {
				t.Errorf("inconsistent step report %+v (plan %+v)", s, p)
			}
		}
		if r.OK() != (len(r.Problems) == 0) || (r.Total > r.Available) != slices.ContainsFunc(r.Problems,
			func(p Problem) bool { return p.Code == ProblemOverDeadline }) {
			t.Errorf("problems %v, total %v, available %v", r.Problems, r.Total, r.Available)
		}
	})
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
