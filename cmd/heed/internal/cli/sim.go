package cli

import (
	"bytes"
	"context"
	"errors"
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
	seeds := fs.Int("seeds", defaultSeeds, "run with `N` seeds, from --seed on, and print the median and range of each figure; --csv and --chart show the first seed")
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
	sc, err := loadScenario(pos[0])
	if err != nil {
		return usageError(s, "sim", err)
	}
	if isSet(fs, "seed") {
		sc.Seed = *seed
	}
	if *seeds < 1 || *seeds > maxSeeds {
		return usageError(s, "sim", flagError("seeds", "%d, must be from 1 to %d", *seeds, maxSeeds))
	}
	if isSet(fs, "horizon") {
		if *horizon <= 0 {
			return usageError(s, "sim", flagError("horizon", "%v, must be positive", *horizon))
		}
		sc.Horizon = *horizon
	}
	if *policies != "" {
		if sc.Chains, err = pickChains(sc.Chains, *policies); err != nil {
			return usageError(s, "sim", flagError("policy", "%v", err))
		}
	}
	format, err := chartFormat(*chartPath)
	if err != nil {
		return usageError(s, "sim", err)
	}
	if err := sc.Validate(); err != nil {
		return usageError(s, "sim", fmt.Errorf("%s: %w", pos[0], err))
	}
	if refuseExisting(s, *force, *csvPath, *chartPath) {
		return exitFailure
	}

	results, spreads, err := simRun(ctx, s, &sc, *seeds)
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
		code = max(code, simWrote(s, err, *csvPath, "the time series"))
	}
	if *chartPath != "" {
		err := writeOut(s, *chartPath, *force, func(w io.Writer) error {
			return chart.Write(w, format, chart.Options{Title: sc.Name, Faults: sc.Faults}, results...)
		})
		code = max(code, simWrote(s, err, *chartPath, "the chart"))
	}
	return code
}

// chartFormat returns the format of --chart path, by its extension: png,
// svg, or "" when path is "".
func chartFormat(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".png", ".svg":
		return ext[1:], nil
	default:
		return "", flagError("chart", "%q: the file name must end in .png or .svg", path)
	}
}

// refuseExisting reports whether one of paths exists (and says so on
// stderr), unless force. It runs before simulating, not after: an existing
// file may be one a repository tracks (docs/sim-spike.png), overwritten
// only when asked.
func refuseExisting(s streams, force bool, paths ...string) bool {
	for _, path := range paths {
		if path == "" || path == "-" || force {
			continue
		}
		if _, err := os.Stat(path); err == nil {
			fmt.Fprintf(s.stderr, "heed sim: %s exists; give --force to overwrite it, or another file name\n", path)
			return true
		}
	}
	return false
}

// simRun runs sc with seeds seeds, showing progress on a terminal's
// stderr; with more than one seed it returns the spreads too, and the
// first seed's results.
func simRun(ctx context.Context, s streams, sc *sim.Scenario, seeds int) (results []*sim.Result, spreads []*sim.Seeds, err error) {
	opts := sim.Options{Context: ctx}
	if f, ok := s.stderr.(*os.File); ok && isatty.IsTerminal(f.Fd()) {
		opts.Progress = newProgress(s.stderr, sc).update
	}
	if seeds == 1 {
		results, err = sim.Run(*sc, opts)
	} else if spreads, err = sim.RunSeeds(*sc, seeds, opts); err == nil {
		for _, sd := range spreads {
			results = append(results, sd.Results[0])
		}
	}
	if opts.Progress != nil {
		fmt.Fprint(s.stderr, "\r\033[K")
	}
	return results, spreads, err
}

// simWrote reports writing what to path: err on stderr, or where it went
// (unless stdout); it returns the exit code.
func simWrote(s streams, err error, path, what string) int {
	if err != nil {
		fmt.Fprintf(s.stderr, "heed sim: %v\n", err)
		return exitFailure
	}
	if path != "-" {
		fmt.Fprintf(s.stderr, "heed sim: wrote %s to %s\n", what, path)
	}
	return exitOK
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

// defaultSeeds is the number of seeds heed sim runs when not told
// otherwise: enough that one lucky seed does not make a policy look better
// than it is, few enough to stay quick.
const defaultSeeds = 5

// maxSeeds is the most seeds sim.RunSeeds runs (its documentation says
// so; TestSimMaxSeeds holds the two together), checked here so that
// --seeds is refused before anything runs.
const maxSeeds = 1000

// pickChains returns the chains of all named in names, a comma-separated
// list, in its order; a chain without a name is "policy N" (from 1). A
// name no chain has is an error that lists the names there are.
func pickChains(all []sim.Chain, names string) ([]sim.Chain, error) {
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
			return nil, fmt.Errorf("no policy %q in the scenario (it has %s)", name, strings.Join(known, ", "))
		}
	}
	return out, nil
}

// loadScenario returns the built-in scenario called arg (see sim.Builtins),
// or reads the scenario file at the path arg with sim.ParseScenario. Its
// errors name arg, not this package: they are meant for the user who wrote
// the file.
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
	return sim.ParseScenario(arg, data)
}
