package plan

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/heed-go/heed/deadline"
)

// FarAboveP99 is the multiple above which a step's budget counts as far
// above what the step needs ([ProblemFarAboveP99]): more than 10 times its
// Need, which for a step of one attempt is 10 × its p99.
//
// A budget that far above normal latency buys nothing on a healthy day and,
// on a bad one, keeps callers waiting and holding resources long after the
// answer stopped being useful (the SRE book's bimodal-latency example: a
// 100 s deadline with 5% of requests hanging turns 5% errors into 80%).
const FarAboveP99 = 10

// ProblemCode names one rule of [Check]. Codes are stable strings, so
// tests and JSON output can match them; the zero value is no code.
type ProblemCode string

// The rules [Check] applies.
const (
	// ProblemOverDeadline: the step budgets add up to more than the plan
	// has for its steps, Deadline − Reserve, so in the worst case the last
	// steps get less than their budget or are refused. Not tied to a step.
	ProblemOverDeadline ProblemCode = "over-deadline"
	// ProblemBelowP99: a budget below the step's p99, so more than 1 call
	// in 100 is cut off even on a healthy day.
	ProblemBelowP99 ProblemCode = "below-p99"
	// ProblemFarAboveP99: a budget more than [FarAboveP99] times what the
	// step needs (its attempts at p99 plus their worst-case backoff).
	ProblemFarAboveP99 ProblemCode = "far-above-p99"
	// ProblemRetryDoesNotFit: a step of several attempts whose budget does
	// not hold them all at p99 plus the worst case of their backoff, so its
	// later attempts never start.
	ProblemRetryDoesNotFit ProblemCode = "retry-does-not-fit"
	// ProblemTimeoutAboveUpstream: the step's own timeout is longer than
	// the time its caller gives it, min(Budget, Deadline − Reserve): the
	// downstream keeps working, or the client keeps waiting if it does not
	// honour the context, after the caller has given up.
	ProblemTimeoutAboveUpstream ProblemCode = "timeout-above-upstream"
)

// Problem is one thing wrong with a plan, found by [Check]. It is a
// plain value; the zero value is not produced by this package.
type Problem struct {
	// Code is the rule broken.
	Code ProblemCode
	// Step is the step's name, or "" for a problem of the whole plan.
	Step string
	// Message explains the problem with the plan's numbers, in lower case
	// and without the package prefix, e.g. `"stock": budget 100ms is below
	// its p99 120ms`.
	Message string
}

// String returns p.Message.
func (p Problem) String() string { return p.Message }

// Report is the result of [Check]: the numbers of each step and the
// problems found. It is a plain value; the zero value is an empty report
// with no problems.
type Report struct {
	// Deadline and Reserve are the plan's.
	Deadline, Reserve time.Duration
	// Available is the time the steps have: Deadline − Reserve.
	Available time.Duration
	// Total is the sum of the step budgets (saturating).
	Total time.Duration
	// Steps has one entry per step of the plan, in order.
	Steps []StepReport
	// Problems lists every problem found: those of the whole plan first,
	// then those of each step, in step order. Empty when the plan is OK.
	Problems []Problem
}

// OK reports whether the check found no problem.
func (r Report) OK() bool { return len(r.Problems) == 0 }

// StepReport is what [Check] found about one step. It is a plain
// value; the zero value is not produced by this package.
type StepReport struct {
	// The step as planned, with Attempts defaulted.
	Name           string
	P99, Budget    time.Duration
	Attempts       int
	AttemptTimeout time.Duration
	// Multiple is Budget as a multiple of P99.
	Multiple float64
	// Need is what all the step's attempts need: Attempts × P99 plus the
	// longest backoff the schedule can draw between them (the upper end of
	// its jitter range), saturating.
	Need time.Duration
	// Holds reports whether Budget >= Need: the budget holds every attempt
	// plus its backoff.
	Holds bool
	// AttemptsFit is how many attempts fit in Budget in the same worst
	// case, from 0 (Budget < P99) to Attempts.
	AttemptsFit int
	// Start is when the step starts in the worst case, counted from the
	// start of the request: every earlier step used its whole budget.
	Start time.Duration
	// Left is the time left for this step and the later ones when it
	// starts in the worst case: Available − Start, or 0 when that is
	// negative.
	Left time.Duration
	// Gets is the time the step may use in that worst case:
	// min(Budget, Left), what deadline.Plan.Step would give it.
	Gets time.Duration
	// Refused reports whether deadline.Plan.Step would refuse to start the step in
	// that worst case, because Left is below its P99.
	Refused bool
	// Problems are the problems of this step, also listed in
	// Report.Problems.
	Problems []Problem
}

// Check reviews the deadline plan p and reports, per step, its budget as a multiple of its
// p99, whether the budget holds all its attempts plus their backoff, the
// time left when it starts in the worst case, and the problems found. The
// rules are the Problem* codes; the thresholds are [FarAboveP99] and p99
// itself. It returns the deadline.Plan.Validate error, and no report, when p is
// not valid.
//
// Check is pure: it reads no clock and draws no random numbers; jitter is
// taken at its worst, the upper end of each delay's range.
func Check(p deadline.Plan) (Report, error) {
	if err := p.Validate(); err != nil {
		return Report{}, err
	}
	r := Report{
		Deadline:  p.Deadline,
		Reserve:   p.Reserve,
		Available: p.Deadline - p.Reserve,
		Steps:     make([]StepReport, len(p.Steps)),
	}
	var start time.Duration
	for i, s := range p.Steps {
		sr := StepReport{
			Name: s.Name, P99: s.P99, Budget: s.Budget, Attempts: stepAttempts(s), AttemptTimeout: s.AttemptTimeout,
			Multiple: float64(s.Budget) / float64(s.P99),
			Start:    start,
			Left:     max(0, r.Available-start),
		}
		sr.Need, sr.AttemptsFit = need(s)
		sr.Holds = sr.Need <= s.Budget
		sr.Gets = min(s.Budget, sr.Left)
		sr.Refused = sr.Left < s.P99
		sr.Problems = stepProblems(p, s, sr)
		r.Steps[i] = sr
		start = addSat(start, s.Budget)
	}
	r.Total = start
	if r.Total > r.Available {
		r.Problems = append(r.Problems, overDeadline(r))
	}
	for _, sr := range r.Steps {
		r.Problems = append(r.Problems, sr.Problems...)
	}
	return r, nil
}

// need returns what s's attempts need in the worst case, and how many of
// them fit in its budget.
func need(s deadline.PlanStep) (total time.Duration, fit int) {
	var prev time.Duration
	for k := 1; k <= stepAttempts(s); k++ {
		if k > 1 {
			_, hi := s.Backoff.Range(k-1, prev)
			prev = hi
			total = addSat(total, hi)
		}
		total = addSat(total, s.P99)
		if total <= s.Budget {
			fit = k
		}
	}
	return total, fit
}

func stepProblems(p deadline.Plan, s deadline.PlanStep, sr StepReport) []Problem {
	var out []Problem
	add := func(code ProblemCode, format string, args ...any) {
		out = append(out, Problem{Code: code, Step: s.Name,
			Message: strconv.Quote(s.Name) + ": " + fmt.Sprintf(format, args...)})
	}
	if s.Budget < s.P99 {
		add(ProblemBelowP99, "budget %v is below its p99 %v: more than 1 call in 100 is cut off on a healthy day", s.Budget, s.P99)
	}
	if s.Budget/FarAboveP99 > sr.Need || (s.Budget/FarAboveP99 == sr.Need && s.Budget%FarAboveP99 != 0) {
		what := "its p99 " + s.P99.String()
		if sr.Attempts > 1 {
			what = fmt.Sprintf("the %v its %d attempts need", sr.Need, sr.Attempts)
		}
		add(ProblemFarAboveP99, "budget %v is %s× %s: a slow dependency keeps callers waiting long after the answer stopped being useful",
			s.Budget, fmtMultiple(float64(s.Budget)/float64(sr.Need)), what)
	}
	if sr.Attempts > 1 && !sr.Holds && sr.AttemptsFit > 0 {
		if sr.AttemptsFit == 1 {
			add(ProblemRetryDoesNotFit, "cannot retry inside its budget: %d attempts need %v at p99 with worst-case backoff, budget %v holds only the first",
				sr.Attempts, sr.Need, s.Budget)
		} else {
			add(ProblemRetryDoesNotFit, "%d attempts need %v at p99 with worst-case backoff, budget %v holds only %d of them",
				sr.Attempts, sr.Need, s.Budget, sr.AttemptsFit)
		}
	}
	if up := min(s.Budget, p.Deadline-p.Reserve); s.AttemptTimeout > up {
		which := "its budget"
		if up < s.Budget {
			which = "the deadline minus the reserve"
		}
		add(ProblemTimeoutAboveUpstream, "downstream timeout %v is longer than the %v upstream gives it (%s): work goes on after the caller gave up",
			s.AttemptTimeout, up, which)
	}
	return out
}

func overDeadline(r Report) Problem {
	msg := fmt.Sprintf("step budgets add up to %v, above the %v the steps have (deadline %v", r.Total, r.Available, r.Deadline)
	if r.Reserve > 0 {
		msg += fmt.Sprintf(" minus reserve %v", r.Reserve)
	}
	msg += ")"
	var worst []string
	for _, s := range r.Steps {
		switch {
		case s.Refused:
			worst = append(worst, strconv.Quote(s.Name)+" is refused")
		case s.Gets < s.Budget:
			worst = append(worst, fmt.Sprintf("%q gets %v of its %v", s.Name, s.Gets, s.Budget))
		}
	}
	if len(worst) > 0 {
		msg += ": in the worst case "
		for i, w := range worst {
			switch {
			case i == 0:
			case i == len(worst)-1:
				msg += " and "
			default:
				msg += ", "
			}
			msg += w
		}
	}
	return Problem{Code: ProblemOverDeadline, Message: msg}
}

// fmtMultiple formats a multiple with at most one decimal.
func fmtMultiple(f float64) string {
	if math.IsInf(f, 0) || f >= 1e6 {
		return strconv.FormatFloat(f, 'g', 3, 64)
	}
	return strconv.FormatFloat(math.Round(f*10)/10, 'f', -1, 64)
}

// stepAttempts returns s.Attempts with its default applied.
func stepAttempts(s deadline.PlanStep) int { return max(1, s.Attempts) }
