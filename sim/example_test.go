package sim_test

import (
	"fmt"
	"time"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/retry"
	"github.com/heed-go/heed/sim"
)

// Three layers that each make 4 attempts, with ownership off and no retry
// budget, turn one user request into 64 attempts at a service that is down;
// with heed's defaults (ownership on, the default budget) the top layer
// owns the retries and its budget keeps them near 1 + Ratio (1.09).
func Example() {
	layer := retry.Policy{Attempts: 4, Backoff: backoff.Schedule{Kind: backoff.Immediate}}
	naive := sim.Layer{Retry: layer, Budget: budget.Config{Ratio: -1}, OwnershipOff: true}
	heed := sim.Layer{Retry: layer}
	s := sim.Scenario{
		Name:    "outage",
		Horizon: 30 * time.Second,
		Load:    sim.Load{Rate: 100},
		Service: sim.Service{Concurrency: 10, ServiceTime: 10 * time.Millisecond},
		Faults:  []sim.Fault{{Kind: sim.Outage, Start: 10 * time.Second, End: 30 * time.Second}},
		Chains: []sim.Chain{
			{Name: "every layer retries", Layers: []sim.Layer{naive, naive, naive}},
			{Name: "heed defaults", Layers: []sim.Layer{heed, heed, heed}},
		},
	}
	results, err := sim.Run(s, sim.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range results {
		var users, attempts int64
		for _, p := range r.Series[20:] { // the outage, after the budget's first window
			users += p.UserRequests
			attempts += p.Attempts
		}
		fmt.Printf("%s: %.2f attempts per user request in the outage\n", r.Chain, float64(attempts)/float64(users))
	}
	// Output:
	// every layer retries: 64.00 attempts per user request in the outage
	// heed defaults: 1.09 attempts per user request in the outage
}

// A built-in scenario: a load spike that naive retries turn into a
// metastable failure, and heed's defaults recover from; so do the naive
// retries when the service is behind overload control, with a fixed limit
// or its adaptive limit at its defaults.
func ExampleBuiltin() {
	s, _ := sim.Builtin("spike")
	results, err := sim.Run(s, sim.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range results {
		fmt.Printf("%s: %s\n", r.Chain, r.Summary.RecoveryString())
	}
	// Output:
	// naive: did not recover within the horizon
	// heed: recovered when the faults ended
	// naive + server limit 100: recovered when the faults ended
	// naive + server adaptive: recovered when the faults ended
}
