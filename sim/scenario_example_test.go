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
	fmt.Println(s.Name, s.Horizon, len(s.Policies), "policies")
	_, err = sim.ParseScenario("typo.yaml", []byte("horizon: 1m\nload: {rate: 10, deadlin: 2s}\n"))
	fmt.Println(err)
	// Output:
	// retry-storm 1m0s 2 policies
	// typo.yaml: line 2: unknown field "deadlin" in load (known: rate, arrival, deadline)
}
