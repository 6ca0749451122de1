package deadline

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/internal/fielderr"
)

// maxStepAttempts is the most attempts a [PlanStep] may make; [Plan.Validate]
// rejects more. Real policies make far fewer (gRPC caps them at 5).
const maxStepAttempts = 1000

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
// Review a plan before deploying it with "heed plan deadline" (the budgets
// against the p99s, whether retries fit, the time left at worst), and use
// [Plan.Step] at run time to bound each step by its budget and refuse steps
// that cannot fit.
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
	// included (default 1, at most 1000).
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
		case s.Attempts < 0 || s.Attempts > maxStepAttempts:
			return bad("Attempts", "is %d, must be from 1 to %d (0 means 1)", s.Attempts, maxStepAttempts)
		}
		if err := s.Backoff.Validate(); err != nil {
			if fe, ok := fielderr.As(err); ok {
				return bad("Backoff."+fe.Field, "%s", fe.Reason)
			}
			return bad("Backoff", "%v", err)
		}
	}
	return nil
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
// validate p; call [Plan.Validate] once beforehand.
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
