package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mattn/go-isatty"
	"go.yaml.in/yaml/v3"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/breaker"
	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/retry"
	"github.com/heed-go/heed/sim"
	"github.com/heed-go/heed/sim/chart"
)

const simHead = `Usage: heed sim [FLAGS] SCENARIO

Simulates what retry policies do to a struggling dependency, in virtual
time, with heed's own retry decisions, backoff, retry budget and circuit
breaker. SCENARIO is a built-in scenario's name or a scenario file (YAML,
or JSON when it ends in .json). Each policy of the scenario runs against the
same user requests; a summary table compares them, and --csv and --chart
write the time series and a chart with the policies side by side.

The summary: attempts per user request (at the bottom service), the peak
load amplification (attempts at the bottom / user requests, in the worst
interval), the share of user requests that succeeded, their p99 latency, and
whether the system recovered after the last fault ended, or "did not recover
within the horizon": a metastable failure, kept alive by the retries.
`

const simFoot = `Scenario file (YAML or JSON; durations as "500ms", "2s", "1m"; only horizon,
load.rate and policies are required, other fields may be left out and take
their default; unknown fields and impossible values are errors):

  name: my-outage
  description: what it shows
  horizon: 2m            # virtual time to simulate
  interval: 1s           # width of one point of the time series (default 1s)
  seed: 1                # same seed, same result; every policy sees the same users
  recover_at: 0.9        # success rate of a healthy interval (default 0.9)
  load:
    rate: 100            # user requests per second
    arrival: poisson     # or constant (default poisson)
    deadline: 5s         # how long a user waits (default: forever)
  service:               # the bottom service
    concurrency: 50      # workers (default 0: unlimited)
    service_time: 20ms   # per attempt (the mean, with exponential: true)
    exponential: false   # draw service times from an exponential distribution
    load_latency: 0s     # added for each attempt in service when one starts
    queue_limit: 0       # 0: no limit; -1: no queue (reject when busy)
    error_rate: 0        # share of attempts failing outside faults
  faults:                # kind: outage, capacity (factor: share left),
    - {kind: outage, start: 20s, end: 40s}   # errors (rate), spike (factor)
    - {kind: spike, start: 60s, end: 70s, factor: 2}
  policies:              # one run each, compared
    - name: heed
      propagate_deadline: false   # send deadlines down the chain
      layers:            # top first; the last one calls the service
        - name: api
          attempts: 3    # in total, the first included (default 3)
          backoff: {kind: exponential, base: 100ms, cap: 5s, multiplier: 2, jitter: full}
          timeout: 1s    # per attempt (default: none)
          max_duration: 0s       # time budget of a call (default: none)
          min_attempt_time: 10ms
          owner: true    # layers below make one attempt each (default false)
          budget: {ratio: 0.1, window: 10s, min_per_second: 1}   # default: no budget
          breaker: {failure_ratio: 0.5, min_calls: 20, window: 10s, cooldown: 5s, probes: 3}   # default: none

CSV (--csv): policy, t_s (interval start), user_requests, attempts (at the
bottom), goodput, errors (user requests), queue, in_flight (at the bottom, at
the interval's end), p50_ms, p99_ms (user requests finished in the interval).

Exit codes:
  0    the simulation ran
  1    an output file could not be written
  2    usage error: bad flag, unknown scenario, invalid scenario file
  130  interrupted

Examples:
  heed sim spike
  heed sim --chart spike.png --csv spike.csv spike
  heed sim --chart docs/sim-spike.png --force spike   # redraw the README's chart
  heed sim --policy heed --horizon 5m my-outage.yaml
`

// simHelp lists the built-in scenarios between the head and the flags.
func simHelp() helpDoc {
	var b strings.Builder
	b.WriteString(simHead)
	b.WriteString("\nBuilt-in scenarios:\n")
	for _, name := range sim.Builtins() {
		s, _ := sim.Builtin(name)
		var pols []string
		for _, p := range s.Policies {
			pols = append(pols, p.Name)
		}
		fmt.Fprintf(&b, "  %s (policies: %s)\n", name, strings.Join(pols, ", "))
		for _, line := range wrap(s.Description, 72) {
			fmt.Fprintf(&b, "      %s\n", line)
		}
	}
	return helpDoc{
		head:   b.String(),
		groups: []flagGroup{{"Sim flags", []string{"policy", "seed", "horizon", "csv", "chart", "force"}}},
		foot:   simFoot,
	}
}

// wrap splits s into lines of at most width bytes, between words.
func wrap(s string, width int) []string {
	var lines []string
	var line string
	for _, w := range strings.Fields(s) {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// simMain is "heed sim".
func simMain(ctx context.Context, s streams, args []string) int {
	fs := newFlagSet("sim")
	policies := fs.String("policy", "", "run only the policies `NAMES` (comma-separated; default: all)")
	seed := fs.Uint64("seed", 0, "random seed `N` (default: the scenario's)")
	horizon := durationFlag(fs, "horizon", 0, "virtual time to simulate (default: the scenario's)")
	csvPath := fs.String("csv", "", "write the time series as CSV to `FILE` (- for stdout, and the summary to stderr)")
	chartPath := fs.String("chart", "", "draw a chart of the runs to `FILE`, PNG or SVG by its extension")
	force := fs.Bool("force", false, "overwrite the files of --csv and --chart when they exist (default: refuse)")
	if code, done := parseFlags(fs, reorder(fs, args), s, simHelp()); done {
		return code
	}
	switch fs.NArg() {
	case 0:
		return usageError(s, "sim", fmt.Errorf("no scenario: give a built-in scenario's name (%s) or a file", strings.Join(sim.Builtins(), ", ")))
	case 1:
	default:
		return usageError(s, "sim", fmt.Errorf("unexpected argument %q (sim takes one scenario)", fs.Arg(1)))
	}
	sc, err := loadScenario(fs.Arg(0))
	if err != nil {
		return usageError(s, "sim", err)
	}
	if isSet(fs, "seed") {
		sc.Seed = *seed
	}
	if isSet(fs, "horizon") {
		if *horizon <= 0 {
			return usageError(s, "sim", flagError("horizon", "%v, must be positive", *horizon))
		}
		sc.Horizon = *horizon
	}
	if *policies != "" {
		if sc.Policies, err = pickPolicies(sc.Policies, *policies); err != nil {
			return usageError(s, "sim", err)
		}
	}
	format := ""
	if *chartPath != "" {
		switch ext := strings.ToLower(filepath.Ext(*chartPath)); ext {
		case ".png", ".svg":
			format = ext[1:]
		default:
			return usageError(s, "sim", flagError("chart", "%q: the file name must end in .png or .svg", *chartPath))
		}
	}
	if err := sc.Validate(); err != nil {
		return usageError(s, "sim", fmt.Errorf("%s: %w", fs.Arg(0), err))
	}
	// Refuse before simulating, not after: an existing file may be one a
	// repository tracks (docs/sim-spike.png), overwritten only when asked.
	for _, path := range []string{*csvPath, *chartPath} {
		if path == "" || path == "-" || *force {
			continue
		}
		if _, err := os.Stat(path); err == nil {
			fmt.Fprintf(s.stderr, "heed sim: %s exists; give --force to overwrite it, or another file name\n", path)
			return exitFailure
		}
	}

	opts := sim.Options{Context: ctx}
	if f, ok := s.stderr.(*os.File); ok && isatty.IsTerminal(f.Fd()) {
		opts.Progress = newProgress(s.stderr, &sc).update
	}
	results, err := sim.RunWith(sc, opts)
	if opts.Progress != nil {
		fmt.Fprint(s.stderr, "\r\033[K")
	}
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(s.stderr, "heed sim: interrupted")
			return exitInterrupted
		}
		return usageError(s, "sim", err)
	}
	if *csvPath == "-" {
		// stdout carries the CSV alone; the summary goes to stderr.
		printSimSummary(s.stderr, &sc, results)
	} else {
		printSimSummary(s.stdout, &sc, results)
	}

	code := exitOK
	if *csvPath != "" {
		err := writeOut(s, *csvPath, *force, func(w io.Writer) error { return sim.WriteCSV(w, results...) })
		if err != nil {
			fmt.Fprintf(s.stderr, "heed sim: %v\n", err)
			code = exitFailure
		} else if *csvPath != "-" {
			fmt.Fprintf(s.stderr, "heed sim: wrote the time series to %s\n", *csvPath)
		}
	}
	if *chartPath != "" {
		err := writeOut(s, *chartPath, *force, func(w io.Writer) error {
			return chart.Write(w, format, chart.Options{Title: sc.Name, Faults: sc.Faults}, results...)
		})
		if err != nil {
			fmt.Fprintf(s.stderr, "heed sim: %v\n", err)
			code = exitFailure
		} else if *chartPath != "-" {
			fmt.Fprintf(s.stderr, "heed sim: wrote the chart to %s\n", *chartPath)
		}
	}
	return code
}

// reorder moves flags given after the scenario before it, so that
// "heed sim spike --chart x.png" works as well as the usual order.
func reorder(fs *flag.FlagSet, args []string) []string {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			pos = append(pos, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		if f := fs.Lookup(name); f != nil && i+1 < len(args) {
			if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && bf.IsBoolFlag() {
				continue
			}
			flags = append(flags, args[i+1])
			i++
		}
	}
	if len(pos) == 0 {
		return flags
	}
	return append(append(flags, "--"), pos...)
}

// writeOut writes to path ("-" is stdout) with write. Unless overwrite is
// set, it creates the file and fails when one exists.
func writeOut(s streams, path string, overwrite bool, write func(io.Writer) error) error {
	if path == "-" {
		return write(s.stdout)
	}
	var b bytes.Buffer
	if err := write(&b); err != nil {
		return err
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if !overwrite {
		flags = os.O_WRONLY | os.O_CREATE | os.O_EXCL
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(b.Bytes()); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func pickPolicies(all []sim.Policy, names string) ([]sim.Policy, error) {
	var out []sim.Policy
	for name := range strings.SplitSeq(names, ",") {
		name = strings.TrimSpace(name)
		found := false
		for i, p := range all {
			pn := p.Name
			if pn == "" {
				pn = fmt.Sprintf("policy %d", i+1)
			}
			if pn == name {
				p.Name = pn
				out = append(out, p)
				found = true
			}
		}
		if !found {
			var known []string
			for i, p := range all {
				if p.Name == "" {
					known = append(known, fmt.Sprintf("%q", fmt.Sprintf("policy %d", i+1)))
				} else {
					known = append(known, fmt.Sprintf("%q", p.Name))
				}
			}
			return nil, flagError("policy", "no policy %q in the scenario (it has %s)", name, strings.Join(known, ", "))
		}
	}
	return out, nil
}

func printSimSummary(w io.Writer, sc *sim.Scenario, results []*sim.Result) {
	fmt.Fprintf(w, "scenario %s: %s user requests/s (%s) for %v, seed %d",
		sc.Name, group(sc.Load.Rate), sc.Load.Arrival, sc.Horizon, sc.Seed)
	if len(sc.Faults) > 0 {
		var fs []string
		for _, f := range sc.Faults {
			fs = append(fs, describeFault(f))
		}
		fmt.Fprintf(w, "; faults: %s", strings.Join(fs, ", "))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "POLICY\tATTEMPTS/REQUEST\tPEAK AMPLIFICATION\tSUCCEEDED\tP99\tRECOVERY")
	for _, r := range results {
		sm := &r.Summary
		fmt.Fprintf(tw, "%s\t%.2f\t%.1f× at %v\t%.1f%%\t%v\t%s\n", r.Policy, sm.AttemptsPerRequest,
			sm.PeakAmplification, sm.PeakAt, 100*sm.SuccessRate, roundLatency(sm.P99), sm.RecoveryString())
	}
	tw.Flush()
	blank := false
	for _, r := range results {
		sm := &r.Summary
		if sm.Failed == 0 {
			continue
		}
		keys := make([]string, 0, len(sm.GiveUps))
		for k := range sm.GiveUps {
			keys = append(keys, k)
		}
		// Largest first, then by name, so the output is stable.
		sortKeys(keys, sm.GiveUps)
		var parts []string
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%s %s", k, group(float64(sm.GiveUps[k]))))
		}
		if !blank {
			fmt.Fprintln(w)
			blank = true
		}
		fmt.Fprintf(w, "%s: %s of %s user requests failed (gave up: %s)", r.Policy, group(float64(sm.Failed)),
			group(float64(sm.UserRequests)), strings.Join(parts, ", "))
		if sm.Orphaned > 0 {
			fmt.Fprintf(w, "; %s attempts served after their caller gave up", group(float64(sm.Orphaned)))
		}
		if sm.Open > 0 {
			fmt.Fprintf(w, "; %s still open at the horizon", group(float64(sm.Open)))
		}
		fmt.Fprintln(w)
	}
}

func sortKeys(keys []string, n map[string]int64) {
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0; j-- {
			a, b := keys[j-1], keys[j]
			if n[a] > n[b] || (n[a] == n[b] && a < b) {
				break
			}
			keys[j-1], keys[j] = b, a
		}
	}
}

func roundLatency(d time.Duration) time.Duration {
	switch {
	case d >= 10*time.Second:
		return d.Round(100 * time.Millisecond)
	case d >= 10*time.Millisecond:
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Microsecond)
}

func describeFault(f sim.Fault) string {
	span := fmt.Sprintf("%v–%v", f.Start, f.End)
	switch f.Kind {
	case sim.Outage:
		return "outage " + span
	case sim.CapacityDrop:
		return fmt.Sprintf("capacity down to %g%% %s", 100*f.Factor, span)
	case sim.ErrorRate:
		return fmt.Sprintf("%g%% errors %s", 100*f.Rate, span)
	case sim.Spike:
		return fmt.Sprintf("load ×%g %s", f.Factor, span)
	}
	return f.Kind.String() + " " + span
}

// group formats a rate with thousands separators, dropping a zero
// fraction: 1,000 or 12.5.
func group(f float64) string {
	s := fmt.Sprintf("%.0f", f)
	if f != float64(int64(f)) {
		return fmt.Sprintf("%g", f)
	}
	n := len(s)
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (n-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// progress prints how far the runs are, on a terminal, at most ten times a
// second and only once a run has taken a while.
type progress struct {
	w     io.Writer
	sc    *sim.Scenario
	start time.Time
	last  time.Time
}

func newProgress(w io.Writer, sc *sim.Scenario) *progress {
	return &progress{w: w, sc: sc, start: time.Now()}
}

func (p *progress) update(policy int, at time.Duration) {
	now := time.Now()
	if now.Sub(p.start) < 300*time.Millisecond || now.Sub(p.last) < 100*time.Millisecond {
		return
	}
	p.last = now
	done := (float64(policy) + float64(at)/float64(p.sc.Horizon)) / float64(len(p.sc.Policies))
	fmt.Fprintf(p.w, "\r\033[Kheed sim: %s: policy %q at %v of %v (%.0f%%)", p.sc.Name,
		p.sc.Policies[policy].Name, at.Truncate(time.Second), p.sc.Horizon, 100*done)
}

// --- scenario files ---

// loadScenario returns the built-in scenario called arg, or reads the file
// arg.
func loadScenario(arg string) (sim.Scenario, error) {
	if s, ok := sim.Builtin(arg); ok {
		return s, nil
	}
	data, err := os.ReadFile(arg)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) && !strings.ContainsAny(arg, "./\\") {
			return sim.Scenario{}, fmt.Errorf("no built-in scenario or file %q (built-in: %s)", arg, strings.Join(sim.Builtins(), ", "))
		}
		return sim.Scenario{}, err
	}
	sc, err := parseScenario(data, strings.EqualFold(filepath.Ext(arg), ".json"))
	if err != nil {
		return sim.Scenario{}, fmt.Errorf("%s: %w", arg, err)
	}
	if sc.Name == "" {
		sc.Name = strings.TrimSuffix(filepath.Base(arg), filepath.Ext(arg))
	}
	return sc, nil
}

// The file format. Durations are strings; every field is optional to the
// decoder, and sim.Scenario.Validate checks the values.
type simFile struct {
	Name        string      `yaml:"name" json:"name"`
	Description string      `yaml:"description" json:"description"`
	Horizon     string      `yaml:"horizon" json:"horizon"`
	Interval    string      `yaml:"interval" json:"interval"`
	Seed        uint64      `yaml:"seed" json:"seed"`
	RecoverAt   float64     `yaml:"recover_at" json:"recover_at"`
	Load        simLoad     `yaml:"load" json:"load"`
	Service     simService  `yaml:"service" json:"service"`
	Faults      []simFault  `yaml:"faults" json:"faults"`
	Policies    []simPolicy `yaml:"policies" json:"policies"`
}

type simLoad struct {
	Rate     float64 `yaml:"rate" json:"rate"`
	Arrival  string  `yaml:"arrival" json:"arrival"`
	Deadline string  `yaml:"deadline" json:"deadline"`
}

type simService struct {
	Concurrency int     `yaml:"concurrency" json:"concurrency"`
	ServiceTime string  `yaml:"service_time" json:"service_time"`
	Exponential bool    `yaml:"exponential" json:"exponential"`
	LoadLatency string  `yaml:"load_latency" json:"load_latency"`
	QueueLimit  int     `yaml:"queue_limit" json:"queue_limit"`
	ErrorRate   float64 `yaml:"error_rate" json:"error_rate"`
}

type simFault struct {
	Kind   string  `yaml:"kind" json:"kind"`
	Start  string  `yaml:"start" json:"start"`
	End    string  `yaml:"end" json:"end"`
	Factor float64 `yaml:"factor" json:"factor"`
	Rate   float64 `yaml:"rate" json:"rate"`
}

type simPolicy struct {
	Name              string     `yaml:"name" json:"name"`
	PropagateDeadline bool       `yaml:"propagate_deadline" json:"propagate_deadline"`
	Layers            []simLayer `yaml:"layers" json:"layers"`
}

type simLayer struct {
	Name       string      `yaml:"name" json:"name"`
	Attempts   int         `yaml:"attempts" json:"attempts"`
	Backoff    simBackoff  `yaml:"backoff" json:"backoff"`
	Timeout    string      `yaml:"timeout" json:"timeout"`
	TimeBudget string      `yaml:"max_duration" json:"max_duration"`
	MinAttempt string      `yaml:"min_attempt_time" json:"min_attempt_time"`
	Owner      bool        `yaml:"owner" json:"owner"`
	Budget     *simBudget  `yaml:"budget" json:"budget"`
	Breaker    *simBreaker `yaml:"breaker" json:"breaker"`
}

type simBackoff struct {
	Kind       string  `yaml:"kind" json:"kind"`
	Base       string  `yaml:"base" json:"base"`
	Cap        string  `yaml:"cap" json:"cap"`
	Multiplier float64 `yaml:"multiplier" json:"multiplier"`
	Jitter     string  `yaml:"jitter" json:"jitter"`
}

type simBudget struct {
	Ratio        float64 `yaml:"ratio" json:"ratio"`
	Window       string  `yaml:"window" json:"window"`
	MinPerSecond float64 `yaml:"min_per_second" json:"min_per_second"`
}

type simBreaker struct {
	FailureRatio float64 `yaml:"failure_ratio" json:"failure_ratio"`
	MinCalls     int     `yaml:"min_calls" json:"min_calls"`
	Window       string  `yaml:"window" json:"window"`
	Cooldown     string  `yaml:"cooldown" json:"cooldown"`
	Probes       int     `yaml:"probes" json:"probes"`
}

// what names each file type in error messages.
var simFileParts = map[string]any{
	"the scenario": simFile{}, "load": simLoad{}, "service": simService{}, "a fault": simFault{},
	"a policy": simPolicy{}, "a layer": simLayer{}, "backoff": simBackoff{}, "budget": simBudget{},
	"breaker": simBreaker{},
}

var yamlUnknown = regexp.MustCompile(`field (\S+) not found in type cli\.(\w+)`)

// parseScenario decodes a scenario file and converts it to a sim.Scenario.
func parseScenario(data []byte, isJSON bool) (sim.Scenario, error) {
	var f simFile
	if isJSON {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&f); err != nil {
			at := min(int(dec.InputOffset()), len(data))
			msg := strings.TrimPrefix(err.Error(), "json: ")
			if field, ok := strings.CutPrefix(msg, "unknown field "); ok {
				// The decoder has read past the field: find it.
				if i := bytes.Index(data, []byte(field)); i >= 0 {
					at = i
				}
			}
			var se *json.SyntaxError
			if errors.As(err, &se) {
				at = min(int(se.Offset), len(data))
			}
			line := 1 + bytes.Count(data[:at], []byte("\n"))
			return sim.Scenario{}, fmt.Errorf("line %d: %s", line, msg)
		}
		if dec.More() {
			return sim.Scenario{}, errors.New("more than one JSON value")
		}
	} else {
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		if err := dec.Decode(&f); err != nil {
			if errors.Is(err, io.EOF) {
				return sim.Scenario{}, errors.New("the file is empty")
			}
			return sim.Scenario{}, errors.New(explainYAML(err))
		}
	}
	return f.scenario()
}

// explainYAML rewrites yaml's "field x not found in type cli.simLayer" as
// `unknown field "x" in a layer (known: ...)`.
func explainYAML(err error) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	msg = strings.Replace(msg, "unmarshal errors:\n  ", "", 1)
	return yamlUnknown.ReplaceAllStringFunc(msg, func(m string) string {
		sub := yamlUnknown.FindStringSubmatch(m)
		for what, v := range simFileParts {
			t := reflect.TypeOf(v)
			if t.Name() != sub[2] {
				continue
			}
			var known []string
			for i := range t.NumField() {
				if tag := strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]; tag != "" && tag != "-" {
					known = append(known, tag)
				}
			}
			return fmt.Sprintf("unknown field %q in %s (known: %s)", sub[1], what, strings.Join(known, ", "))
		}
		return fmt.Sprintf("unknown field %q", sub[1])
	})
}

// durs parses the duration strings of a file, remembering the first error
// with the field's path.
type durs struct{ err error }

func (d *durs) parse(path, s string) time.Duration {
	if s == "" || d.err != nil {
		return 0
	}
	v, err := parseDuration(s)
	if err != nil {
		d.err = fmt.Errorf("%s: %w", path, err)
	}
	return v
}

func (f *simFile) scenario() (sim.Scenario, error) {
	var d durs
	s := sim.Scenario{
		Name:        f.Name,
		Description: f.Description,
		Horizon:     d.parse("horizon", f.Horizon),
		Interval:    d.parse("interval", f.Interval),
		Seed:        f.Seed,
		RecoverAt:   f.RecoverAt,
		Load: sim.Load{
			Rate:     f.Load.Rate,
			Deadline: d.parse("load.deadline", f.Load.Deadline),
		},
		Service: sim.Service{
			Concurrency: f.Service.Concurrency,
			ServiceTime: d.parse("service.service_time", f.Service.ServiceTime),
			Exponential: f.Service.Exponential,
			LoadLatency: d.parse("service.load_latency", f.Service.LoadLatency),
			QueueLimit:  f.Service.QueueLimit,
			ErrorRate:   f.Service.ErrorRate,
		},
	}
	if f.Horizon == "" {
		return s, errors.New("horizon: missing; say how much virtual time to simulate, such as 2m")
	}
	if f.Load.Rate == 0 {
		return s, errors.New("load.rate: missing; say how many user requests arrive per second")
	}
	if f.Load.Arrival != "" {
		a, err := sim.ParseArrival(f.Load.Arrival)
		if err != nil {
			return s, fmt.Errorf("load.arrival: %q is not poisson or constant", f.Load.Arrival)
		}
		s.Load.Arrival = a
	}
	for i, ff := range f.Faults {
		p := fmt.Sprintf("faults[%d]", i)
		k, err := sim.ParseFaultKind(ff.Kind)
		if err != nil {
			return s, fmt.Errorf("%s.kind: %q is not outage, capacity, errors or spike", p, ff.Kind)
		}
		if ff.End == "" {
			return s, fmt.Errorf("%s.end: missing", p)
		}
		s.Faults = append(s.Faults, sim.Fault{Kind: k, Start: d.parse(p+".start", ff.Start), End: d.parse(p+".end", ff.End),
			Factor: ff.Factor, Rate: ff.Rate})
	}
	for i, fp := range f.Policies {
		p := fmt.Sprintf("policies[%d]", i)
		pol := sim.Policy{Name: fp.Name, PropagateDeadline: fp.PropagateDeadline}
		for j, fl := range fp.Layers {
			lp := fmt.Sprintf("%s.layers[%d]", p, j)
			l := sim.Layer{
				Name:  fl.Name,
				Owner: fl.Owner,
				Retry: retry.Policy{
					Attempts:       fl.Attempts,
					AttemptTimeout: d.parse(lp+".timeout", fl.Timeout),
					TimeBudget:     d.parse(lp+".max_duration", fl.TimeBudget),
					MinAttemptTime: d.parse(lp+".min_attempt_time", fl.MinAttempt),
					Backoff: backoff.Schedule{
						Base:       d.parse(lp+".backoff.base", fl.Backoff.Base),
						Cap:        d.parse(lp+".backoff.cap", fl.Backoff.Cap),
						Multiplier: fl.Backoff.Multiplier,
					},
				},
			}
			if fl.Attempts < 0 {
				// -1 would mean unlimited to the retry package.
				return s, fmt.Errorf("%s.attempts: %d, must be at least 1", lp, fl.Attempts)
			}
			if k := fl.Backoff.Kind; k != "" {
				v, err := backoff.ParseKind(k)
				if err != nil {
					return s, fmt.Errorf("%s.backoff.kind: %q is not exponential, constant, linear or immediate", lp, k)
				}
				l.Retry.Backoff.Kind = v
			}
			if jt := fl.Backoff.Jitter; jt != "" {
				v, err := backoff.ParseJitter(jt)
				if err != nil {
					return s, fmt.Errorf("%s.backoff.jitter: %q is not full, none, equal or decorrelated", lp, jt)
				}
				l.Retry.Backoff.Jitter = v
			}
			if b := fl.Budget; b != nil {
				l.Budget = &budget.Config{Ratio: b.Ratio, Window: d.parse(lp+".budget.window", b.Window), MinPerSecond: b.MinPerSecond}
			}
			if b := fl.Breaker; b != nil {
				l.Breaker = &breaker.Config{FailureRatio: b.FailureRatio, MinCalls: b.MinCalls, Probes: b.Probes,
					Window: d.parse(lp+".breaker.window", b.Window), Cooldown: d.parse(lp+".breaker.cooldown", b.Cooldown)}
			}
			pol.Layers = append(pol.Layers, l)
		}
		s.Policies = append(s.Policies, pol)
	}
	if d.err != nil {
		return s, d.err
	}
	if err := s.Validate(); err != nil {
		return s, errors.New(strings.TrimPrefix(err.Error(), "sim: "))
	}
	return s, nil
}
