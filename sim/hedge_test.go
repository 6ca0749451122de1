package sim

import (
	"testing"
	"time"
)

// TestTailHedged: the "tail" scenario, the simulator's form of retryhttp's
// TestHedgeTail: 5% of the answers take 2 s, the others 10 ms. Without
// hedging the p99 is 2 s; hedged after 30 ms it is at most 60 ms for at
// most 10% more attempts, and the learnt delay (p95) keeps the same
// bounds.
func TestTailHedged(t *testing.T) {
	s, _ := Builtin("tail")
	rs, err := Run(s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rs {
		m := r.Summary
		t.Logf("%s: p50 %v, p99 %v, %.3f attempts per request, %.1f%% served", s.Chains[i].Name, m.P50, m.P99, m.AttemptsPerRequest, 100*m.SuccessRate)
		switch {
		case i == 0 && m.P99 < 1900*time.Millisecond:
			t.Errorf("%s: p99 %v, want the 2 s of the slow answers", s.Chains[i].Name, m.P99)
		case i > 0 && (m.P99 > 60*time.Millisecond || m.AttemptsPerRequest > 1.10):
			t.Errorf("%s: p99 %v and %.3f attempts per request, want at most 60ms and 1.10", s.Chains[i].Name, m.P99, m.AttemptsPerRequest)
		}
	}
}

// A scenario file hedges a layer (hedge: delay, max, quantile, min_delay,
// max_delay) against a service with a slow tail (slow_share, slow_time),
// and runs as the built-in "tail" does.
func TestScenarioHedge(t *testing.T) {
	s, err := ParseScenario("tail.yaml", []byte(`horizon: 30s
load: {rate: 100, deadline: 5s}
service: {service_time: 10ms, slow_share: 0.05, slow_time: 2s}
policies:
  - name: hedged
    layers: [{hedge: {delay: 30ms, max: 2}}]
  - name: learnt
    layers: [{hedge: {quantile: 0.9, min_delay: 5ms, max_delay: 100ms}}]
`))
	if err != nil {
		t.Fatal(err)
	}
	h := s.Chains[0].Layers[0].Retry.Hedge
	if h == nil || h.Delay != 30*time.Millisecond || h.Max != 2 || s.Service.SlowShare != 0.05 || s.Service.SlowTime != 2*time.Second {
		t.Fatalf("hedge %+v, service %+v", h, s.Service)
	}
	if h := s.Chains[1].Layers[0].Retry.Hedge; h.Quantile != 0.9 || h.MinDelay != 5*time.Millisecond || h.MaxDelay != 100*time.Millisecond {
		t.Fatalf("learnt hedge %+v", h)
	}
	rs, err := Run(s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rs {
		if m := r.Summary; m.P99 > 110*time.Millisecond || m.AttemptsPerRequest > 1.12 {
			t.Errorf("%s: p99 %v, %.3f attempts per request", s.Chains[i].Name, m.P99, m.AttemptsPerRequest)
		}
	}
	for _, bad := range []string{
		"layers: [{hedge: {max: 9}}]",
		"layers: [{hedge: {delay: -1s}}]",
		"layers: [{hedge: {quantile: 1.5}}]",
	} {
		if _, err := ParseScenario("bad.yaml", []byte("horizon: 10s\nload: {rate: 1}\npolicies: [{"+bad+"}]\n")); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}
