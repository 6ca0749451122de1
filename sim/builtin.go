package sim

import (
	"fmt"
	"sort"
	"time"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/overload"
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
			"jittered exponential backoff and the default retry budget; "+
			"the service recovers soon after the spike.")
	},
	"tail":    tailScenario,
	"outage":  func() Scenario { return chainScenario("outage", Fault{Kind: ErrorRate, Rate: 1}) },
	"partial": func() Scenario { return chainScenario("partial", Fault{Kind: ErrorRate, Rate: 0.5}) },
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
//     attempts each, ownership off: up to 64 at the bottom per user
//     request), one retry owner at the top (4), and the owner with the
//     default retry budget (about 1.1).
//   - "spike": the congestive-collapse model of Marc Brooker's
//     simple_collapse_sim: 40 user requests/s, each waiting up to 6 s, to a
//     service whose latency is 1 s plus 10 ms per request in flight, and a
//     10 s spike to twice the rate. Compares naive retries (3 immediate
//     retries after a 3 s timeout), which leave the service collapsed long
//     after the spike, with heed's defaults (a zero Layer), which recover,
//     and the naive retries again with the service behind overload
//     control (Chain.Overload): a fixed limit of 100, which recovers at
//     once, and the adaptive limit at its defaults, which recovers too
//     (it tells this latency, which serves more, from a queue).
//   - "spike-naive" and "spike-heed": "spike" with one of its two chains.
//   - "brownout": 300 user requests/s to a service of 400/s with an
//     unbounded queue loses half its capacity for 10 s. Naive retries
//     never let the queue drain; heed's defaults do, and propagating
//     deadlines (so the service drops expired work) recovers sooner.
//   - "outage" and "partial": the chain of the load-safety test, a user's
//     client and two services (A calls B calls C), 100 user requests/s
//     with a 2 s deadline; C answers every call with an error from 20 s
//     to 40 s ("outage"), or half of them at random ("partial"). Compares
//     heed's defaults with ownership off, no budget, and naive retries (4
//     attempts per hop, no budget, no ownership: 64×).
//   - "tail": 100 user requests/s, each waiting up to 5 s, to a service
//     where 5% of the answers take 2 s and the others 10 ms: heed's
//     defaults (a p99 of 2 s), hedged after 30 ms, and hedged after the
//     learnt p95 (retry.Hedge). It has no fault: heed sim --seeds 1 tail
//     prints its p99s.
func Builtin(name string) (Scenario, bool) {
	f, ok := builtins[name]
	if !ok {
		return Scenario{}, false
	}
	return f(), true
}

func only(s Scenario, name string, policy int, description string) Scenario {
	s.Name, s.Description = name, description
	s.Chains = []Chain{s.Chains[policy]}
	return s
}

func layersScenario() Scenario {
	layer := func(ignore bool, b budget.Config) Layer {
		return Layer{
			Retry: retry.Policy{
				Attempts:       4,
				Backoff:        backoff.Schedule{Base: 50 * time.Millisecond, Cap: time.Second},
				AttemptTimeout: 2 * time.Second,
			},
			OwnershipOff: ignore,
			Budget:       b,
		}
	}
	off := budget.Config{Ratio: -1}
	chain := func(top Layer, ignore bool) []Layer { return []Layer{top, layer(ignore, off), layer(ignore, off)} }
	return Scenario{
		Name: "layers",
		Description: "Three layers call each other down to a service that is down from 20s to 40s. " +
			"When every layer retries 3 times, one user request becomes up to 4×4×4 = 64 attempts at the bottom; " +
			"a single retry owner makes 4; a retry owner with the default retry budget about 1.1.",
		Horizon: time.Minute,
		Seed:    1,
		Load:    Load{Rate: 100, Deadline: 5 * time.Second},
		Service: Service{Concurrency: 50, ServiceTime: 20 * time.Millisecond, Exponential: true, QueueLimit: 500},
		Faults:  []Fault{{Kind: Outage, Start: 20 * time.Second, End: 40 * time.Second}},
		Chains: []Chain{
			{Name: "every layer retries", Layers: chain(layer(false, off), true)},
			{Name: "one owner", Layers: chain(layer(false, off), false)},
			{Name: "one owner + budget", Layers: chain(layer(false, budget.Config{}), false)},
		},
	}
}

func spikeScenario() Scenario {
	return Scenario{
		Name: "spike",
		Description: "40 user requests/s, each waiting up to 6s, to a service whose latency is 1s plus 10ms " +
			"per request in flight; the load doubles from 20s to 30s. " +
			"Naive retries (3 immediate retries after a 3s timeout) keep the service overloaded after the spike " +
			"ends (a metastable failure); heed's defaults let it recover, and so does the service itself behind " +
			"overload control, with a fixed limit of 100 or its adaptive limit, even with the naive retries.",
		Horizon: 2 * time.Minute,
		Seed:    1,
		Load:    Load{Rate: 40, Deadline: 6 * time.Second},
		Service: Service{ServiceTime: time.Second, LoadLatency: 10 * time.Millisecond},
		Faults:  []Fault{{Kind: Spike, Start: 20 * time.Second, End: 30 * time.Second, Factor: 2}},
		Chains: []Chain{
			{Name: "naive", Layers: []Layer{naiveSpikeLayer()}},
			{Name: "heed", PropagateDeadline: true, Layers: []Layer{{}}},
			// The naive clients again, the service behind heed's overload
			// control: a fixed limit of 100 in service (latency 2 s, under
			// the clients' 3 s timeout) refuses the spike's excess at once,
			// so nothing times out and no retry storm starts.
			{Name: "naive + server limit 100", Layers: []Layer{naiveSpikeLayer()}, Overload: &overload.Config{Limit: 100}},
			// And behind its adaptive limit, at its defaults: the latency
			// grows with every request in flight, but so does what the
			// service serves, which the limit tells from a queue; it
			// grows to 80-90 in flight and recovers as the fixed limit does.
			{Name: "naive + server adaptive", Layers: []Layer{naiveSpikeLayer()}, Overload: &overload.Config{}},
		},
	}
}

func tailScenario() Scenario {
	return Scenario{
		Name: "tail",
		Description: "100 user requests/s, each waiting up to 5s, to a service where 5% of the answers take 2s " +
			"and the others 10ms. Retries do nothing for slow answers; a hedge, a second copy of a slow request, " +
			"takes the p99 from 2s to tens of milliseconds for about 5% more attempts, inside the retry budget.",
		Horizon: time.Minute,
		Seed:    1,
		Load:    Load{Rate: 100, Deadline: 5 * time.Second},
		Service: Service{ServiceTime: 10 * time.Millisecond, SlowShare: 0.05, SlowTime: 2 * time.Second},
		Chains: []Chain{
			{Name: "heed defaults", Layers: []Layer{{}}},
			{Name: "hedge after 30ms", Layers: []Layer{{Retry: retry.Policy{Hedge: &retry.Hedge{Delay: 30 * time.Millisecond}}}}},
			{Name: "hedge after the p95", Layers: []Layer{{Retry: retry.Policy{Hedge: &retry.Hedge{}}}}},
		},
	}
}

// naiveSpikeLayer is the spike scenario's naive client: 3 immediate
// retries after a 3 s timeout, no budget.
func naiveSpikeLayer() Layer {
	return Layer{Retry: retry.Policy{
		Attempts:       4,
		Backoff:        backoff.Schedule{Kind: backoff.Immediate},
		AttemptTimeout: 3 * time.Second,
	}, Budget: budget.Config{Ratio: -1}}
}

func brownoutScenario() Scenario {
	return Scenario{
		Name: "brownout",
		Description: "300 user requests/s, each waiting up to 2s, to 20 workers of 50ms each (400/s) behind an " +
			"unbounded queue; from 30s to 40s half the capacity is lost. Naive retries after a 500ms timeout fill " +
			"the queue with work nobody waits for, and it never drains; heed's defaults drain it; without " +
			"deadlines propagated the service serves expired work and recovers later.",
		Horizon: 2 * time.Minute,
		Seed:    1,
		Load:    Load{Rate: 300, Deadline: 2 * time.Second},
		Service: Service{Concurrency: 20, ServiceTime: 50 * time.Millisecond, Exponential: true},
		Faults:  []Fault{{Kind: CapacityDrop, Start: 30 * time.Second, End: 40 * time.Second, Factor: 0.5}},
		Chains: []Chain{
			{Name: "naive", Layers: []Layer{{Retry: retry.Policy{
				Attempts: 4, Backoff: backoff.Schedule{Kind: backoff.Immediate}, AttemptTimeout: 500 * time.Millisecond},
				Budget: budget.Config{Ratio: -1}}}},
			{Name: "heed, deadlines not propagated", Layers: []Layer{{}}},
			{Name: "heed", PropagateDeadline: true, Layers: []Layer{{}}},
		},
	}
}

// chainScenario is the shape of the three-service load-safety test: a
// user's client, A and B, calling down to C, which fails with f from 20 s
// to 40 s.
func chainScenario(name string, f Fault) Scenario {
	f.Start, f.End = 20*time.Second, 40*time.Second
	heed := []Layer{{}, {}, {}}
	ownershipOff := []Layer{{}, {OwnershipOff: true}, {OwnershipOff: true}}
	off := budget.Config{Ratio: -1}
	noBudget := []Layer{{Budget: off}, {Budget: off}, {Budget: off}}
	naiveLayer := Layer{Retry: retry.Policy{Attempts: 4, Backoff: backoff.Schedule{Kind: backoff.Immediate}},
		Budget: off, AttemptShare: -1, OwnershipOff: true}
	what := "answers every call with an error"
	if f.Rate < 1 {
		what = fmt.Sprintf("fails %.0f%% of the calls at random", 100*f.Rate)
	}
	return Scenario{
		Name: name,
		Description: "A user's client calls A, A calls B, B calls C, each through heed's defaults; from 20s to 40s C " +
			what + ". Compares heed's defaults with ownership off, with no retry budget, and with naive " +
			"retries (4 attempts per hop, no budget, no ownership).",
		Horizon: time.Minute,
		Seed:    1,
		Load:    Load{Rate: 100, Deadline: 2 * time.Second},
		Service: Service{ServiceTime: time.Millisecond},
		Faults:  []Fault{f},
		Chains: []Chain{
			{Name: "heed defaults", PropagateDeadline: true, Layers: heed},
			{Name: "ownership off", PropagateDeadline: true, Layers: ownershipOff},
			{Name: "no budget", PropagateDeadline: true, Layers: noBudget},
			{Name: "naive", PropagateDeadline: true, Layers: []Layer{naiveLayer, naiveLayer, naiveLayer}},
		},
	}
}
