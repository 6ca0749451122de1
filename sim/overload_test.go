package sim

import (
	"testing"
)

// The spike's metastable failure does not happen when the service is
// behind overload control with a fixed limit, even with naive clients
// (3 immediate retries after a 3 s timeout, no budget): over 10 seeds it
// serves every user again within seconds of the spike, the last 30 s at
// least 95%. So also when the clients send no attempt number and ignore
// Retry-After, as clients outside heed do: the limit keeps the service's
// latency under their timeout, so no retry storm starts.
func TestSpikeOverloadRecovers(t *testing.T) {
	base, _ := Builtin("spike")
	for _, plain := range []bool{false, true} {
		s := base
		c := s.Chains[2] // "naive + server limit 100"
		if c.Overload == nil || c.Overload.Limit != 100 {
			t.Fatalf("chain 2 is %q, want the naive clients behind a limit of 100", c.Name)
		}
		c.plainWire = plain
		s.Chains = []Chain{c}
		sd, err := RunSeeds(s, 10, Options{})
		if err != nil {
			t.Fatal(err)
		}
		r := sd[0]
		t.Logf("plain wire %v: recovered in %d of 10 seeds after %s; served in the fault %s, load per user %s, success %s", plain,
			r.Recovered, r.RecoverySeconds.Format("%.0f s"), r.FaultSuccessRate.Format("%.3f"), r.FaultAttemptsPerRequest.Format("%.2f"), r.SuccessRate.Format("%.3f"))
		if r.Recovered != 10 || r.RecoverySeconds.Max > 5 {
			t.Errorf("plain wire %v: recovered in %d of 10 seeds, after %s; want within 5 s in every seed", plain, r.Recovered, r.RecoverySeconds.Format("%.0f s"))
		}
	}
	// Without the overload control, the same clients collapse (the
	// scenario's first chain), and the adaptive limit at its defaults
	// holds this service at about half its throughput: its latency grows
	// with every request in flight, which a latency-based limit reads as a
	// queue.
	rs, err := Run(base)
	if err != nil {
		t.Fatal(err)
	}
	if rs[0].Summary.Recovered {
		t.Errorf("naive without overload control recovered; want the metastable failure")
	}
	if c := base.Chains[3]; c.Overload == nil || c.Overload.Limit != 0 || c.Overload.MaxLimit != 0 {
		t.Fatalf("chain 3 is %q, want the adaptive limit at its defaults", c.Name)
	}
	if got := rs[3].Summary.SuccessRate; got > 0.6 {
		t.Errorf("adaptive limit on the congestive service: %.2f served, want about half (the documented caveat)", got)
	}
}
