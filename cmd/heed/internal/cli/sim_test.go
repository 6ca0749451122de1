package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heed-go/heed/sim"
)

func TestSimHelp(t *testing.T) {
	code, stdout, _ := heed(t, "", "sim", "--help")
	if code != 0 {
		t.Fatalf("exit code %d", code)
	}
	for _, want := range append(sim.Builtins(),
		"Usage: heed sim [FLAGS] SCENARIO", "Built-in scenarios:", "Scenario file (YAML or JSON",
		"policies:", "budget: {ratio: 0.1", "--chart FILE", "--csv FILE", "Exit codes:") {
		if !strings.Contains(stdout, want) {
			t.Errorf("help does not mention %q", want)
		}
	}
	if _, stdout, _ := heed(t, "", "help"); !strings.Contains(stdout, "sim ") {
		t.Errorf("top-level help does not list sim:\n%s", stdout)
	}
}

// The spike scenario: naive retries never recover, heed's defaults do, over
// the default 5 seeds (median and range); --seeds 1 prints one run's table.
func TestSimBuiltin(t *testing.T) {
	code, stdout, stderr := heed(t, "", "sim", "spike")
	if code != 0 || stderr != "" {
		t.Fatalf("exit code %d, stderr %q", code, stderr)
	}
	for _, want := range []string{
		"scenario spike: 40 user requests/s (poisson) for 2m0s, seeds 1–5 (median and range); faults: load ×2 20s–30s",
		"POLICY                    SERVED IN FAULTS     LOAD PER USER IN FAULTS  WORST SECOND         RECOVERY",
		"did not recover in 5 of 5 seeds",
		"0s in 5 of 5 seeds",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output does not contain %q:\n%s", want, stdout)
		}
	}
	code, stdout, stderr = heed(t, "", "sim", "--seeds", "1", "spike")
	if code != 0 || stderr != "" {
		t.Fatalf("--seeds 1: exit code %d, stderr %q", code, stderr)
	}
	for _, want := range []string{
		"scenario spike: 40 user requests/s (poisson) for 2m0s, seed 1; faults: load ×2 20s–30s",
		"POLICY                    ATTEMPTS/REQUEST  PEAK AMPLIFICATION  SUCCEEDED  P99",
		"did not recover within the horizon",
		"recovered when the faults ended",
		"naive: 3,466 of 5,069 user requests failed (gave up: deadline 3,466)",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("--seeds 1: output does not contain %q:\n%s", want, stdout)
		}
	}
	if code, _, stderr := heed(t, "", "sim", "--seeds", "0", "spike"); code != 2 || !strings.Contains(stderr, "--seeds: 0, must be from 1 to 1000") {
		t.Errorf("--seeds 0: exit code %d, stderr %q", code, stderr)
	}
}

// TestSimMaxSeeds: --seeds allows what sim.RunSeeds does, no more.
func TestSimMaxSeeds(t *testing.T) {
	sc, _ := sim.Builtin("spike")
	_, err := sim.RunSeeds(sc, maxSeeds+1, sim.Options{})
	if want := fmt.Sprintf("seeds is %d, must be from 1 to %d", maxSeeds+1, maxSeeds); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("RunSeeds(%d seeds) = %v, want an error saying %q", maxSeeds+1, err, want)
	}
}

func TestSimOutputs(t *testing.T) {
	dir := t.TempDir()
	png, svg, csv := filepath.Join(dir, "c.png"), filepath.Join(dir, "c.svg"), filepath.Join(dir, "s.csv")
	// Flags may follow the scenario.
	code, _, stderr := heed(t, "", "sim", "--horizon", "40s", "spike", "--chart", png, "--csv", csv)
	if code != 0 {
		t.Fatalf("exit code %d: %s", code, stderr)
	}
	if b, _ := os.ReadFile(png); !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Errorf("%s is not a PNG", png)
	}
	b, _ := os.ReadFile(csv)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if lines[0] != "policy,t_s,user_requests,attempts,goodput,errors,queue,in_flight,p50_ms,p99_ms" || len(lines) != 1+4*40 {
		t.Errorf("CSV: %d lines, header %q", len(lines), lines[0])
	}
	if !strings.HasPrefix(lines[1], "naive,0,") || !strings.HasPrefix(lines[41], "heed,0,") {
		t.Errorf("CSV rows: %q, %q", lines[1], lines[41])
	}
	if code, _, _ := heed(t, "", "sim", "--horizon", "20s", "--policy", "heed", "--chart", svg, "spike"); code != 0 {
		t.Fatalf("svg: exit code %d", code)
	}
	if b, _ := os.ReadFile(svg); !bytes.Contains(b, []byte("<svg")) || bytes.Contains(b, []byte("naive")) {
		t.Errorf("%s: not an SVG of the heed policy alone", svg)
	}
	// Each quantity on its own axis, with its unit.
	b, _ = os.ReadFile(svg)
	for _, want := range []string{"requests per second", "attempts in flight (count)", "p99 latency (s)", "Each panel is scaled to its own data"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("%s has no %q", svg, want)
		}
	}
}

// heed sim says where it wrote its outputs, and never overwrites an existing
// file (a tracked docs/sim-spike.png, say) unless given --force.
func TestSimOverwritesOnlyWithForce(t *testing.T) {
	dir := t.TempDir()
	png, csv := filepath.Join(dir, "c.png"), filepath.Join(dir, "s.csv")
	code, _, stderr := heed(t, "", "sim", "--horizon", "10s", "--chart", png, "--csv", csv, "spike")
	if code != 0 || stderr != "heed sim: wrote the time series to "+csv+"\nheed sim: wrote the chart to "+png+"\n" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for _, p := range []string{png, csv} {
		if err := os.WriteFile(p, []byte("tracked"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, stdout, stderr := heed(t, "", "sim", "--horizon", "10s", "--chart", png, "spike")
	if code != 1 || stdout != "" || stderr != "heed sim: "+png+" exists; give --force to overwrite it, or another file name\n" {
		t.Errorf("existing chart: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, _, stderr = heed(t, "", "sim", "--horizon", "10s", "--csv", csv, "spike")
	if code != 1 || !strings.Contains(stderr, csv+" exists") {
		t.Errorf("existing CSV: exit %d, stderr %q", code, stderr)
	}
	for _, p := range []string{png, csv} {
		if b, _ := os.ReadFile(p); string(b) != "tracked" {
			t.Errorf("%s was overwritten without --force", p)
		}
	}
	code, _, stderr = heed(t, "", "sim", "--horizon", "10s", "--chart", png, "--force", "spike")
	if code != 0 || !strings.Contains(stderr, "wrote the chart to "+png) {
		t.Fatalf("--force: exit %d, stderr %q", code, stderr)
	}
	if b, _ := os.ReadFile(png); !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Errorf("--force did not overwrite %s", png)
	}
}

// Same scenario, same seed: same bytes. Another seed: other bytes.
func TestSimDeterministic(t *testing.T) {
	run := func(args ...string) string {
		code, stdout, stderr := heed(t, "", append([]string{"sim", "--horizon", "30s", "--csv", "-"}, args...)...)
		if code != 0 || !strings.HasPrefix(stdout, "policy,t_s,") || !strings.Contains(stderr, "POLICY") {
			t.Fatalf("exit code %d, stdout not CSV or summary not on stderr:\n%s\n%s", code, stdout, stderr)
		}
		return stdout
	}
	a, b := run("layers"), run("layers")
	if a != b {
		t.Error("two runs of the same scenario differ")
	}
	if c := run("--seed", "2", "layers"); c == a {
		t.Error("seeds 1 and 2 give the same output")
	}
}

func TestSimFiles(t *testing.T) {
	for _, tt := range []struct {
		file string
		want []string
	}{
		{"outage.yaml", []string{"scenario small-outage: 50 user requests/s (poisson) for 30s, seed 7; faults: outage 10s–20s",
			"every layer     3.", "owner + budget  0."}},
		{"outage.json", []string{"scenario small-outage-json: 50 user requests/s (constant)", "owner   1.67"}},
	} {
		code, stdout, stderr := heed(t, "", "sim", "--seeds", "1", filepath.Join("testdata", "sim", tt.file))
		if code != 0 {
			t.Errorf("%s: exit code %d: %s", tt.file, code, stderr)
			continue
		}
		for _, want := range tt.want {
			if !strings.Contains(stdout, want) {
				t.Errorf("%s: output does not contain %q:\n%s", tt.file, want, stdout)
			}
		}
	}
}

func TestSimErrors(t *testing.T) {
	td := func(f string) string { return filepath.Join("testdata", "sim", f) }
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, "no scenario: give a built-in scenario's name (brownout, layers, outage, partial, spike, spike-heed, spike-naive, tail) or a file"},
		{[]string{"nope"}, `no built-in scenario or file "nope"`},
		{[]string{"spike", "layers"}, `unexpected argument "layers"`},
		{[]string{td("unknown-field.yaml")}, `line 5: unknown field "attemps" in a layer (known: name, attempts, backoff,`},
		{[]string{td("unknown-field.json")}, `line 4: unknown field "jiter"`},
		{[]string{td("impossible.yaml")}, "impossible.yaml: faults[0].factor is 1.5, must be in (0, 1]: the share of capacity left"},
		{[]string{td("bad-duration.yaml")}, `policies[0].layers[0].attempt_timeout: "2 seconds" is not a duration`},
		{[]string{td("missing.yaml")}, "no such file"},
		{[]string{"--policy", "smart", "spike"}, `invalid --policy: no policy "smart" in the scenario (it has "naive", "heed", "naive + server limit 100", "naive + server adaptive")`},
		{[]string{"--chart", "x.gif", "spike"}, "invalid --chart: \"x.gif\": the file name must end in .png or .svg"},
		{[]string{"--horizon", "-1s", "spike"}, "invalid --horizon: -1s, must be positive"},
		{[]string{"--horizon", "100h", "spike"}, "spike: sim: horizon is 100h0m0s, must be at most 24h0m0s"},
	} {
		code, stdout, stderr := heed(t, "", append([]string{"sim"}, tt.args...)...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, tt.want) {
			t.Errorf("heed sim %v: exit code %d, stderr %q; want 2 and %q", tt.args, code, stderr, tt.want)
		}
	}
}

func TestSimProgressOnlyOnTerminal(t *testing.T) {
	_, _, stderr := heed(t, "", "sim", "--horizon", "10s", "spike")
	if stderr != "" {
		t.Errorf("progress written to a buffer: %q", stderr)
	}
}

// The example file in the help is a valid scenario.
func TestSimHelpExampleParses(t *testing.T) {
	simFoot := helpText("sim")
	start := strings.Index(simFoot, "  name: my-outage")
	end := strings.Index(simFoot, "\nCSV (--csv)")
	if start < 0 || end < start {
		t.Fatal("no example file in the help")
	}
	var b strings.Builder
	for _, line := range strings.Split(simFoot[start:end], "\n") {
		b.WriteString(strings.TrimPrefix(line, "  ") + "\n")
	}
	s, err := sim.ParseScenario("my-outage.yaml", []byte(b.String()))
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if s.Name != "my-outage" || len(s.Faults) != 3 || len(s.Chains) != 1 || s.Chains[0].Layers[0].Budget.Off() || s.Chains[0].Layers[0].AttemptShare != 0.5 {
		t.Errorf("parsed %+v", s)
	}
}

func TestPickChains(t *testing.T) {
	all := []sim.Chain{{Name: "naive"}, {}, {Name: "heed"}}
	got, err := pickChains(all, "heed, policy 2")
	if err != nil || len(got) != 2 || got[0].Name != "heed" || got[1].Name != "policy 2" {
		t.Fatalf("pickChains = %+v, %v", got, err)
	}
	_, err = pickChains(all, "nope")
	if err == nil || !strings.Contains(err.Error(), `no policy "nope" in the scenario (it has "naive", "policy 2", "heed")`) {
		t.Errorf("unknown name: %v", err)
	}
}

func TestLoadScenario(t *testing.T) {
	if s, err := loadScenario("spike"); err != nil || s.Name != "spike" {
		t.Errorf("loadScenario(spike) = %v, %v", s.Name, err)
	}
	if _, err := loadScenario("nope"); err == nil || !strings.Contains(err.Error(), `no built-in scenario or file "nope" (built-in: `) {
		t.Errorf("loadScenario(nope): %v", err)
	}
	path := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(path, []byte("horizon: 10s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := loadScenario(path); err == nil || err.Error() != path+": load.rate: missing; say how many user requests arrive per second" {
		t.Errorf("loadScenario(bad): %v", err)
	}
}
