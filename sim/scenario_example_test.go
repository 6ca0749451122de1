package sim_test

import (
	"fmt"

	"github.com/heed-go/heed/sim"
)

// A scenario file, as heed sim reads it.
func ExampleParseScenario() {
	s, err := sim.ParseScenario("retry-storm.yaml", []byte(`
horizon: 1m
load: {rate: 200, deadline: 2s}
service: {concurrency: 20, service_time: 50ms}
faults: [{kind: outage, start: 10s, end: 20s}]
policies:
  - name: every layer
    layers: [{attempts: 3}, {attempts: 3}]
  - name: one owner
    layers: [{attempts: 3, owner: true, budget: {ratio: 0.1}}, {}]
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s.Name, s.Horizon, len(s.Chains), "policies")
	_, err = sim.ParseScenario("typo.yaml", []byte("horizon: 1m\nload: {rate: 10, deadlin: 2s}\n"))
	fmt.Println(err)
	// Output:
	// retry-storm 1m0s 2 policies
	// typo.yaml: line 2: unknown field "deadlin" in load (known: rate, arrival, deadline)
}

// A policy's overload puts the bottom service behind heed's overload
// control in that policy's runs ({} is overload.Config's defaults): the
// spike's naive retries against the same service with and without it.
func ExampleParseScenario_overload() {
	s, err := sim.ParseScenario("spike.yaml", []byte(`
horizon: 2m
load: {rate: 40, deadline: 6s}
service: {service_time: 1s, load_latency: 10ms}
faults: [{kind: spike, start: 20s, end: 30s, factor: 2}]
policies:
  - name: naive
    layers: [{attempts: 4, backoff: {kind: immediate}, attempt_timeout: 3s}]
  - name: naive, server limit 100
    layers: [{attempts: 4, backoff: {kind: immediate}, attempt_timeout: 3s}]
    overload: {limit: 100}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
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
	// naive, server limit 100: recovered when the faults ended
}
