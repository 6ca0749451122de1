package deadline

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/heed-go/heed/backoff"
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

// MaxStepAttempts is the most attempts a [PlanStep] may make; [Plan.Validate]
// rejects more. Real policies make far fewer (gRPC caps them at 5).
const MaxStepAttempts = 1000

// Plan is a plain description of how one request's deadline is shared out:
// the deadline set at the edge, a reserve kept back for writing the response
// and the network, and the steps the request makes in order, each with its
// own budget.
//
// The zero value is not a usable plan: Deadline and at least one step are
// required; [Plan.Validate] says what is missing. A Plan is a plain value,
// safe to copy; its methods only read it, so while nobody modifies it they
// are safe for concurrent use. The plan itself starts no goroutines.
//
// Most callers want [Plan.Check] to review a plan before deploying it (the
// heed command's "heed plan deadline" prints it), and [Plan.Step] at run
// time to bound each step by its budget and refuse steps that cannot fit.
type Plan struct {
	// Deadline is the whole request's time limit, set at the edge. It must
	// be positive.
	Deadline time.Duration
	// Reserve is kept back from Deadline for the work after the last step:
	// writing the response and the network between the caller and the
	// edge (default 0). It must be below Deadline.
	Reserve time.Duration
	// Steps are the steps of the request, in the order they run, each
	// with a unique non-empty name.
	Steps []PlanStep
}

// PlanStep is one step of a [Plan]: a call to a dependency, or local work,
// with the latency it normally has and the slice of the deadline it may
// use. The zero value is not valid: Name, P99 and Budget are required.
type PlanStep struct {
	// Name identifies the step in reports and errors, e.g. "payment".
	Name string
	// P99 is the step's normal 99th-percentile latency for one attempt,
	// as measured on a healthy day. It must be positive.
	P99 time.Duration
	// Budget is the most time the step may take, all its attempts and the
	// backoff between them included. It must be positive.
	Budget time.Duration
	// Attempts is how many attempts the step may make, the first one
	// included (default 1, at most [MaxStepAttempts]).
	Attempts int
	// Backoff is the schedule of delays between the step's attempts
	// (default: heed's default schedule, the zero [backoff.Schedule]).
	Backoff backoff.Schedule
	// AttemptTimeout is the timeout the step's client or the dependency
	// applies on its own, per attempt, such as a library default (default 0: not
	// known, and not checked). A timeout longer than the step's budget
	// means a hung attempt is cut by the budget, not by the timeout.
	AttemptTimeout time.Duration
}

// PlanError reports an invalid [Plan]: [Plan.Validate] returns it. The
// zero value is a valid (if uninformative) error. It is immutable once made.
type PlanError struct {
	// Step is the index of the bad step in Plan.Steps, or -1 when the
	// problem is with the plan itself.
	Step int
	// Name is the bad step's name, possibly empty.
	Name string
	// Field is the bad field's name, as in the Go struct: "Deadline",
	// "Steps", "Name", "P99", "Budget", "Attempts", "Timeout", or
	// "Backoff.Base" and the like.
	Field string
	// Reason says what is wrong, in lower case.
	Reason string
}

// Error returns a message such as
// `deadline: plan step 2 ("stock"): Budget is -1s, must not be negative`.
func (e *PlanError) Error() string {
	if e.Step < 0 {
		return "deadline: plan: " + e.Field + " " + e.Reason
	}
	where := "step " + strconv.Itoa(e.Step+1)
	if e.Name != "" {
		where += " (" + strconv.Quote(e.Name) + ")"
	}
	return "deadline: plan " + where + ": " + e.Field + " " + e.Reason
}

// Validate returns a [*PlanError] naming the first invalid field of p, or
// nil: a non-positive Deadline, a negative or too large Reserve, no steps, a
// step without a name or with a name already used, a non-positive P99 or
// Budget, a negative Timeout, Attempts out of range, or an invalid Backoff.
func (p Plan) Validate() error {
	plan := func(field, format string, args ...any) error {
		return &PlanError{Step: -1, Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	switch {
	case p.Deadline <= 0:
		return plan("Deadline", "is %v, must be positive", p.Deadline)
	case p.Reserve < 0:
		return plan("Reserve", "is %v, must not be negative", p.Reserve)
	case p.Reserve >= p.Deadline:
		return plan("Reserve", "is %v, must be below the deadline %v", p.Reserve, p.Deadline)
	case len(p.Steps) == 0:
		return plan("Steps", "is empty, a plan needs at least one step")
	}
	seen := make(map[string]int, len(p.Steps))
	for i, s := range p.Steps {
		bad := func(field, format string, args ...any) error {
			return &PlanError{Step: i, Name: s.Name, Field: field, Reason: fmt.Sprintf(format, args...)}
		}
		if j, dup := seen[s.Name]; dup && s.Name != "" {
			return bad("Name", "is already used by step %d", j+1)
		}
		seen[s.Name] = i
		switch {
		case s.Name == "":
			return bad("Name", "is empty, every step needs a name")
		case s.P99 < 0:
			return bad("P99", "is %v, must not be negative", s.P99)
		case s.P99 == 0:
			return bad("P99", "is missing, must be positive")
		case s.Budget < 0:
			return bad("Budget", "is %v, must not be negative", s.Budget)
		case s.Budget == 0:
			return bad("Budget", "is missing, must be positive")
		case s.AttemptTimeout < 0:
			return bad("AttemptTimeout", "is %v, must not be negative", s.AttemptTimeout)
		case s.Attempts < 0 || s.Attempts > MaxStepAttempts:
			return bad("Attempts", "is %d, must be from 1 to %d (0 means 1)", s.Attempts, MaxStepAttempts)
		}
		if err := s.Backoff.Validate(); err != nil {
			if ie, ok := err.(*backoff.InvalidError); ok {
				return bad("Backoff."+ie.Field, "%s", ie.Reason)
			}
			return bad("Backoff", "%v", err)
		}
	}
	return nil
}

// attempts returns s.Attempts with its default applied.
func (s PlanStep) attempts() int { return max(1, s.Attempts) }

// ProblemCode names one rule of [Plan.Check]. Codes are stable strings, so
// tests and JSON output can match them; the zero value is no code.
type ProblemCode string

// The rules [Plan.Check] applies.
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

// Problem is one thing wrong with a plan, found by [Plan.Check]. It is a
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

// Report is the result of [Plan.Check]: the numbers of each step and the
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

// StepReport is what [Plan.Check] found about one step. It is a plain
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
	// min(Budget, Left), what [Plan.Step] would give it.
	Gets time.Duration
	// Refused reports whether [Plan.Step] would refuse to start the step in
	// that worst case, because Left is below its P99.
	Refused bool
	// Problems are the problems of this step, also listed in
	// Report.Problems.
	Problems []Problem
}

// Check reviews p and reports, per step, its budget as a multiple of its
// p99, whether the budget holds all its attempts plus their backoff, the
// time left when it starts in the worst case, and the problems found. The
// rules are the Problem* codes; the thresholds are [FarAboveP99] and p99
// itself. It returns the [Plan.Validate] error, and no report, when p is
// not valid.
//
// Check is pure: it reads no clock and draws no random numbers; jitter is
// taken at its worst, the upper end of each delay's range.
func (p Plan) Check() (Report, error) {
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
			Name: s.Name, P99: s.P99, Budget: s.Budget, Attempts: s.attempts(), AttemptTimeout: s.AttemptTimeout,
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
func need(s PlanStep) (total time.Duration, fit int) {
	var prev time.Duration
	for k := 1; k <= s.attempts(); k++ {
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

func stepProblems(p Plan, s PlanStep, sr StepReport) []Problem {
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

func addSat(a, b time.Duration) time.Duration {
	if c := a + b; c >= a {
		return c
	}
	return math.MaxInt64
}

// RefusedError reports that [Plan.Step] refused to start a step: the
// deadline is too close for it. It matches [ErrTooClose] with [errors.Is].
//
// The zero value is a valid error but is not produced by this package. A
// RefusedError is immutable once made and safe to share between goroutines.
type RefusedError struct {
	// Step is the refused step's name.
	Step string
	// Remaining is the time that was left before the deadline.
	Remaining time.Duration
	// P99 is the step's p99 and Reserve the plan's reserve: the step needs
	// P99 + Reserve, more than Remaining.
	P99, Reserve time.Duration
}

// Error returns a message such as
// `deadline: step "payment" refused: 140ms left, needs 220ms (p99 120ms + reserve 100ms)`.
func (e *RefusedError) Error() string {
	return "deadline: step " + strconv.Quote(e.Step) + " refused: " + e.Remaining.String() +
		" left, needs " + addSat(e.P99, e.Reserve).String() +
		" (p99 " + e.P99.String() + " + reserve " + e.Reserve.String() + ")"
}

// Unwrap returns the error [Check] gives for the step (Remaining left,
// P99 + Reserve needed), which matches [ErrTooClose].
func (e *RefusedError) Unwrap() error {
	return &tooCloseError{Remaining: e.Remaining, Need: addSat(e.P99, e.Reserve)}
}

// Step returns the context for the step called name under ctx, the
// request's context, whose deadline should be the plan's edge deadline
// (or what is left of it, adopted from an incoming header). Step is
// shorthand for StepAt(ctx, name, time.Now()).
//
// Run the step's attempts under the returned context (for example
// retry.Do with a Policy whose Attempts and Backoff match the PlanStep), so
// that its retries stop when its budget does.
//
// As with [context.WithTimeout], the caller must call the CancelFunc once
// the step is over. On error the context is ctx itself and the CancelFunc
// does nothing, so deferring it is always safe.
func (p Plan) Step(ctx context.Context, name string) (context.Context, context.CancelFunc, error) {
	return p.StepAt(ctx, name, time.Now())
}

// StepAt is [Plan.Step] with the current time passed in. The step's
// context ends at min(now + step budget, ctx's deadline − Reserve): the
// budget bounds the step, and the reserve is kept for the response. It
// refuses to start the step, with a [*RefusedError] that matches
// [ErrTooClose], when less than the step's P99 would be left for it.
//
// It returns ctx.Err() unchanged when ctx is already done, and
// [context.DeadlineExceeded] when ctx's deadline has passed. When ctx has
// no deadline, only the step budget applies and the step is never
// refused. A name that is not a step of p is an error. StepAt does not
// validate p; call [Plan.Validate] or [Plan.Check] once beforehand.
func (p Plan) StepAt(ctx context.Context, name string, now time.Time) (context.Context, context.CancelFunc, error) {
	nop := func() {}
	var s *PlanStep
	for i := range p.Steps {
		if p.Steps[i].Name == name {
			s = &p.Steps[i]
			break
		}
	}
	if s == nil {
		return ctx, nop, fmt.Errorf("deadline: plan has no step %q", name)
	}
	if err := ctx.Err(); err != nil {
		return ctx, nop, err
	}
	end := now.Add(s.Budget)
	if dl, ok := ctx.Deadline(); ok {
		left := dl.Sub(now)
		if left <= 0 {
			return ctx, nop, context.DeadlineExceeded
		}
		if left-p.Reserve < s.P99 {
			return ctx, nop, &RefusedError{Step: name, Remaining: left, P99: s.P99, Reserve: p.Reserve}
		}
		if last := dl.Add(-p.Reserve); last.Before(end) {
			end = last
		}
	}
	c, cancel := context.WithDeadline(ctx, end)
	return c, cancel, nil
}
