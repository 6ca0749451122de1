package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/deadline"
)

var planDeadlineDoc = helpDoc{
	head: `Usage: heed plan deadline [FLAGS] [FILE]

Checks how a request's deadline is shared out between the steps it makes:
the deadline set at the edge, a reserve kept for the response and the
network, and the steps in order, each with its normal p99 latency, its
budget (all its attempts and their backoff included), its attempts and,
optionally, its own downstream timeout. Nothing runs and nothing is random:
backoff is taken at its worst, the upper end of its jitter range.

The plan comes from flags (--deadline, --reserve, one --step per step) or
from FILE, YAML or JSON ("-" reads stdin); --deadline and --reserve override
the file's. One row per step: its budget as a multiple of its p99, what its
attempts need (attempts × p99 plus the longest backoff between them) and
whether the budget holds it, when it starts and the time left for it and
the later steps if every earlier step used its whole budget, and what it
gets then (min(budget, left), as deadline.Plan.Step gives it at run time).

Problems found (the code, then the rule):
  over-deadline           the budgets add up to more than deadline − reserve
  below-p99               a budget below the step's p99
  far-above-p99           a budget more than 10× what the step needs (its p99
                          for a single attempt)
  retry-does-not-fit      a step of several attempts whose budget does not
                          hold them all with their worst-case backoff
  timeout-above-upstream  a step timeout longer than min(budget, deadline −
                          reserve): the downstream works on after the caller
                          gave up

With --rate, it also prints how many requests are left waiting when a step
hangs: rate × the step's own timeout, against rate × its budget under the
plan (capped at deadline − reserve).
`,
	groups: []flagGroup{
		{"Plan flags", []string{"deadline", "reserve", "step"}},
		{"Output flags", []string{"rate", "json"}},
	},
	foot: `--step is a comma-separated list of KEY=VALUE:
  name=NAME (required)   p99=DUR (required)   budget=DUR (required)
  attempts=N (default 1)   timeout=DUR (the step's own timeout, per attempt)
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
      timeout: 30s
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
    --step name=stock,p99=120ms,budget=300ms,attempts=2,timeout=30s \
    --step name=payment,p99=400ms,budget=900ms
`,
}

// Limits on plan input.
const (
	maxPlanFile  = 1 << 20 // bytes
	maxPlanSteps = 100
)

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
	var file string
	for rest := args; ; {
		if code, done := parseFlags(fs, rest, s, planDeadlineDoc); done {
			return code
		}
		if fs.NArg() == 0 {
			break
		}
		if file != "" {
			return usageError(s, name, fmt.Errorf("unexpected argument %q (plan deadline takes at most one FILE)", fs.Arg(0)))
		}
		file, rest = fs.Arg(0), fs.Args()[1:]
	}

	var p deadline.Plan
	switch {
	case file != "" && len(steps) > 0:
		return usageError(s, name, errors.New("--step cannot be combined with a plan FILE"))
	case file != "":
		var err error
		if p, err = readPlanFile(file, s.stdin); err != nil {
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
		err = planInputError(err, file, isSet(fs, "deadline"), isSet(fs, "reserve"))
		return usageError(s, name, err)
	}

	if *asJSON {
		enc := json.NewEncoder(s.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(toDeadlineJSON(r, *rate)); err != nil {
			fmt.Fprintf(s.stderr, "heed %s: %v\n", name, err)
			return exitUsage
		}
	} else {
		printDeadlinePlan(s.stdout, r, *rate)
	}
	if !r.OK() {
		return exitFailure
	}
	return exitOK
}

// planInputError rewrites a *deadline.PlanError in the words of the
// command line or of file ("" when the plan came from flags), naming the
// file unless the bad value came from a flag.
func planInputError(err error, file string, deadlineFlag, reserveFlag bool) error {
	var pe *deadline.PlanError
	if !errors.As(err, &pe) {
		return err
	}
	field := strings.ToLower(pe.Field)
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

// stepFlags is the flag.Value of --step: each use adds one step.
type stepFlags []deadline.PlanStep

func (v *stepFlags) String() string { return "" }

func (v *stepFlags) Set(spec string) error {
	st, err := parseStepSpec(spec)
	if err != nil {
		return err
	}
	if len(*v) >= maxPlanSteps {
		return fmt.Errorf("more than %d steps", maxPlanSteps)
	}
	*v = append(*v, st)
	return nil
}

var stepKeys = []string{"name", "p99", "budget", "attempts", "timeout", "backoff", "base", "cap", "multiplier", "jitter"}

// parseStepSpec parses "name=stock,p99=120ms,budget=300ms,attempts=2".
func parseStepSpec(spec string) (deadline.PlanStep, error) {
	var fields rawStep
	var bo rawBackoff
	seen := map[string]bool{}
	for part := range strings.SplitSeq(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		key, val, ok := strings.Cut(part, "=")
		key, val = strings.ToLower(strings.TrimSpace(key)), strings.TrimSpace(val)
		if !ok {
			return deadline.PlanStep{}, fmt.Errorf("%q is not KEY=VALUE", part)
		}
		if seen[key] {
			return deadline.PlanStep{}, fmt.Errorf("%s given twice", key)
		}
		seen[key] = true
		switch key {
		case "name":
			fields.Name = val
		case "p99":
			fields.P99 = val
		case "budget":
			fields.Budget = val
		case "timeout":
			fields.Timeout = val
		case "attempts":
			n, err := strconv.Atoi(val)
			if err != nil {
				return deadline.PlanStep{}, fmt.Errorf("attempts %q is not a whole number", val)
			}
			fields.Attempts = &n
		case "backoff":
			bo.Kind = val
		case "base":
			bo.Base = val
		case "cap":
			bo.Cap = val
		case "jitter":
			bo.Jitter = val
		case "multiplier":
			f, err := strconv.ParseFloat(val, 64)
			if err != nil {
				return deadline.PlanStep{}, fmt.Errorf("multiplier %q is not a number", val)
			}
			bo.Multiplier = &f
		default:
			return deadline.PlanStep{}, fmt.Errorf("unknown key %q (want %s)", key, strings.Join(stepKeys, ", "))
		}
	}
	if fields.Name == "" && !seen["name"] {
		return deadline.PlanStep{}, errors.New("missing name=NAME: every step needs a name")
	}
	fields.Backoff = &bo
	return fields.step("")
}

// planFile is the plan as a YAML or JSON file spells it.
type planFile struct {
	Deadline string    `yaml:"deadline" json:"deadline"`
	Reserve  string    `yaml:"reserve" json:"reserve"`
	Steps    []rawStep `yaml:"steps" json:"steps"`
}

type rawStep struct {
	Name     string      `yaml:"name" json:"name"`
	P99      string      `yaml:"p99" json:"p99"`
	Budget   string      `yaml:"budget" json:"budget"`
	Attempts *int        `yaml:"attempts" json:"attempts"`
	Timeout  string      `yaml:"timeout" json:"timeout"`
	Backoff  *rawBackoff `yaml:"backoff" json:"backoff"`
}

type rawBackoff struct {
	Kind       string   `yaml:"kind" json:"kind"`
	Base       string   `yaml:"base" json:"base"`
	Cap        string   `yaml:"cap" json:"cap"`
	Multiplier *float64 `yaml:"multiplier" json:"multiplier"`
	Jitter     string   `yaml:"jitter" json:"jitter"`
}

// parseDur parses a duration field; "" is 0 (not given).
func parseDur(field, s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := parseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", field, err)
	}
	return d, nil
}

// step converts r; where prefixes errors ("step 2 (stock): ").
func (r rawStep) step(where string) (deadline.PlanStep, error) {
	st := deadline.PlanStep{Name: r.Name, Attempts: 1}
	var err error
	wrap := func(e error) error {
		if where == "" {
			return e
		}
		return fmt.Errorf("%s: %w", where, e)
	}
	for _, f := range []struct {
		name string
		raw  string
		dst  *time.Duration
	}{{"p99", r.P99, &st.P99}, {"budget", r.Budget, &st.Budget}, {"timeout", r.Timeout, &st.Timeout}} {
		if *f.dst, err = parseDur(f.name, f.raw); err != nil {
			return st, wrap(err)
		}
	}
	if r.Attempts != nil {
		if n := *r.Attempts; n < 1 || n > deadline.MaxStepAttempts {
			return st, wrap(fmt.Errorf("attempts is %d, must be from 1 to %d", n, deadline.MaxStepAttempts))
		}
		st.Attempts = *r.Attempts
	}
	if b := r.Backoff; b != nil {
		if b.Kind != "" {
			if st.Backoff.Kind, err = backoff.ParseKind(b.Kind); err != nil {
				return st, wrap(fmt.Errorf("unknown backoff %q (want exponential, constant, linear or immediate)", b.Kind))
			}
		}
		if b.Jitter != "" {
			if st.Backoff.Jitter, err = backoff.ParseJitter(b.Jitter); err != nil {
				return st, wrap(fmt.Errorf("unknown jitter %q (want full, none, equal or decorrelated)", b.Jitter))
			}
		}
		for _, f := range []struct {
			name string
			raw  string
			dst  *time.Duration
		}{{"base", b.Base, &st.Backoff.Base}, {"cap", b.Cap, &st.Backoff.Cap}} {
			if *f.dst, err = parseDur(f.name, f.raw); err != nil {
				return st, wrap(err)
			}
			if f.raw != "" && *f.dst <= 0 {
				return st, wrap(fmt.Errorf("%s is %v, must be positive (leave it out for the default)", f.name, *f.dst))
			}
		}
		if m := b.Multiplier; m != nil {
			if !finite(*m) || *m < 1 {
				return st, wrap(fmt.Errorf("multiplier is %v, must be a number of at least 1", *m))
			}
			st.Backoff.Multiplier = *m
		}
	}
	return st, nil
}

// readPlanFile reads and decodes the plan in file ("-": stdin).
func readPlanFile(file string, stdin io.Reader) (deadline.Plan, error) {
	var (
		data []byte
		err  error
	)
	if file == "-" {
		data, err = io.ReadAll(io.LimitReader(stdin, maxPlanFile+1))
	} else {
		var f *os.File
		if f, err = os.Open(file); err == nil {
			data, err = io.ReadAll(io.LimitReader(f, maxPlanFile+1))
			f.Close()
		}
	}
	if err != nil {
		return deadline.Plan{}, err
	}
	p, err := decodePlan(file, data)
	if err != nil {
		if file == "-" {
			file = "stdin"
		}
		return deadline.Plan{}, fmt.Errorf("%s: %w", file, err)
	}
	return p, nil
}

// decodePlan decodes a plan file: JSON when the name ends in .json or the
// content starts with "{", YAML otherwise.
func decodePlan(file string, data []byte) (deadline.Plan, error) {
	if len(data) > maxPlanFile {
		return deadline.Plan{}, fmt.Errorf("larger than %d bytes", maxPlanFile)
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return deadline.Plan{}, errors.New("empty plan (want deadline, reserve and steps)")
	}
	var pf planFile
	ext := strings.ToLower(filepath.Ext(file))
	if ext == ".json" || (ext != ".yaml" && ext != ".yml" && trimmed[0] == '{') {
		if err := decodeJSONPlan(data, &pf); err != nil {
			return deadline.Plan{}, err
		}
	} else {
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		if err := dec.Decode(&pf); err != nil {
			return deadline.Plan{}, yamlError(err)
		}
	}
	return pf.plan()
}

func (pf planFile) plan() (deadline.Plan, error) {
	var p deadline.Plan
	var err error
	if p.Deadline, err = parseDur("deadline", pf.Deadline); err != nil {
		return p, err
	}
	if p.Reserve, err = parseDur("reserve", pf.Reserve); err != nil {
		return p, err
	}
	if len(pf.Steps) > maxPlanSteps {
		return p, fmt.Errorf("%d steps, at most %d", len(pf.Steps), maxPlanSteps)
	}
	for i, rs := range pf.Steps {
		where := "step " + strconv.Itoa(i+1)
		if rs.Name != "" {
			where += " (" + rs.Name + ")"
		}
		st, err := rs.step(where)
		if err != nil {
			return p, err
		}
		p.Steps = append(p.Steps, st)
	}
	return p, nil
}

func decodeJSONPlan(data []byte, pf *planFile) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(pf)
	if err == nil {
		if _, terr := dec.Token(); terr != io.EOF {
			return errors.New("unexpected data after the plan object")
		}
		return nil
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Errorf("line %d: %s", lineOf(data, syn.Offset), strings.TrimPrefix(syn.Error(), "json: "))
	case errors.As(err, &typ):
		want := map[string]string{"string": "a string such as \"120ms\"", "int": "a whole number",
			"float64": "a number"}[typ.Type.String()]
		if want == "" {
			want = "a " + typ.Type.Kind().String()
		}
		return fmt.Errorf("line %d: %s: want %s, not a %s", lineOf(data, typ.Offset), typ.Field, want, typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("unexpected end of JSON")
	}
	return errors.New(strings.TrimPrefix(err.Error(), "json: "))
}

func lineOf(data []byte, offset int64) int {
	offset = min(max(offset, 0), int64(len(data)))
	return 1 + bytes.Count(data[:offset], []byte("\n"))
}

var (
	yamlUnknownField = regexp.MustCompile(`field (\S+) not found in type \S+`)
	yamlCannot       = regexp.MustCompile("cannot unmarshal !!(\\w+)( `[^`]*`)? into (\\S+)$")
)

// yamlError rewrites yaml.v3's messages without Go type names.
func yamlError(err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return errors.New(strings.TrimPrefix(err.Error(), "yaml: "))
	}
	msgs := make([]string, len(te.Errors))
	for i, m := range te.Errors {
		m = yamlUnknownField.ReplaceAllString(m, `unknown field "$1"`)
		if sub := yamlCannot.FindStringSubmatch(m); sub != nil {
			want := map[string]string{"int": "a whole number", "float64": "a number", "string": "a string such as \"120ms\""}[sub[3]]
			switch {
			case want != "":
			case strings.HasPrefix(sub[3], "[]"):
				want = "a list"
			default:
				want = "a mapping of fields"
			}
			found := map[string]string{"str": "a string", "int": "a number", "float": "a number", "bool": "a boolean",
				"map": "a mapping", "seq": "a list", "null": "nothing"}[sub[1]]
			if found == "" {
				found = "!!" + sub[1]
			}
			m = m[:len(m)-len(sub[0])] + "want " + want + ", not " + found + sub[2]
		}
		msgs[i] = m
	}
	return errors.New(strings.Join(msgs, "; "))
}

// waiting returns how many requests wait on step s when it hangs, at rate
// requests per second: under its own timeout (-1 when it has none) and
// under the plan.
func waiting(r deadline.Report, s deadline.StepReport, rate float64) (underTimeout, underPlan float64) {
	underTimeout = -1
	if s.Timeout > 0 {
		underTimeout = rate * s.Timeout.Seconds()
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
		if s.Timeout > 0 {
			timeout = fmtDur(s.Timeout)
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
				under = fmt.Sprintf("%s (%v)", fmtNum(t), fmtDur(s.Timeout))
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
				s.Name, fmtNum(t), fmtDur(s.Timeout), fmtNum(worstRatio), fmtNum(p), fmtDur(min(s.Budget, r.Available)))
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
		if s.Timeout > 0 {
			t := ms(s.Timeout)
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
