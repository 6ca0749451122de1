package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/heed-go/heed/deadline"
	"github.com/heed-go/heed/deadline/planfile"
)

var planDeadlineDoc = helpDoc{
	file: "plan-deadline",
	groups: []flagGroup{
		{"Plan flags", []string{"deadline", "reserve", "step"}},
		{"Output flags", []string{"rate", "json"}},
	},
<<<<<<< HEAD
=======
	foot: `--step is a comma-separated list of KEY=VALUE:
  name=NAME (required)   p99=DUR (required)   budget=DUR (required)
  attempts=N (default 1)   attempt_timeout=DUR (the step's own timeout, per attempt)
  backoff=KIND  base=DUR  cap=DUR  multiplier=F  jitter=JITTER
  (the schedule between attempts; default heed's: exponential from 100ms,
  ×2, capped at 5s, full jitter)

FILE (YAML shown; JSON has the same fields; durations are strings):
  deadline: 2s
  reserve: 100ms
  steps:
    - name: stock
      p99: 120ms
      budget: 400ms
      attempts: 2
      attempt_timeout: 30s
      backoff: {kind: exponential, base: 50ms, cap: 1s, multiplier: 2, jitter: full}

JSON (--json): one object; durations in milliseconds.
  deadline_ms, reserve_ms, available_ms (deadline − reserve), total_ms (sum of
  budgets), ok (no problems), rate (with --rate)
  steps     [{name, p99_ms, budget_ms, attempts, timeout_ms (absent: not
             given), multiple (budget / p99), need_ms, holds, attempts_fit,
             start_ms, left_ms, gets_ms, refused (left < p99),
             problems [codes], waiting {under_timeout (absent without a
             timeout), under_plan} (with --rate)}]
  problems  [{code, step (absent for the whole plan), message}]

Exit codes:
  0  the plan has no problems
  1  the plan has problems (listed; the output is otherwise the same)
  2  usage or input error: bad flag, unreadable or invalid plan

Example:
  heed plan deadline --deadline 2s --reserve 100ms --rate 500 \
    --step name=validate,p99=5ms,budget=20ms \
    --step name=stock,p99=120ms,budget=300ms,attempts=2,attempt_timeout=30s \
    --step name=payment,p99=400ms,budget=900ms
`,
>>>>>>> f534af5
}

// planDeadlineMain is "heed plan deadline".
func planDeadlineMain(_ context.Context, s streams, args []string) int {
	const name = "plan deadline"
	fs := newFlagSet(name)
	dl := durationFlag(fs, "deadline", 0, "the request's deadline, set at the edge (required without FILE)")
	reserve := durationFlag(fs, "reserve", 0, "time kept back for the response and the network")
	var steps stepFlags
	fs.Var(&steps, "step", "one step, in order: `SPEC` as below; repeat for each step")
	rate := fs.Float64("rate", 0, "requests per second, `RPS`, to count the requests left waiting on a step that hangs")
	asJSON := fs.Bool("json", false, "print JSON instead of tables (fields below)")

	// Flags may come before and after FILE.
	pos, code, done := parseInterleaved(fs, args, s, planDeadlineDoc)
	switch {
	case done:
		return code
	case len(pos) > 1:
		return usageError(s, name, fmt.Errorf("unexpected argument %q (plan deadline takes at most one FILE)", pos[1]))
	}
	file := ""
	if len(pos) == 1 {
		file = pos[0]
	}
	var p deadline.Plan
	switch {
	case file != "" && len(steps) > 0:
		return usageError(s, name, errors.New("--step cannot be combined with a plan FILE"))
	case file != "":
		var err error
		if p, err = planfile.Read(file, s.stdin); err != nil {
			return usageError(s, name, err)
		}
	case len(steps) == 0:
		return usageError(s, name, errors.New("no plan: give --deadline and one --step per step, or a plan FILE"))
	default:
		p.Steps = steps
	}
	if isSet(fs, "deadline") || file == "" {
		p.Deadline = *dl
	}
	if isSet(fs, "reserve") {
		p.Reserve = *reserve
	}
	switch {
	case !finite(*rate) || *rate < 0:
		return usageError(s, name, flagError("rate", "%v, must be a number not below 0", *rate))
	case file == "" && !isSet(fs, "deadline"):
		return usageError(s, name, errors.New("missing --deadline: the request's deadline, e.g. --deadline 2s"))
	}
	r, err := p.Check()
	if err != nil {
		err = planfile.InputError(err, file, isSet(fs, "deadline"), isSet(fs, "reserve"))
		return usageError(s, name, err)
	}

	if *asJSON {
		if err := planfile.WriteReportJSON(s.stdout, r, *rate); err != nil {
			fmt.Fprintf(s.stderr, "heed %s: %v\n", name, err)
			return exitUsage
		}
	} else {
		planfile.WriteReport(s.stdout, r, *rate)
	}
	if !r.OK() {
		return exitFailure
	}
	return exitOK
}

<<<<<<< HEAD
=======
// planInputError rewrites a *deadline.PlanError in the words of the
// command line or of file ("" when the plan came from flags), naming the
// file unless the bad value came from a flag.
func planInputError(err error, file string, deadlineFlag, reserveFlag bool) error {
	var pe *deadline.PlanError
	if !errors.As(err, &pe) {
		return err
	}
	field := planfile.Key(pe.Field)
	if file == "" {
		field = strings.TrimPrefix(field, "backoff.")
	}
	if file == "-" {
		file = "stdin"
	}
	if pe.Step < 0 {
		if file == "" || (field == "deadline" && deadlineFlag) || (field == "reserve" && (reserveFlag || deadlineFlag)) {
			return flagError(field, "%s", strings.TrimPrefix(pe.Reason, "is "))
		}
		return fmt.Errorf("%s: %s %s", file, field, pe.Reason)
	}
	where := "--step " + strconv.Itoa(pe.Step+1)
	if file != "" {
		where = file + ": step " + strconv.Itoa(pe.Step+1)
	}
	if pe.Name != "" {
		where += " (" + pe.Name + ")"
	}
	return fmt.Errorf("%s: %s %s", where, field, strings.ReplaceAll(pe.Reason, "Base ", "base "))
}

>>>>>>> f534af5
// stepFlags is the flag.Value of --step: each use adds one step.
type stepFlags []deadline.PlanStep

func (v *stepFlags) String() string { return "" }

func (v *stepFlags) Set(spec string) error {
	st, err := planfile.ParseStep(spec)
	if err != nil {
		return err
	}
	if len(*v) >= planfile.MaxSteps {
		return fmt.Errorf("more than %d steps", planfile.MaxSteps)
	}
	*v = append(*v, st)
	return nil
}
<<<<<<< HEAD
=======

// waiting returns how many requests wait on step s when it hangs, at rate
// requests per second: under its own timeout (-1 when it has none) and
// under the plan.
func waiting(r deadline.Report, s deadline.StepReport, rate float64) (underTimeout, underPlan float64) {
	underTimeout = -1
	if s.AttemptTimeout > 0 {
		underTimeout = rate * s.AttemptTimeout.Seconds()
	}
	return underTimeout, rate * min(s.Budget, r.Available).Seconds()
}

func printDeadlinePlan(w io.Writer, r deadline.Report, rate float64) {
	fmt.Fprintf(w, "plan: deadline %v", fmtDur(r.Deadline))
	if r.Reserve > 0 {
		fmt.Fprintf(w, " − reserve %v = %v", fmtDur(r.Reserve), fmtDur(r.Available))
	}
	if len(r.Steps) == 1 {
		fmt.Fprintf(w, " for 1 step; its budget is %v\n\n", fmtDur(r.Total))
	} else {
		fmt.Fprintf(w, " for %d steps; their budgets add up to %v\n\n", len(r.Steps), fmtDur(r.Total))
	}

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tP99\tBUDGET\t×P99\tATTEMPTS\tNEEDS\tHOLDS\tSTARTS AT\tLEFT\tGETS\tTIMEOUT")
	for _, s := range r.Steps {
		holds := "yes"
		if !s.Holds {
			holds = fmt.Sprintf("no (%d fit)", s.AttemptsFit)
		}
		gets := fmtDur(s.Gets)
		if s.Refused {
			gets = "refused"
		}
		timeout := "-"
		if s.AttemptTimeout > 0 {
			timeout = fmtDur(s.AttemptTimeout)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, fmtDur(s.P99), fmtDur(s.Budget),
			fmtNum(s.Multiple), s.Attempts, fmtDur(s.Need), holds, fmtDur(s.Start), fmtDur(s.Left), gets, timeout)
	}
	tw.Flush()
	fmt.Fprint(w, `
NEEDS: the attempts at p99 plus the longest backoff between them. STARTS AT,
LEFT and GETS are the worst case, every earlier step using its whole budget:
LEFT is the time left then for this step and the later ones, GETS is
min(BUDGET, LEFT); a step is refused when LEFT is below its p99.
`)

	if rate > 0 {
		fmt.Fprintf(w, "\nAt %s requests/s, requests left waiting on a step that hangs:\n\n", fmtNum(rate))
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "STEP\tUNDER ITS TIMEOUT\tUNDER THE PLAN")
		worst, worstRatio := -1, 0.0
		for i, s := range r.Steps {
			t, p := waiting(r, s, rate)
			under := "-"
			if t >= 0 {
				under = fmt.Sprintf("%s (%v)", fmtNum(t), fmtDur(s.AttemptTimeout))
				if p > 0 && t/p > worstRatio {
					worst, worstRatio = i, t/p
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t%s (%v)\n", s.Name, under, fmtNum(p), fmtDur(min(s.Budget, r.Available)))
		}
		tw.Flush()
		fmt.Fprintln(w, "\nrate × how long each request waits; a step with no timeout (-) waits as long as its caller lets it.")
		if worst >= 0 && worstRatio > 1 {
			s := r.Steps[worst]
			t, p := waiting(r, s, rate)
			fmt.Fprintf(w, "If %s hangs, %s requests wait on it under its %v timeout, %s× the %s under the plan's %v.\n",
				s.Name, fmtNum(t), fmtDur(s.AttemptTimeout), fmtNum(worstRatio), fmtNum(p), fmtDur(min(s.Budget, r.Available)))
		}
	}

	fmt.Fprintln(w)
	if r.OK() {
		fmt.Fprintln(w, "No problems: every step fits its deadline share and its retries fit its budget.")
		return
	}
	n := len(r.Problems)
	if n == 1 {
		fmt.Fprintln(w, "1 problem:")
	} else {
		fmt.Fprintf(w, "%d problems:\n", n)
	}
	for _, p := range r.Problems {
		fmt.Fprintf(w, "  %s: %s\n", p.Code, p.Message)
	}
}

// JSON output; the field names are documented in planDeadlineDoc and
// stable.

type deadlineJSON struct {
	DeadlineMs  float64               `json:"deadline_ms"`
	ReserveMs   float64               `json:"reserve_ms"`
	AvailableMs float64               `json:"available_ms"`
	TotalMs     float64               `json:"total_ms"`
	OK          bool                  `json:"ok"`
	Rate        *float64              `json:"rate,omitempty"`
	Steps       []deadlineStepJSON    `json:"steps"`
	Problems    []deadlineProblemJSON `json:"problems"`
}

type deadlineStepJSON struct {
	Name        string       `json:"name"`
	P99Ms       float64      `json:"p99_ms"`
	BudgetMs    float64      `json:"budget_ms"`
	Attempts    int          `json:"attempts"`
	TimeoutMs   *float64     `json:"timeout_ms,omitempty"`
	Multiple    float64      `json:"multiple"`
	NeedMs      float64      `json:"need_ms"`
	Holds       bool         `json:"holds"`
	AttemptsFit int          `json:"attempts_fit"`
	StartMs     float64      `json:"start_ms"`
	LeftMs      float64      `json:"left_ms"`
	GetsMs      float64      `json:"gets_ms"`
	Refused     bool         `json:"refused"`
	Problems    []string     `json:"problems"`
	Waiting     *waitingJSON `json:"waiting,omitempty"`
}

type waitingJSON struct {
	UnderTimeout *float64 `json:"under_timeout,omitempty"`
	UnderPlan    float64  `json:"under_plan"`
}

type deadlineProblemJSON struct {
	Code    string `json:"code"`
	Step    string `json:"step,omitempty"`
	Message string `json:"message"`
}

func toDeadlineJSON(r deadline.Report, rate float64) deadlineJSON {
	out := deadlineJSON{
		DeadlineMs: ms(r.Deadline), ReserveMs: ms(r.Reserve), AvailableMs: ms(r.Available), TotalMs: ms(r.Total),
		OK: r.OK(), Steps: make([]deadlineStepJSON, len(r.Steps)), Problems: make([]deadlineProblemJSON, len(r.Problems)),
	}
	if rate > 0 {
		out.Rate = &rate
	}
	for i, s := range r.Steps {
		j := deadlineStepJSON{
			Name: s.Name, P99Ms: ms(s.P99), BudgetMs: ms(s.Budget), Attempts: s.Attempts,
			Multiple: s.Multiple, NeedMs: ms(s.Need), Holds: s.Holds, AttemptsFit: s.AttemptsFit,
			StartMs: ms(s.Start), LeftMs: ms(s.Left), GetsMs: ms(s.Gets), Refused: s.Refused,
			Problems: make([]string, len(s.Problems)),
		}
		if s.AttemptTimeout > 0 {
			t := ms(s.AttemptTimeout)
			j.TimeoutMs = &t
		}
		for k, p := range s.Problems {
			j.Problems[k] = string(p.Code)
		}
		if rate > 0 {
			t, p := waiting(r, s, rate)
			wj := &waitingJSON{UnderPlan: p}
			if t >= 0 {
				wj.UnderTimeout = &t
			}
			j.Waiting = wj
		}
		out.Steps[i] = j
	}
	for i, p := range r.Problems {
		out.Problems[i] = deadlineProblemJSON{Code: string(p.Code), Step: p.Step, Message: p.Message}
	}
	return out
}
>>>>>>> f534af5
