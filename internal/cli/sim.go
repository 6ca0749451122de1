package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mattn/go-isatty"

	"github.com/heed-go/heed/internal/textfmt"
	"github.com/heed-go/heed/sim"
	"github.com/heed-go/heed/sim/chart"
)

var simDoc = helpDoc{file: "sim", groups: []flagGroup{{"Sim flags", []string{"policy", "seed", "seeds", "horizon", "csv", "chart", "force"}}}}

<<<<<<< HEAD
// simScenariosHelp lists the built-in scenarios for the help.
func simScenariosHelp() string {
=======
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
>>>>>>> f534af5
	var b strings.Builder
	for _, name := range sim.Builtins() {
		s, _ := sim.Builtin(name)
		var pols []string
		for _, p := range s.Chains {
			pols = append(pols, p.Name)
		}
		fmt.Fprintf(&b, "  %s (policies: %s)\n", name, strings.Join(pols, ", "))
		for _, line := range textfmt.Wrap(s.Description, 72) {
			fmt.Fprintf(&b, "      %s\n", line)
		}
	}
	return b.String()
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
	pos, code, done := parseInterleaved(fs, args, s, simDoc)
	switch {
	case done:
		return code
	case len(pos) == 0:
		return usageError(s, "sim", fmt.Errorf("no scenario: give a built-in scenario's name (%s) or a file", strings.Join(sim.Builtins(), ", ")))
	case len(pos) > 1:
		return usageError(s, "sim", fmt.Errorf("unexpected argument %q (sim takes one scenario)", pos[1]))
	}
	sc, err := sim.LoadScenario(pos[0])
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
		if sc.Chains, err = sim.PickChains(sc.Chains, *policies); err != nil {
			return usageError(s, "sim", flagError("policy", "%v", err))
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
		return usageError(s, "sim", fmt.Errorf("%s: %w", pos[0], err))
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
		sim.WriteSeedsSummary(out, &sc, *seeds, spreads)
	} else {
		sim.WriteSummary(out, &sc, results)
	}

	code = exitOK
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
