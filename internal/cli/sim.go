package cli

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mattn/go-isatty"

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
          attempt_timeout: 1s    # per attempt (default: none)
          time_budget: 0s        # time budget of a call (default: none)
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
		for _, p := range s.Chains {
			pols = append(pols, p.Name)
		}
		fmt.Fprintf(&b, "  %s (policies: %s)\n", name, strings.Join(pols, ", "))
		for _, line := range wrap(s.Description, 72) {
			fmt.Fprintf(&b, "      %s\n", line)
		}
	}
	return helpDoc{
		head:   b.String(),
		groups: []flagGroup{{"Sim flags", []string{"policy", "seed", "seeds", "horizon", "csv", "chart", "force"}}},
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
	seeds := fs.Int("seeds", sim.DefaultSeeds, "run with `N` seeds, from --seed on, and print the median and range of each figure; --csv and --chart show the first seed")
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
	sc, err := sim.LoadScenario(fs.Arg(0))
	if err != nil {
		return usageError(s, "sim", err)
	}
	if isSet(fs, "seed") {
		sc.Seed = *seed
	}
	if *seeds < 1 || *seeds > sim.MaxSeeds {
		return usageError(s, "sim", flagError("seeds", "%d, must be from 1 to %d", *seeds, sim.MaxSeeds))
	}
	if isSet(fs, "horizon") {
		if *horizon <= 0 {
			return usageError(s, "sim", flagError("horizon", "%v, must be positive", *horizon))
		}
		sc.Horizon = *horizon
	}
	if *policies != "" {
		if sc.Chains, err = pickPolicies(sc.Chains, *policies); err != nil {
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
	var results []*sim.Result
	var spreads []*sim.Seeds
	if *seeds == 1 {
		results, err = sim.RunWith(sc, opts)
	} else if spreads, err = sim.RunSeeds(sc, *seeds, opts); err == nil {
		for _, sd := range spreads {
			results = append(results, sd.Results[0])
		}
	}
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
	out := s.stdout
	if *csvPath == "-" {
		out = s.stderr // stdout carries the CSV alone
	}
	if spreads != nil {
		printSeedsSummary(out, &sc, *seeds, spreads)
	} else {
		printSimSummary(out, &sc, results)
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

func pickPolicies(all []sim.Chain, names string) ([]sim.Chain, error) {
	var out []sim.Chain
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

// printScenarioLine prints the line that names the scenario and its runs.
func printScenarioLine(w io.Writer, sc *sim.Scenario, seeds string) {
	fmt.Fprintf(w, "scenario %s: %s user requests/s (%s) for %v, %s",
		sc.Name, group(sc.Load.Rate), sc.Load.Arrival, sc.Horizon, seeds)
	if len(sc.Faults) > 0 {
		var fs []string
		for _, f := range sc.Faults {
			fs = append(fs, f.String())
		}
		fmt.Fprintf(w, "; faults: %s", strings.Join(fs, ", "))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w)
}

// printSeedsSummary prints the median and range of each chain's figures
// over the seeds: during the faults, the users served and the load per user
// request on the bottom service (mean, and the worst second), and the
// recovery.
func printSeedsSummary(w io.Writer, sc *sim.Scenario, n int, spreads []*sim.Seeds) {
	printScenarioLine(w, sc, fmt.Sprintf("seeds %d–%d (median and range)", sc.Seed, sc.Seed+uint64(n)-1))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "POLICY\tSERVED IN FAULTS\tLOAD PER USER IN FAULTS\tWORST SECOND\tRECOVERY")
	for _, sd := range spreads {
		pct := sim.Spread{Median: 100 * sd.FaultSuccessRate.Median, Min: 100 * sd.FaultSuccessRate.Min, Max: 100 * sd.FaultSuccessRate.Max}
		rec := fmt.Sprintf("%s in %d of %d seeds", sd.RecoverySeconds.Format("%.0fs"), sd.Recovered, n)
		if sd.Recovered == 0 {
			rec = fmt.Sprintf("did not recover in %d of %d seeds", n, n)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", sd.Chain, pct.Format("%.1f%%"), sd.FaultAttemptsPerRequest.Format("%.2f×"),
			sd.FaultPeak.Format("%.2f×"), rec)
	}
	tw.Flush()
}

func printSimSummary(w io.Writer, sc *sim.Scenario, results []*sim.Result) {
	printScenarioLine(w, sc, fmt.Sprintf("seed %d", sc.Seed))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "POLICY\tATTEMPTS/REQUEST\tPEAK AMPLIFICATION\tSUCCEEDED\tP99\tRECOVERY")
	for _, r := range results {
		sm := &r.Summary
		fmt.Fprintf(tw, "%s\t%.2f\t%.1f× at %v\t%.1f%%\t%v\t%s\n", r.Chain, sm.AttemptsPerRequest,
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
		fmt.Fprintf(w, "%s: %s of %s user requests failed (gave up: %s)", r.Chain, group(float64(sm.Failed)),
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
	done := (float64(policy) + float64(at)/float64(p.sc.Horizon)) / float64(len(p.sc.Chains))
	fmt.Fprintf(p.w, "\r\033[Kheed sim: %s: policy %q at %v of %v (%.0f%%)", p.sc.Name,
		p.sc.Chains[policy].Name, at.Truncate(time.Second), p.sc.Horizon, 100*done)
}
