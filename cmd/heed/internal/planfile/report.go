package planfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/heed-go/heed/cmd/heed/internal/plan"
	"github.com/heed-go/heed/deadline"
	"github.com/heed-go/heed/internal/textfmt"
)

// InputError rewrites a *deadline.PlanError (any other error is returned
// as it is) in the words of heed plan deadline's command line or of file
// ("" when the plan came from flags, "-" for stdin), naming the file
// unless the bad value came from a flag: deadlineFlag and reserveFlag say
// that --deadline and --reserve were given.
func InputError(err error, file string, deadlineFlag, reserveFlag bool) error {
	var pe *deadline.PlanError
	if !errors.As(err, &pe) {
		return err
	}
	field := Key(pe.Field)
	if file == "" {
		field = strings.TrimPrefix(field, "backoff.")
	}
	if file == "-" {
		file = "stdin"
	}
	if pe.Step < 0 {
		if file == "" || (field == "deadline" && deadlineFlag) || (field == "reserve" && (reserveFlag || deadlineFlag)) {
			return fmt.Errorf("invalid --%s: %s", field, strings.TrimPrefix(pe.Reason, "is "))
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

// waiting returns how many requests wait on step s when it hangs, at rate
// requests per second: under its own timeout (-1 when it has none) and
// under the plan.
func waiting(r plan.Report, s plan.StepReport, rate float64) (underTimeout, underPlan float64) {
	underTimeout = -1
	if s.AttemptTimeout > 0 {
		underTimeout = rate * s.AttemptTimeout.Seconds()
	}
	return underTimeout, rate * min(s.Budget, r.Available).Seconds()
}

// callersGone returns the share of the requests waiting on step s under
// its own timeout, when it hangs, whose caller has already given up: each
// caller waits at most the plan's time for the step (min(budget,
// deadline − reserve)), so of the timeout's worth of requests held, the
// part older than that is work for nobody. -1 when the step has no
// timeout.
func callersGone(r plan.Report, s plan.StepReport) float64 {
	if s.AttemptTimeout <= 0 {
		return -1
	}
	waits := min(s.Budget, r.Available)
	if waits >= s.AttemptTimeout {
		return 0
	}
	return float64(s.AttemptTimeout-waits) / float64(s.AttemptTimeout)
}

// WriteReport writes r as heed plan deadline prints it: a table of the
// steps, with rate > 0 the requests left waiting on a step that hangs, and
// the problems found.
func WriteReport(w io.Writer, r plan.Report, rate float64) {
	fmt.Fprintf(w, "plan: deadline %v", textfmt.Dur(r.Deadline))
	if r.Reserve > 0 {
		fmt.Fprintf(w, " − reserve %v = %v", textfmt.Dur(r.Reserve), textfmt.Dur(r.Available))
	}
	if len(r.Steps) == 1 {
		fmt.Fprintf(w, " for 1 step; its budget is %v\n\n", textfmt.Dur(r.Total))
	} else {
		fmt.Fprintf(w, " for %d steps; their budgets add up to %v\n\n", len(r.Steps), textfmt.Dur(r.Total))
	}

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tP99\tBUDGET\t×P99\tATTEMPTS\tNEEDS\tHOLDS\tSTARTS AT\tLEFT\tGETS\tTIMEOUT")
	for _, s := range r.Steps {
		holds := "yes"
		if !s.Holds {
			holds = fmt.Sprintf("no (%d fit)", s.AttemptsFit)
		}
		gets := textfmt.Dur(s.Gets)
		if s.Refused {
			gets = "refused"
		}
		timeout := "-"
		if s.AttemptTimeout > 0 {
			timeout = textfmt.Dur(s.AttemptTimeout)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, textfmt.Dur(s.P99), textfmt.Dur(s.Budget),
			textfmt.Num(s.Multiple), s.Attempts, textfmt.Dur(s.Need), holds, textfmt.Dur(s.Start), textfmt.Dur(s.Left), gets, timeout)
	}
	tw.Flush()
	fmt.Fprint(w, `
NEEDS: the attempts at p99 plus the longest backoff between them. STARTS AT,
LEFT and GETS are the worst case, every earlier step using its whole budget:
LEFT is the time left then for this step and the later ones, GETS is
min(BUDGET, LEFT); a step is refused when LEFT is below its p99.
`)

	if rate > 0 {
		fmt.Fprintf(w, "\nAt %s requests/s, requests left waiting on a step that hangs:\n\n", textfmt.Num(rate))
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "STEP\tUNDER ITS TIMEOUT\tCALLER GONE\tUNDER THE PLAN")
		worst, worstRatio := -1, 0.0
		for i, s := range r.Steps {
			t, p := waiting(r, s, rate)
			under, gone := "-", "-"
			if t >= 0 {
				under = fmt.Sprintf("%s (%v)", textfmt.Num(t), textfmt.Dur(s.AttemptTimeout))
				gone = percent(callersGone(r, s))
				if p > 0 && t/p > worstRatio {
					worst, worstRatio = i, t/p
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s (%v)\n", s.Name, under, gone, textfmt.Num(p), textfmt.Dur(min(s.Budget, r.Available)))
		}
		tw.Flush()
		fmt.Fprintln(w, "\nrate × how long each request waits; a step with no timeout (-) waits as long as its caller lets it.")
		fmt.Fprintln(w, "CALLER GONE: the share of the requests held under the step's timeout whose caller has already given up (waited the plan's time): work for nobody.")
		if worst >= 0 && worstRatio > 1 {
			s := r.Steps[worst]
			t, p := waiting(r, s, rate)
			fmt.Fprintf(w, "If %s hangs, %s requests wait on it under its %v timeout, %s× the %s under the plan's %v; %s of them for callers who have gone.\n",
				s.Name, textfmt.Num(t), textfmt.Dur(s.AttemptTimeout), textfmt.Num(worstRatio), textfmt.Num(p), textfmt.Dur(min(s.Budget, r.Available)),
				percent(callersGone(r, s)))
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

// The JSON form of a report; the field names are documented in heed plan
// deadline's help and stable.

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
	CallerGone   *float64 `json:"caller_gone,omitempty"`
	UnderPlan    float64  `json:"under_plan"`
}

type deadlineProblemJSON struct {
	Code    string `json:"code"`
	Step    string `json:"step,omitempty"`
	Message string `json:"message"`
}

// WriteReportJSON writes r as heed plan deadline --json prints it: one
// object, durations in milliseconds.
func WriteReportJSON(w io.Writer, r plan.Report, rate float64) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(reportJSON(r, rate))
}

func reportJSON(r plan.Report, rate float64) deadlineJSON {
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
				g := callersGone(r, s)
				wj.UnderTimeout, wj.CallerGone = &t, &g
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

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// percent writes a share from 0 to 1 as a whole percentage ("70%").
func percent(f float64) string { return fmt.Sprintf("%.0f%%", 100*f) }
