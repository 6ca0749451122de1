package planfile

import (
	"strings"
	"testing"
	"time"

	"github.com/heed-go/heed/cmd/heed/internal/plan"
	"github.com/heed-go/heed/deadline"
)

const checkoutYAML = `# A checkout request: 2s at the edge, 100ms kept for the response.
deadline: 2s
reserve: 100ms
steps:
  - name: validate
    p99: 5ms
    budget: 20ms
  - name: stock
    p99: 120ms
    budget: 400ms
    attempts: 2
    attempt_timeout: 300ms
  - name: save
    p99: 40ms
    budget: 150ms
    attempts: 2
    backoff: {kind: constant, base: 10ms}
`

const checkoutJSON = `{
  "deadline": "2s", "reserve": "100ms",
  "steps": [
    {"name": "validate", "p99": "5ms", "budget": "20ms"},
    {"name": "stock", "p99": "120ms", "budget": "400ms", "attempts": 2, "attempt_timeout": "300ms"},
    {"name": "save", "p99": "40ms", "budget": "150ms", "attempts": 2, "backoff": {"kind": "constant", "base": "10ms"}}
  ]
}`

// The same plan in YAML and JSON decodes to the same deadline.Plan.
func TestDecodeYAMLAndJSON(t *testing.T) {
	ms := time.Millisecond
	want := deadline.Plan{Deadline: 2 * time.Second, Reserve: 100 * ms, Steps: []deadline.PlanStep{
		{Name: "validate", P99: 5 * ms, Budget: 20 * ms, Attempts: 1},
		{Name: "stock", P99: 120 * ms, Budget: 400 * ms, Attempts: 2, AttemptTimeout: 300 * ms},
		{Name: "save", P99: 40 * ms, Budget: 150 * ms, Attempts: 2},
	}}
	y, err := Decode("checkout.yaml", []byte(checkoutYAML))
	if err != nil {
		t.Fatal(err)
	}
	j, err := Decode("checkout.json", []byte(checkoutJSON))
	if err != nil {
		t.Fatal(err)
	}
	// From stdin ("-"), JSON is told by its first byte.
	j2, err := Decode("-", []byte(checkoutJSON))
	if err != nil {
		t.Fatal(err)
	}
	for _, got := range []deadline.Plan{y, j, j2} {
		if got.Deadline != want.Deadline || got.Reserve != want.Reserve || len(got.Steps) != 3 {
			t.Fatalf("decoded %+v", got)
		}
		for i, st := range got.Steps {
			w := want.Steps[i]
			if st.Name != w.Name || st.P99 != w.P99 || st.Budget != w.Budget || st.Attempts != w.Attempts || st.AttemptTimeout != w.AttemptTimeout {
				t.Errorf("step %d: %+v, want %+v", i, st, w)
			}
		}
		if b := got.Steps[2].Backoff; b.Kind.String() != "constant" || b.Base != 10*time.Millisecond {
			t.Errorf("save's backoff: %+v", b)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, tt := range []struct {
		file, data, want string
	}{
		{"a.yaml", "", "empty plan"},
		{"a.yaml", "deadline: 2s\nsteps:\n  - name: stock\n    p99: 120ms\n    budgt: 300ms\n", `line 5: unknown field "budgt"`},
		{"a.json", `{"deadline": "2s", "retries": 2}`, `unknown field "retries"`},
		{"a.json", "{\n \"steps\": [\n {\"name\": \"s\", \"p99\": 120}]}", `line 3: steps.p99: want a string such as "120ms", not a number`},
		{"a.json", `{"deadline": "2s"} {}`, "unexpected data after the plan object"},
		{"a.json", "{\"deadline\": \"2s\",\n \"steps\": [}", "line 2: invalid character '}'"},
		{"a.yaml", "deadline: 2s\nsteps: {name: a}\n", "line 2: want a list, not a mapping"},
		{"a.yaml", "deadline: 2s\nsteps:\n - name: a\n   attempts: two\n", "line 4: want a whole number, not a string `two`"},
		{"a.yaml", "deadline: 2s\nsteps: [{name: a, attempts: 0}]\n", "step 1 (a): attempts is 0, must be from 1 to 1000"},
		// One duration syntax in every policy document: Go durations.
		{"a.yaml", "deadline: 2\nsteps: [{name: a}]\n", `deadline: "2" is not a duration: write a Go duration, such as 250ms or 2s`},
		{"a.yaml", "deadline: 2s\nsteps: [{name: a, p99: 1ms, budget: 1s, attempt_timeout: 0.5}]\n", `step 1 (a): attempt_timeout: "0.5" is not a duration`},
		{"a.yaml", "deadline: 2s\nsteps: [{name: a, p99: 1ms, budget: 1s, time_budget: 1s}]\n", `step 1 (a): time_budget: not a field of a step`},
		{"a.yaml", "deadline: fast\n", `deadline: "fast" is not a duration`},
		{"a.yaml", "steps: [{name: a, backoff: {base: -1ms}}]\n", "step 1 (a): base is -1ms, must be positive"},
		{"a.yaml", "steps: [{name: a, backoff: {kind: fast}}]\n", `step 1 (a): backoff.kind: unknown kind "fast"`},
		{"a.yaml", "steps: [{name: a, backoff: {multiplier: 0.5}}]\n", "multiplier is 0.5, must be a number of at least 1"},
		{"a.yaml", strings.Repeat("#", MaxSize+1), "larger than"},
		{"a.yaml", "steps:\n" + strings.Repeat("  - {name: a}\n", MaxSteps+1), "101 steps, at most 100"},
	} {
		_, err := Decode(tt.file, []byte(tt.data))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Decode(%s, %.40q): %v, want %q", tt.file, tt.data, err, tt.want)
		}
	}
}

func TestReadNamesTheFile(t *testing.T) {
	_, err := Read("-", strings.NewReader("\n"))
	if err == nil || err.Error() != "stdin: empty plan (want deadline, reserve and steps)" {
		t.Errorf("Read(-): %v", err)
	}
	if _, err := Read("testdata-that-does-not-exist.yaml", nil); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("Read(missing): %v", err)
	}
}

func TestParseStepErrors(t *testing.T) {
	for spec, want := range map[string]string{
		"p99=1ms":                "missing name=NAME",
		"name=a,retries=2":       `unknown key "retries"`,
		"name=a,p99=1ms,p99=2ms": "p99 given twice",
		"a":                      `"a" is not KEY=VALUE`,
		"name=a,attempts=two":    `attempts "two" is not a whole number`,
		"name=a,multiplier=x":    `multiplier "x" is not a number`,
		"name=a,jitter=some":     `unknown jitter "some"`,
		"name=a,attempts=1001":   "attempts is 1001, must be from 1 to 1000",
		"name=a,p99=fast":        `p99: "fast" is not a duration`,
	} {
		if _, err := ParseStep(spec); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseStep(%q): %v, want %q", spec, err, want)
		}
	}
}

// Whatever a --step spec holds, parsing it and checking the plan never
// panics, and every step accepted stays in range.
func FuzzParseStep(f *testing.F) {
	for _, s := range []string{"name=a,p99=1ms,budget=10ms", "name=stock,p99=120ms,budget=300ms,attempts=2,attempt_timeout=30s",
		"name=s,p99=1ms,budget=1s,backoff=linear,base=1ms,cap=2ms,multiplier=3,jitter=decorrelated", "a", ",,=,", "name=a,attempts=1000"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		st, err := ParseStep(spec)
		if err != nil {
			return
		}
		if st.Attempts < 1 || st.Attempts > maxAttempts {
			t.Fatalf("attempts %d accepted", st.Attempts)
		}
		_, _ = plan.Check(deadline.Plan{Deadline: time.Second, Steps: []deadline.PlanStep{st}})
	})
}

// Whatever a plan file holds, decoding and checking it never panics, and a
// plan accepted has at most MaxSteps steps.
func FuzzDecode(f *testing.F) {
	f.Add("checkout.yaml", []byte(checkoutYAML))
	f.Add("checkout.json", []byte(checkoutJSON))
	f.Add("-", []byte("deadline: 2s\nsteps: [{name: a, p99: 1ms, budget: 2ms, attempts: 1000}]"))
	f.Add("x.json", []byte(`{"steps": [{"name": "s", "p99": 120}]}`))
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		p, err := Decode(name, data)
		if err != nil {
			return
		}
		if len(p.Steps) > MaxSteps {
			t.Fatalf("%d steps accepted", len(p.Steps))
		}
		_, _ = plan.Check(p)
	})
}

// A field a step once had under another name is an error that names the
// new one, in a file and in a --step spec.
func TestRenamedFields(t *testing.T) {
	const want = `field "timeout" of a step is now called "attempt_timeout"`
	for _, tc := range []struct{ file, data string }{
		{"p.yaml", "deadline: 2s\nsteps:\n  - {name: a, p99: 1ms, budget: 10ms, timeout: 5ms}\n"},
		{"p.json", `{"deadline": "2s", "steps": [{"name": "a", "p99": "1ms", "budget": "10ms", "timeout": "5ms"}]}`},
	} {
		if _, err := Decode(tc.file, []byte(tc.data)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %s", tc.file, err, want)
		}
	}
	if _, err := ParseStep("name=a,p99=1ms,budget=10ms,timeout=5ms"); err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("ParseStep: %v, want %s", err, want)
	}
}

func TestKey(t *testing.T) {
	for in, want := range map[string]string{"AttemptTimeout": "attempt_timeout", "P99": "p99", "Backoff.Base": "backoff.base", "Deadline": "deadline"} {
		if got := Key(in); got != want {
			t.Errorf("Key(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestMaxAttempts: a file or --step allows the attempts deadline.Plan does,
// no more.
func TestMaxAttempts(t *testing.T) {
	for n, ok := range map[int]bool{maxAttempts: true, maxAttempts + 1: false} {
		p := deadline.Plan{Deadline: time.Second, Steps: []deadline.PlanStep{{Name: "a", P99: time.Millisecond, Budget: time.Second, Attempts: n}}}
		if err := p.Validate(); (err == nil) != ok {
			t.Errorf("deadline.Plan.Validate with %d attempts: %v", n, err)
		}
	}
}
