package plan

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/deadline"
)

const msec = time.Millisecond

// checkoutPlan is a plan with no problems: 2s at the edge, 100ms reserved.
func checkoutPlan() deadline.Plan {
	return deadline.Plan{
		Deadline: 2 * time.Second,
		Reserve:  100 * msec,
		Steps: []deadline.PlanStep{
			{Name: "validate", P99: 5 * msec, Budget: 20 * msec},
			// 2 attempts: 2×120ms + at most 100ms backoff = 340ms.
			{Name: "stock", P99: 120 * msec, Budget: 400 * msec, Attempts: 2, AttemptTimeout: 300 * msec},
			{Name: "payment", P99: 400 * msec, Budget: 900 * msec},
			{Name: "save", P99: 30 * msec, Budget: 150 * msec, Attempts: 3,
				Backoff: backoff.Schedule{Kind: backoff.Constant, Base: 10 * msec}},
		},
	}
}

// Check returns the plan's Validate error, and no report, for an invalid
// plan.
func TestCheckInvalid(t *testing.T) {
	for _, p := range []deadline.Plan{{}, {Deadline: time.Second}, {Deadline: time.Second,
		Steps: []deadline.PlanStep{{Name: "a", P99: msec, Budget: 10 * msec}, {Name: "a", P99: msec, Budget: 10 * msec}}}} {
		err := p.Validate()
		var pe *deadline.PlanError
		if !errors.As(err, &pe) {
			t.Fatalf("Validate(%+v) = %v, want a *PlanError", p, err)
		}
		if r, cerr := Check(p); cerr == nil || cerr.Error() != err.Error() || len(r.Steps) != 0 {
			t.Errorf("Check(%+v) error = %v, want the Validate error %v", p, cerr, err)
		}
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
		edit   func(p *deadline.Plan)
		want   []ProblemCode
		step   string // the step named by the first problem
		substr string // in the first problem's message
	}{
		{"ok", func(*deadline.Plan) {}, nil, "", ""},
		{"ok at exactly the deadline", func(p *deadline.Plan) { p.Steps[2].Budget = 900*msec + 410*msec }, nil, "", ""},
		{"ok at exactly p99", func(p *deadline.Plan) { p.Steps[2].Budget = 400 * msec }, nil, "", ""},
		{"ok at exactly 10x", func(p *deadline.Plan) { p.Steps[0].Budget = 50 * msec }, nil, "", ""},
		{"ok when the retry exactly fits", func(p *deadline.Plan) { p.Steps[1].Budget = 340 * msec }, nil, "", ""},
		{"ok with timeout equal to budget", func(p *deadline.Plan) { p.Steps[1].AttemptTimeout = 400 * msec }, nil, "", ""},

		{"over the deadline", func(p *deadline.Plan) { p.Steps[2].Budget = 1500 * msec },
			[]ProblemCode{ProblemOverDeadline}, "",
			`step budgets add up to 2.07s, above the 1.9s the steps have (deadline 2s minus reserve 100ms): in the worst case "payment" gets 1.48s of its 1.5s and "save" is refused`},
		{"over the deadline because of the reserve", func(p *deadline.Plan) { p.Reserve = 600 * msec },
			[]ProblemCode{ProblemOverDeadline}, "", `"save" gets 80ms of its 150ms`},
		{"below p99", func(p *deadline.Plan) { p.Steps[2].Budget = 399 * msec },
			[]ProblemCode{ProblemBelowP99}, "payment", `"payment": budget 399ms is below its p99 400ms`},
		{"far above p99", func(p *deadline.Plan) { p.Steps[0].Budget = 51 * msec },
			[]ProblemCode{ProblemFarAboveP99}, "validate", `"validate": budget 51ms is 10.2× its p99 5ms`},
		{"far above what the attempts need", func(p *deadline.Plan) {
			p.Steps[1].Budget, p.Steps[2].Budget, p.Steps[3].Budget = 340*msec, 400*msec, 1101*msec
		},
			[]ProblemCode{ProblemFarAboveP99}, "save", `budget 1.101s is 10× the 110ms its 3 attempts need`},
		{"cannot retry", func(p *deadline.Plan) { p.Steps[1].Budget = 200 * msec; p.Steps[1].AttemptTimeout = 0 },
			[]ProblemCode{ProblemRetryDoesNotFit}, "stock", `"stock": cannot retry inside its budget: 2 attempts need 340ms at p99 with worst-case backoff, budget 200ms holds only the first`},
		{"only some retries fit", func(p *deadline.Plan) { p.Steps[3].Budget = 100 * msec },
			[]ProblemCode{ProblemRetryDoesNotFit}, "save", `3 attempts need 110ms at p99 with worst-case backoff, budget 100ms holds only 2 of them`},
		{"budget below p99 is not also a retry problem", func(p *deadline.Plan) { p.Steps[1].Budget = 100 * msec; p.Steps[1].AttemptTimeout = 0 },
			[]ProblemCode{ProblemBelowP99}, "stock", "below its p99"},
		{"timeout above the budget", func(p *deadline.Plan) { p.Steps[1].AttemptTimeout = 30 * time.Second },
			[]ProblemCode{ProblemTimeoutAboveUpstream}, "stock", `"stock": downstream timeout 30s is longer than the 400ms upstream gives it (its budget)`},
		{"timeout above the deadline", func(p *deadline.Plan) {
			p.Steps = p.Steps[:1]
			p.Steps[0].Budget, p.Steps[0].P99, p.Steps[0].AttemptTimeout = 1900*msec, 1*time.Second, 5*time.Second
		}, []ProblemCode{ProblemTimeoutAboveUpstream}, "validate", "than the 1.9s upstream gives it (its budget)"},
		{"several problems, plan-wide first", func(p *deadline.Plan) {
			p.Steps[0].Budget = 1100 * msec
			p.Steps[2].Budget = 300 * msec
		}, []ProblemCode{ProblemOverDeadline, ProblemFarAboveP99, ProblemBelowP99}, "", "1.95s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := checkoutPlan()
			p.Steps = slices.Clone(p.Steps)
			tt.edit(&p)
			r, err := Check(p)
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
	r, err := Check(p)
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
		p := deadline.Plan{Deadline: time.Hour, Steps: []deadline.PlanStep{{Name: "a", P99: 10 * msec, Budget: time.Minute, Attempts: 4, Backoff: tt.s}}}
		r, err := Check(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Steps[0].Need; got != tt.want {
			t.Errorf("%s: need %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestCheckSaturates(t *testing.T) {
	p := deadline.Plan{Deadline: math.MaxInt64, Steps: []deadline.PlanStep{
		{Name: "a", P99: math.MaxInt64 / 2, Budget: math.MaxInt64 - 1, Attempts: 1000},
		{Name: "b", P99: 1, Budget: math.MaxInt64},
	}}
	r, err := Check(p)
	if err != nil {
		t.Fatal(err)
	}
	if r.Total != math.MaxInt64 || r.Steps[0].Need != math.MaxInt64 || r.Steps[0].AttemptsFit != 1 {
		t.Errorf("total %v, need %v, fit %d", r.Total, r.Steps[0].Need, r.Steps[0].AttemptsFit)
	}
}

// Check never panics, and its numbers agree with each other, for any valid
// plan of two steps.
func FuzzPlanCheck(f *testing.F) {
	f.Add(int64(2e9), int64(1e8), int64(5e6), int64(2e7), 1, int64(0), int64(12e7), int64(4e8), 2, int64(3e10), uint8(0), uint8(0))
	f.Add(int64(math.MaxInt64), int64(0), int64(1), int64(math.MaxInt64), 1000, int64(0), int64(math.MaxInt64/2), int64(math.MaxInt64), 1000, int64(0), uint8(3), uint8(3))
	f.Fuzz(func(t *testing.T, dl, reserve, p1, b1 int64, a1 int, t1, p2, b2 int64, a2 int, t2 int64, kind, jitter uint8) {
		p := deadline.Plan{Deadline: time.Duration(dl), Reserve: time.Duration(reserve), Steps: []deadline.PlanStep{
			{Name: "a", P99: time.Duration(p1), Budget: time.Duration(b1), Attempts: a1, AttemptTimeout: time.Duration(t1)},
			{Name: "b", P99: time.Duration(p2), Budget: time.Duration(b2), Attempts: a2, AttemptTimeout: time.Duration(t2),
				Backoff: backoff.Schedule{Kind: backoff.Kind(kind % 4), Jitter: backoff.Jitter(jitter % 4)}},
		}}
		r, err := Check(p)
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
