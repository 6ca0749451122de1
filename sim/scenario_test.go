package sim

import (
	"strings"
	"testing"
	"time"

	"github.com/heed-go/heed/budget"
)

func TestParseScenarioErrors(t *testing.T) {
	for _, tt := range []struct {
		yaml string
		want string
	}{
		{"", "the file is empty"},
		{"horizon: 10s\n", "load.rate: missing"},
		{"load: {rate: 1}\n", "horizon: missing"},
		{"horizon: 10s\nload: {rate: 1, arrival: bursty}\n", `load.arrival: "bursty" is not poisson or constant`},
		{"horizon: 10s\nload: {rate: 1}\nfaults: [{kind: fire, end: 1s}]\n", `faults[0].kind: "fire" is not outage`},
		{"horizon: 10s\nload: {rate: 1}\npolicies: [{layers: [{attempts: -1}]}]\n", "policies[0].layers[0].attempts: -1, must be at least 1"},
		{"horizon: 10s\nload: {rate: 1}\npolicies: [{layers: [{backoff: {jitter: lots}}]}]\n", `policies[0].layers[0].backoff.jitter: unknown jitter "lots" (want full`},
		{"horizon: 10s\nload: {rate: 1}\npolicies: [{layers: [{budget: {window: 1ms}}]}]\n", "policies[0].layers[0].budget.window is 1ms, must be at least 10ms"},
		{"horizon: 10s\nload: {rate: 1}\npolicies: [{layers: [{breaker: {probes: -2}}]}]\n", "policies[0].layers[0].breaker.probes is -2"},
		{"horizon: 10s\nload: {rate: 1}\npolicies: []\n", "policies is empty"},
		{"horizon: 10s\nload: {rate: x}\n", "line 2: cannot unmarshal"},
		{"horizon: 10s\nload: {rate: 1}\nservice: {workers: 3}\n", `unknown field "workers" in service (known: concurrency,`},
		{"horizon: 10s\nload: {rate: 1}\npolicies: [{layers: [{}], overload: {limit: -1}}]\n", "policies[0].overload Limit -1 is negative"},
		{"horizon: 10s\nload: {rate: 1}\npolicies: [{layers: [{}], overload: {queue_target: soon}}]\n", "policies[0].overload.queue_target"},
		{"horizon: 10s\nload: {rate: 1}\npolicies: [{layers: [{}], overload: {lifo: true}}]\n", `unknown field "lifo" in overload`},
		// One duration syntax in every policy document: Go durations.
		{"horizon: 10\nload: {rate: 1}\n", `horizon: "10" is not a duration: write a Go duration, such as 250ms or 2s`},
		{"horizon: 1d\nload: {rate: 1}\n", `horizon: "1d" is not a duration`},
		{"horizon: 10s\nload: {rate: 1}\npolicies: [{layers: [{max_pushback: 2}]}]\n", `policies[0].layers[0].max_pushback: "2" is not a duration`},
		{"horizon: 10s\nload: {rate: 1}\npolicies: [{layers: [{attemps: 3}]}]\n",
			`unknown field "attemps" in a layer (known: name, attempts, backoff, attempt_timeout, time_budget, min_attempt_time, max_pushback, owner,`},
	} {
		_, err := ParseScenario("x.yaml", []byte(tt.yaml))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: error %v, want %q", tt.yaml, err, tt.want)
		}
	}
	if _, err := ParseScenario("x.json", []byte(`{"horizon": "10s", "load": {"rate": 1}} {}`)); err == nil || !strings.Contains(err.Error(), "more than one JSON value") {
		t.Errorf("two JSON values: %v", err)
	}
}

// A policy's overload puts the service behind overload control in its
// runs: "{}" is overload.Config's defaults; fields take its names in
// snake_case.
func TestParseScenarioOverload(t *testing.T) {
	s, err := ParseScenario("x.yaml", []byte("horizon: 10s\nload: {rate: 1}\npolicies:\n"+
		"  - {name: plain, layers: [{}]}\n"+
		"  - {name: defaults, layers: [{}], overload: {}}\n"+
		"  - {name: fixed, layers: [{}], overload: {limit: 100, max_queue: -1, queue_target: 2ms, lifo_off: true}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	c := s.Chains
	if c[0].Overload != nil || c[1].Overload == nil || c[1].Overload.Limit != 0 {
		t.Errorf("overload: %+v, %+v; want none, then the defaults", c[0].Overload, c[1].Overload)
	}
	if o := c[2].Overload; o == nil || o.Limit != 100 || o.MaxQueue != -1 || o.QueueTarget != 2*time.Millisecond || !o.LIFOOff {
		t.Errorf("fixed: %+v", o)
	}
	if _, err := Run(s, Options{}); err != nil {
		t.Fatal(err)
	}
}

const outageYAML = `# Two layers, a 10 s outage.
name: small-outage
horizon: 30s
seed: 7
load: {rate: 50, deadline: 2s}
service: {concurrency: 10, service_time: 10ms, queue_limit: 100}
faults:
  - {kind: outage, start: 10s, end: 20s}
policies:
  - name: every layer
    layers:
      - {attempts: 3, backoff: {kind: immediate}}
      - {attempts: 3, backoff: {kind: immediate}}
  - name: owner + budget
    propagate_deadline: true
    layers:
      - attempts: 3
        backoff: {base: 10ms, cap: 100ms, jitter: full}
        attempt_timeout: 500ms
        owner: true
        budget: {ratio: 0.1, window: 10s, burst: 8, min_per_second: 0.5, earn: 2, ceiling: 0.5}
        breaker: {failure_ratio: 0.5, min_calls: 20, cooldown: 2s}
      - {attempts: 3}
`

const outageJSON = `{"horizon": "30s", "load": {"rate": 50, "arrival": "constant"},
 "faults": [{"kind": "errors", "start": "5s", "end": "10s", "rate": 0.5}],
 "policies": [{"name": "owner", "layers": [{"attempts": 3, "owner": true, "time_budget": "3s"}, {}]}]}`

func TestParseScenario(t *testing.T) {
	s, err := ParseScenario("outage.yaml", []byte(outageYAML))
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "small-outage" || s.Horizon != 30*time.Second || s.Seed != 7 || s.Load.Deadline != 2*time.Second ||
		s.Service.QueueLimit != 100 || len(s.Faults) != 1 || s.Faults[0].Kind != Outage || len(s.Chains) != 2 {
		t.Fatalf("parsed %+v", s)
	}
	owner := s.Chains[1]
	if want := (budget.Config{Ratio: 0.1, Window: 10 * time.Second, Burst: 8, MinPerSecond: 0.5, Earn: 2, Ceiling: 0.5}); owner.Layers[0].Budget != want {
		t.Errorf("budget %+v, want %+v", owner.Layers[0].Budget, want)
	}
	if !owner.PropagateDeadline || len(owner.Layers) != 2 || !owner.Layers[0].OwnershipOff || owner.Layers[1].OwnershipOff || owner.Layers[0].Budget.Off() ||
		owner.Layers[0].Breaker == nil || owner.Layers[0].Breaker.Cooldown != 2*time.Second ||
		owner.Layers[0].Retry.AttemptTimeout != 500*time.Millisecond || owner.Layers[0].Retry.Backoff.Cap != 100*time.Millisecond {
		t.Errorf("owner + budget: %+v", owner)
	}
	j, err := ParseScenario("dir/outage-json.JSON", []byte(outageJSON))
	if err != nil {
		t.Fatal(err)
	}
	if j.Name != "outage-json" || j.Load.Arrival != Constant || j.Faults[0].Kind != ErrorRate || j.Chains[0].Layers[0].Retry.TimeBudget != 3*time.Second {
		t.Errorf("parsed %+v", j)
	}
}

// Whatever a file holds, a scenario ParseScenario accepts is valid.
func FuzzParseScenario(f *testing.F) {
	f.Add([]byte(outageYAML), false)
	f.Add([]byte(outageJSON), true)
	f.Add([]byte("horizon: 10s\nload: {rate: 10}\npolicies:\n  - layers:\n      - attemps: 3\n"), false)
	f.Add([]byte("horizon: 10s\nload: {rate: 10}\nfaults: [{kind: capacity, start: 2s, end: 4s, factor: 1.5}]\npolicies: [{layers: [{attempts: 3}]}]\n"), false)
	f.Fuzz(func(t *testing.T, data []byte, isJSON bool) {
		name := "f.yaml"
		if isJSON {
			name = "f.json"
		}
		s, err := ParseScenario(name, data)
		if err == nil {
			if err := s.Validate(); err != nil {
				t.Errorf("ParseScenario accepted an invalid scenario: %v", err)
			}
		}
	})
}

func TestFaultString(t *testing.T) {
	for f, want := range map[Fault]string{
		{Kind: Outage, Start: 20 * time.Second, End: 40 * time.Second}:              "outage 20s–40s",
		{Kind: CapacityDrop, Start: time.Minute, End: 2 * time.Minute, Factor: 0.5}: "capacity down to 50% 1m0s–2m0s",
		{Kind: ErrorRate, Start: 5 * time.Second, End: 10 * time.Second, Rate: 0.1}: "10% errors 5s–10s",
		{Kind: Spike, Start: time.Minute, End: 70 * time.Second, Factor: 2}:         "load ×2 1m0s–1m10s",
		{Kind: BlackHole, Start: time.Second, End: 2 * time.Second}:                 "black hole 1s–2s",
		{Kind: BlackHole, Start: time.Second, End: 2 * time.Second, Depth: 2}:       "black hole 2 layers up 1s–2s",
	} {
		if got := f.String(); got != want {
			t.Errorf("%#v: %q, want %q", f, got, want)
		}
	}
}

// A scenario file gives a layer an attempt share, and puts a black hole at
// any depth.
func TestScenarioShareAndBlackHole(t *testing.T) {
	s, err := ParseScenario("bh.yaml", []byte(`horizon: 30s
load: {rate: 100, deadline: 2s}
faults: [{kind: black_hole, start: 5s, end: 25s, depth: 1}]
policies: [{layers: [{attempts: 3, attempt_share: 0.5, owner: true}, {attempts: 3}]}]
`))
	if err != nil {
		t.Fatal(err)
	}
	if f := s.Faults[0]; f.Kind != BlackHole || f.Depth != 1 {
		t.Errorf("fault %+v, want a black hole at depth 1", f)
	}
	if l := s.Chains[0].Layers; l[0].AttemptShare != 0.5 || l[1].AttemptShare != 0 {
		t.Errorf("attempt shares %v and %v, want 0.5 and none", l[0].AttemptShare, l[1].AttemptShare)
	}
	_, err = ParseScenario("bad.yaml", []byte("horizon: 10s\nload: {rate: 1}\nfaults: [{kind: outage, end: 5s, depth: 1}]\npolicies: [{layers: [{}]}]\n"))
	if err == nil || !strings.Contains(err.Error(), "faults[0].depth is set, but a outage fault has no depth") {
		t.Errorf("depth on an outage: %v", err)
	}
}

// A field a layer once had under another name is an error that names the
// new one, in YAML and in JSON.
func TestScenarioRenamedFields(t *testing.T) {
	for _, tc := range []struct{ file, data, want string }{
		{"a.yaml", "horizon: 10s\nload: {rate: 10}\npolicies: [{layers: [{attempts: 3, max_duration: 2s}]}]\n",
			`a.yaml: line 3: field "max_duration" of a layer is now called "time_budget"`},
		{"a.yaml", "horizon: 10s\nload: {rate: 10}\npolicies: [{layers: [{timeout: 2s}]}]\n",
			`a.yaml: line 3: field "timeout" of a layer is now called "attempt_timeout"`},
		{"a.json", `{"horizon": "10s", "load": {"rate": 10},` + "\n" + `"policies": [{"layers": [{"max_duration": "2s"}]}]}`,
			`a.json: line 2: field "max_duration" of a layer is now called "time_budget"`},
	} {
		_, err := ParseScenario(tc.file, []byte(tc.data))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s %q: %v, want %s...", tc.file, tc.data, err, tc.want)
		}
	}
}
