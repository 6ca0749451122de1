package cli

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var updatePlanGolden = flag.Bool("update-plan-golden", false, "rewrite testdata/plan/*.golden")

// planDeadlineExample is the example from the help text.
var planDeadlineExample = []string{"plan", "deadline", "--deadline", "2s", "--reserve", "100ms", "--rate", "500",
	"--step", "name=validate,p99=5ms,budget=20ms",
	"--step", "name=stock,p99=120ms,budget=300ms,attempts=2,attempt_timeout=30s",
	"--step", "name=payment,p99=400ms,budget=900ms"}

func testPlan(name string) string { return filepath.Join("testdata", "plan", name) }

// The same plan in YAML and JSON prints the same table, kept in a golden
// file; a plan with problems prints them and exits 1.
func TestPlanDeadlineGolden(t *testing.T) {
	tests := []struct {
		golden string
		args   []string
		code   int
	}{
		{"checkout.golden", []string{"plan", "deadline", testPlan("checkout.yaml")}, 0},
		{"checkout.golden", []string{"plan", "deadline", testPlan("checkout.json")}, 0},
		{"problems.golden", []string{"plan", "deadline", "--rate", "200", testPlan("problems.yaml")}, 1},
		// Flags after FILE work too.
		{"problems.golden", []string{"plan", "deadline", testPlan("problems.yaml"), "--rate", "200"}, 1},
		{"example.golden", planDeadlineExample, 1},
		// The JSON form, as the help documents it: every field, and none
		// that is not asked for. Of stock's 30 s timeout at 500 requests/s,
		// 15000 requests wait under it, and all but the last 300 ms of
		// them are for callers who have gone (caller_gone 0.99).
		{"example-json.golden", append(slices.Clone(planDeadlineExample), "--json"), 1},
	}
	for _, tt := range tests {
		code, stdout, stderr := heed(t, "", tt.args...)
		if code != tt.code || stderr != "" {
			t.Errorf("%v: exit code %d, want %d; stderr %q", tt.args, code, tt.code, stderr)
		}
		checkGolden(t, tt.golden, tt.args, stdout)
	}
}

// checkGolden compares the output of heed args with the golden file
// testdata/plan/name, or rewrites the file with -update-plan-golden.
func checkGolden(t *testing.T, name string, args []string, stdout string) {
	t.Helper()
	path := testPlan(name)
	if *updatePlanGolden {
		if err := os.WriteFile(path, []byte(stdout), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if stdout != string(want) {
		t.Errorf("%v: output differs from %s:\n%s", args, path, stdout)
	}
}

func TestPlanDeadlineStdin(t *testing.T) {
	data, err := os.ReadFile(testPlan("checkout.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(testPlan("checkout.golden"))
	code, stdout, stderr := heed(t, string(data), "plan", "deadline", "-")
	if code != 0 || stderr != "" || stdout != string(want) {
		t.Errorf("exit code %d, stderr %q, stdout:\n%s", code, stderr, stdout)
	}
}

// One plan per rule, each breaking only that rule.
func TestPlanDeadlineRules(t *testing.T) {
	base := []string{"plan", "deadline", "--json", "--deadline", "1s", "--reserve", "100ms"}
	tests := []struct {
		name  string
		steps []string
		want  []string
	}{
		{"ok", []string{"name=a,p99=100ms,budget=300ms", "name=b,p99=50ms,budget=200ms,attempts=2,attempt_timeout=150ms"}, nil},
		{"over the deadline", []string{"name=a,p99=100ms,budget=600ms", "name=b,p99=100ms,budget=400ms"}, []string{"over-deadline"}},
		{"below p99", []string{"name=a,p99=100ms,budget=90ms"}, []string{"below-p99"}},
		{"far above p99", []string{"name=a,p99=10ms,budget=101ms"}, []string{"far-above-p99"}},
		{"cannot retry", []string{"name=a,p99=100ms,budget=250ms,attempts=2,jitter=none,base=100ms"}, []string{"retry-does-not-fit"}},
		{"retry fits exactly", []string{"name=a,p99=100ms,budget=300ms,attempts=2,jitter=none,base=100ms"}, nil},
		{"timeout above the budget", []string{"name=a,p99=100ms,budget=300ms,attempt_timeout=30s"}, []string{"timeout-above-upstream"}},
	}
	for _, tt := range tests {
		args := slices.Clone(base)
		for _, s := range tt.steps {
			args = append(args, "--step", s)
		}
		code, stdout, stderr := heed(t, "", args...)
		wantCode := 0
		if len(tt.want) > 0 {
			wantCode = 1
		}
		if code != wantCode || stderr != "" {
			t.Errorf("%s: exit code %d, want %d; stderr %q", tt.name, code, wantCode, stderr)
		}
		var got struct { // the whole form is pinned by example-json.golden
			OK       bool `json:"ok"`
			Problems []struct {
				Code string `json:"code"`
			} `json:"problems"`
		}
		if err := json.Unmarshal([]byte(stdout), &got); err != nil {
			t.Fatalf("%s: decode: %v\n%s", tt.name, err, stdout)
		}
		var codes []string
		for _, p := range got.Problems {
			codes = append(codes, p.Code)
		}
		if !slices.Equal(codes, tt.want) || got.OK != (len(tt.want) == 0) {
			t.Errorf("%s: problems %v (ok %v), want %v", tt.name, codes, got.OK, tt.want)
		}
	}
}

// The JSON form with --rate is pinned by example-json.golden (see
// TestPlanDeadlineGolden).
func TestPlanDeadlineJSONWithoutRate(t *testing.T) {
	// Without --rate there is no rate and no waiting.
	_, stdout, _ := heed(t, "", "plan", "deadline", "--json", testPlan("checkout.json"))
	if strings.Contains(stdout, "waiting") || strings.Contains(stdout, "rate") || !strings.Contains(stdout, `"ok": true`) {
		t.Errorf("JSON without --rate:\n%s", stdout)
	}
}

func TestPlanDeadlineOverrides(t *testing.T) {
	// A shorter deadline than the file's puts the plan over it.
	code, stdout, _ := heed(t, "", "plan", "deadline", "--deadline", "1s", testPlan("checkout.yaml"))
	if code != 1 || !strings.Contains(stdout, "over-deadline: step budgets add up to 1.57s, above the 900ms the steps have (deadline 1s minus reserve 100ms)") {
		t.Errorf("exit code %d:\n%s", code, stdout)
	}
	code, stdout, _ = heed(t, "", "plan", "deadline", "--reserve", "0s", testPlan("checkout.yaml"))
	if code != 0 || !strings.HasPrefix(stdout, "plan: deadline 2s for 5 steps; their budgets add up to 1.57s\n") {
		t.Errorf("exit code %d:\n%s", code, stdout)
	}
}

func TestPlanDeadlineBadInput(t *testing.T) {
	step := "name=a,p99=1ms,budget=10ms"
	tests := []struct {
		name   string
		stdin  string
		args   []string
		stderr string
	}{
		{"no plan", "", nil, "no plan: give --deadline and one --step per step, or a plan FILE"},
		{"no deadline", "", []string{"--step", step}, "missing --deadline"},
		{"negative deadline", "", []string{"--deadline", "-1s", "--step", step}, "invalid --deadline: -1s, must be positive"},
		{"negative reserve", "", []string{"--deadline", "1s", "--reserve", "-1ms", "--step", step}, "invalid --reserve: -1ms, must not be negative"},
		{"reserve above the deadline", "", []string{"--deadline", "1s", "--reserve", "2s", "--step", step}, "invalid --reserve: 2s, must be below the deadline 1s"},
		{"negative budget", "", []string{"--deadline", "1s", "--step", "name=a,p99=1ms,budget=-10ms"}, "--step 1 (a): budget is -10ms, must not be negative"},
		{"negative p99", "", []string{"--deadline", "1s", "--step", "name=a,p99=-1ms,budget=10ms"}, "--step 1 (a): p99 is -1ms, must not be negative"},
		{"negative timeout", "", []string{"--deadline", "1s", "--step", "name=a,p99=1ms,budget=10ms,attempt_timeout=-1s"}, "--step 1 (a): attempt_timeout is -1s, must not be negative"},
		{"missing budget", "", []string{"--deadline", "1s", "--step", "name=a,p99=1ms"}, "--step 1 (a): budget is missing, must be positive"},
		{"no name", "", []string{"--deadline", "1s", "--step", "p99=1ms,budget=10ms"}, "missing name=NAME: every step needs a name"},
		{"empty name", "", []string{"--deadline", "1s", "--step", "name=,p99=1ms,budget=10ms"}, "--step 1: name is empty, every step needs a name"},
		{"duplicate name", "", []string{"--deadline", "1s", "--step", step, "--step", step}, "--step 2 (a): name is already used by step 1"},
		{"unknown key", "", []string{"--deadline", "1s", "--step", step + ",retries=2"}, `unknown key "retries"`},
		{"key twice", "", []string{"--deadline", "1s", "--step", step + ",p99=2ms"}, "p99 given twice"},
		{"not key=value", "", []string{"--deadline", "1s", "--step", "a"}, `"a" is not KEY=VALUE`},
		{"bad duration", "", []string{"--deadline", "1s", "--step", "name=a,p99=fast,budget=1s"}, `p99: "fast" is not a duration: write seconds (5, 0.5) or a number with a unit: 300ms, 30s, 5m, 2h, 7d`},
		{"bad deadline", "", []string{"--deadline", "1 s", "--step", "name=a,p99=1,budget=1s"}, `invalid value "1 s" for flag --deadline: "1 s" is not a duration: write seconds`},
		{"zero attempts", "", []string{"--deadline", "1s", "--step", step + ",attempts=0"}, "attempts is 0, must be from 1 to 1000"},
		{"bad attempts", "", []string{"--deadline", "1s", "--step", step + ",attempts=two"}, `attempts "two" is not a whole number`},
		{"bad backoff", "", []string{"--deadline", "1s", "--step", step + ",backoff=fast"}, `unknown kind "fast"`},
		{"bad jitter", "", []string{"--deadline", "1s", "--step", step + ",jitter=some"}, `unknown jitter "some"`},
		{"bad multiplier", "", []string{"--deadline", "1s", "--step", step + ",multiplier=0.5"}, "multiplier is 0.5, must be a number of at least 1"},
		{"cap below base", "", []string{"--deadline", "1s", "--step", step + ",base=1s,cap=10ms"}, "--step 1 (a): cap is 10ms, below base 1s"},
		{"bad rate", "", []string{"--deadline", "1s", "--rate", "-1", "--step", step}, "invalid --rate"},
		{"step and file", "", []string{"--step", step, testPlan("checkout.yaml")}, "--step cannot be combined with a plan FILE"},
		{"two files", "", []string{"a.yaml", "b.yaml"}, `unexpected argument "b.yaml"`},
		{"missing file", "", []string{testPlan("nope.yaml")}, "no such file"},

		{"unknown field in YAML", "", []string{testPlan("unknown-field.yaml")}, `unknown-field.yaml: line 5: unknown field "budgt"`},
		{"unknown field in JSON", "", []string{testPlan("unknown-field.json")}, `unknown-field.json: unknown field "retries"`},
		{"negative budget in a file", "", []string{testPlan("negative.yaml")}, "negative.yaml: step 1 (stock): budget is -300ms, must not be negative"},
		{"no name in a file", "", []string{testPlan("no-name.yaml")}, "no-name.yaml: step 2: name is empty, every step needs a name"},
		{"duplicate name in a file", "", []string{testPlan("duplicate.yaml")}, "duplicate.yaml: step 2 (stock): name is already used by step 1"},
		{"number for a duration in JSON", "", []string{testPlan("bad-duration.json")}, `bad-duration.json: line 4: steps.p99: want a string such as "120ms", not a number`},
		{"empty stdin", "\n", []string{"-"}, "stdin: empty plan"},
		{"no steps", "deadline: 2s\n", []string{"-"}, "stdin: steps is empty, a plan needs at least one step"},
		{"no deadline in a file", "steps: [{name: a, p99: 1ms, budget: 2ms}]\n", []string{"-"}, "stdin: deadline is 0s, must be positive"},
		{"YAML syntax", "deadline: 2s\nsteps: [\n", []string{"-"}, "stdin: line"},
		{"JSON syntax", "{\"deadline\": \"2s\",\n \"steps\": [}", []string{"-"}, "stdin: line 2: invalid character '}'"},
		{"JSON trailing data", `{"deadline": "2s"} {}`, []string{"-"}, "unexpected data after the plan object"},
		{"YAML wrong type", "deadline: 2s\nsteps: {name: a}\n", []string{"-"}, "stdin: line 2: want a list, not a mapping"},
		{"YAML attempts not a number", "deadline: 2s\nsteps:\n - name: a\n   attempts: two\n", []string{"-"}, "stdin: line 4: want a whole number, not a string `two`"},
		{"YAML negative reserve", "deadline: 2s\nreserve: -1s\nsteps: [{name: a, p99: 1ms, budget: 2ms}]\n", []string{"-"}, "stdin: reserve is -1s, must not be negative"},
		{"YAML zero attempts", "deadline: 2s\nsteps: [{name: a, p99: 1ms, budget: 2ms, attempts: 0}]\n", []string{"-"}, "stdin: step 1 (a): attempts is 0, must be from 1 to 1000"},
		{"YAML unknown backoff field", "deadline: 2s\nsteps: [{name: a, p99: 1ms, budget: 2ms, backoff: {base: 1ms, max: 2ms}}]\n", []string{"-"}, `unknown field "max"`},
	}
	for _, tt := range tests {
		code, stdout, stderr := heed(t, tt.stdin, append([]string{"plan", "deadline"}, tt.args...)...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, tt.stderr) ||
			!strings.HasPrefix(stderr, "heed plan deadline: ") || !strings.Contains(stderr, "Run 'heed plan deadline --help' for usage.") {
			t.Errorf("%s: exit code %d, stdout %q, stderr %q; want 2 and %q", tt.name, code, stdout, stderr, tt.stderr)
		}
	}
}

func TestPlanDeadlineHelp(t *testing.T) {
	for _, args := range [][]string{{"plan", "deadline", "--help"}, {"plan", "deadline", "-h"}} {
		code, stdout, stderr := heed(t, "", args...)
		if code != 0 || stderr != "" || !strings.HasPrefix(stdout, "Usage: heed plan deadline [FLAGS] [FILE]") {
			t.Errorf("%v: exit code %d, stderr %q", args, code, stderr)
		}
		for _, want := range []string{"--deadline DUR", "--reserve DUR", "--step SPEC", "--rate RPS", "--json",
			"over-deadline", "below-p99", "far-above-p99", "retry-does-not-fit", "timeout-above-upstream", "Exit codes:"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("help does not mention %q", want)
			}
		}
	}
}

// heed plan without "deadline" is unchanged; "deadline" elsewhere than
// right after "plan" gets a pointed error.
func TestPlanDeadlineDispatch(t *testing.T) {
	code, stdout, _ := heed(t, "", "plan")
	if code != 0 || !strings.HasPrefix(stdout, "policy: 3 attempts") {
		t.Errorf("heed plan: exit code %d:\n%s", code, stdout)
	}
	code, _, stderr := heed(t, "", "plan", "--json", "deadline")
	if code != 2 || !strings.Contains(stderr, `"deadline" must come right after "plan"`) {
		t.Errorf("heed plan --json deadline: exit code %d, stderr %q", code, stderr)
	}
	code, _, stderr = heed(t, "", "plan", "other")
	if code != 2 || !strings.Contains(stderr, `unexpected argument "other" (plan takes only flags)`) {
		t.Errorf("heed plan other: exit code %d, stderr %q", code, stderr)
	}
}

// Seed 004's figure: a step with a 10 s timeout under a 3 s deadline holds
// 10 s of requests when it hangs, and the callers of 7 s of them (70%)
// have gone.
func TestPlanDeadlineCallersGone(t *testing.T) {
	for _, tt := range []struct {
		step string
		want string
	}{
		{"name=search,p99=200ms,budget=3s,attempt_timeout=10s", "70%"},
		{"name=search,p99=200ms,budget=3s,attempt_timeout=3s", "0%"},
		{"name=search,p99=200ms,budget=3s,attempt_timeout=2s", "0%"},
		{"name=search,p99=200ms,budget=3s", "-"},
	} {
		_, out, _ := heed(t, "", "plan", "deadline", "--deadline", "3s", "--rate", "100", "--step", tt.step)
		var row []string
		for line := range strings.Lines(out) {
			if f := strings.Fields(line); len(f) > 0 && f[0] == "search" && strings.Contains(line, "(3s)") && !strings.Contains(line, "200ms") {
				row = f
			}
		}
		if len(row) < 3 || row[len(row)-3] != tt.want {
			t.Errorf("%s: waiting row %q, want CALLER GONE %s\n%s", tt.step, row, tt.want, out)
		}
	}
}
