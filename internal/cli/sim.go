package cli

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"github.com/heed-go/heed/internal/textfmt"
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

var simDoc = helpDoc{file: "sim", groups: []flagGroup{{"Sim flags", []string{"policy", "seed", "seeds", "horizon", "csv", "chart", "force"}}}}

// simScenariosHelp lists the built-in scenarios for the help.
func simScenariosHelp() string {
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
	if code, done := parseFlags(fs, reorder(fs, args), s, simDoc); done {
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
		sc.Name, textfmt.Group(sc.Load.Rate), sc.Load.Arrival, sc.Horizon, seeds)
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
			sm.PeakAmplification, sm.PeakAt, 100*sm.SuccessRate, textfmt.Latency(sm.P99), sm.RecoveryString())
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
			parts = append(parts, fmt.Sprintf("%s %s", k, textfmt.Group(float64(sm.GiveUps[k]))))
		}
		if !blank {
			fmt.Fprintln(w)
			blank = true
		}
		fmt.Fprintf(w, "%s: %s of %s user requests failed (gave up: %s)", r.Chain, textfmt.Group(float64(sm.Failed)),
			textfmt.Group(float64(sm.UserRequests)), strings.Join(parts, ", "))
		if sm.Orphaned > 0 {
			fmt.Fprintf(w, "; %s attempts served after their caller gave up", textfmt.Group(float64(sm.Orphaned)))
		}
		if sm.Open > 0 {
			fmt.Fprintf(w, "; %s still open at the horizon", textfmt.Group(float64(sm.Open)))
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
