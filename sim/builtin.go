package sim

import (
	"sort"
	"time"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/retry"
)

// builtins are the named scenarios; each function returns a fresh value.
var builtins = map[string]func() Scenario{
	"brownout": brownoutScenario,
	"layers":   layersScenario,
	"spike":    spikeScenario,
	"spike-naive": func() Scenario {
		return only(spikeScenario(), "spike-naive", 0, "The spike scenario with naive retries only: 3 immediate retries "+
			"after a 3s timeout keep the service overloaded long after the load doubled from 20s to 30s.")
	},
	"spike-heed": func() Scenario {
		return only(spikeScenario(), "spike-heed", 1, "The spike scenario with heed's defaults only: 3 attempts, "+
			"jittered exponential backoff and a 10% retry budget; the service recovers soon after the spike.")
	},
}

// Builtins returns the names of the built-in scenarios, sorted.
func Builtins() []string {
	names := make([]string, 0, len(builtins))
	for n := range builtins {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Builtin returns the built-in scenario called name, and whether there is
// one. Each call returns a fresh copy, safe to change. The scenarios:
//
//   - "layers": three layers in a chain, 100 user requests/s, and a 20 s
//     outage of the bottom service. Compares every layer retrying (4
//     attempts each: up to 64 at the bottom per user request), one retry
//     owner at the top (4), and the owner with a 10% retry budget (about
//     1.1).
//   - "spike": the congestive-collapse model of Marc Brooker's
//     simple_collapse_sim: 40 user requests/s to a service whose latency is
//     1 s plus 10 ms per request in flight, a 3 s timeout per attempt, and
//     a 10 s spike to twice the rate. Compares naive retries (3 immediate
//     retries), which leave the service collapsed long after the spike,
//     with heed's defaults (3 attempts with jittered exponential backoff
//     and a 10% retry budget), which recover.
//   - "spike-naive" and "spike-heed": "spike" with one of its two policies.
//   - "brownout": 300 user requests/s to a service of 400/s with an
//     unbounded queue loses half its capacity for 10 s. Naive retries
//     never let the queue drain; heed's defaults do, and with deadlines
//     propagated (so the service drops expired work) it recovers at once.
func Builtin(name string) (Scenario, bool) {
	f, ok := builtins[name]
	if !ok {
		return Scenario{}, false
	}
	return f(), true
}

func only(s Scenario, name string, policy int, description string) Scenario {
	s.Name, s.Description = name, description
	s.Policies = []Policy{s.Policies[policy]}
	return s
}

func layersScenario() Scenario {
	layer := func(owner bool, b *budget.Config) Layer {
		return Layer{
			Retry: retry.Policy{
				Attempts:       4,
				Backoff:        backoff.Schedule{Base: 50 * time.Millisecond, Cap: time.Second},
				AttemptTimeout: 2 * time.Second,
			},
			Owner:  owner,
			Budget: b,
		}
	}
	chain := func(top Layer) []Layer { return []Layer{top, layer(false, nil), layer(false, nil)} }
	return Scenario{
		Name: "layers",
		Description: "Three layers call each other down to a service that is down from 20s to 40s. " +
			"When every layer retries 3 times, one user request becomes up to 4×4×4 = 64 attempts at the bottom; " +
			"a single retry owner makes 4; a retry owner with a 10% retry budget about 1.1.",
		Horizon: time.Minute,
		Seed:    1,
		Load:    Load{Rate: 100, Deadline: 5 * time.Second},
		Service: Service{Concurrency: 50, ServiceTime: 20 * time.Millisecond, Exponential: true, QueueLimit: 500},
		Faults:  []Fault{{Kind: Outage, Start: 20 * time.Second, End: 40 * time.Second}},
		Policies: []Policy{
			{Name: "every layer retries", Layers: chain(layer(false, nil))},
			{Name: "one owner", Layers: chain(layer(true, nil))},
			{Name: "one owner + budget", Layers: chain(layer(true, &budget.Config{}))},
		},
	}
}

func spikeScenario() Scenario {
	return Scenario{
		Name: "spike",
		Description: "40 user requests/s to a service whose latency is 1s plus 10ms per request in flight, " +
			"with a 3s timeout per attempt; the load doubles from 20s to 30s. " +
			"Naive retries keep the service overloaded after the spike ends (a metastable failure); " +
			"heed's defaults let it recover.",
		Horizon: 2 * time.Minute,
		Seed:    1,
		Load:    Load{Rate: 40},
		Service: Service{ServiceTime: time.Second, LoadLatency: 10 * time.Millisecond},
		Faults:  []Fault{{Kind: Spike, Start: 20 * time.Second, End: 30 * time.Second, Factor: 2}},
		Policies: []Policy{
			{Name: "naive", Layers: []Layer{{Retry: retry.Policy{
				Attempts:       4,
				Backoff:        backoff.Schedule{Kind: backoff.Immediate},
				AttemptTimeout: 3 * time.Second,
			}}}},
			{Name: "heed", Layers: []Layer{{
				Retry:  retry.Policy{AttemptTimeout: 3 * time.Second},
				Budget: &budget.Config{},
			}}},
		},
	}
}

func brownoutScenario() Scenario {
	timeout := 500 * time.Millisecond
	return Scenario{
		Name: "brownout",
		Description: "300 user requests/s to 20 workers of 50ms each (400/s) behind an unbounded queue; " +
			"from 30s to 40s half the capacity is lost. Naive retries after a 500ms timeout fill the queue " +
			"with work nobody waits for, and it never drains; heed's defaults drain it; propagating deadlines " +
			"lets the service drop expired work and recover sooner.",
		Horizon: 2 * time.Minute,
		Seed:    1,
		Load:    Load{Rate: 300, Deadline: 2 * time.Second},
		Service: Service{Concurrency: 20, ServiceTime: 50 * time.Millisecond, Exponential: true},
		Faults:  []Fault{{Kind: CapacityDrop, Start: 30 * time.Second, End: 40 * time.Second, Factor: 0.5}},
		Policies: []Policy{
			{Name: "naive", Layers: []Layer{{Retry: retry.Policy{
				Attempts: 4, Backoff: backoff.Schedule{Kind: backoff.Immediate}, AttemptTimeout: timeout}}}},
			{Name: "heed", Layers: []Layer{{Retry: retry.Policy{AttemptTimeout: timeout}, Budget: &budget.Config{}}}},
			{Name: "heed + deadlines", PropagateDeadline: true,
				Layers: []Layer{{Retry: retry.Policy{AttemptTimeout: timeout}, Budget: &budget.Config{}}}},
		},
	}
}
