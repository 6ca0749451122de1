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
	// scenario's first chain).
	rs, err := Run(base, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rs[0].Summary.Recovered {
		t.Errorf("naive without overload control recovered; want the metastable failure")
	}
}

// The adaptive limit at its defaults recovers from the spike with the
// naive clients too: this service's latency grows with every request in
// flight, but so does what it serves, which the limit tells from a queue
// (before, it read that latency as a queue, settled at 23-24 in flight,
// 19.5 of the 40 users/s, and never recovered). Over 10 seeds every seed
// recovers, most at once; a few later, when a burst of users (56/s for
// 2-3 s) meets the limit.
func TestSpikeAdaptiveRecovers(t *testing.T) {
	base, _ := Builtin("spike")
	c := base.Chains[3]
	if o := c.Overload; o == nil || o.Limit != 0 || o.InitialLimit != 0 || o.MaxLimit != 0 || o.MinLimit != 0 {
		t.Fatalf("chain 3 is %q, want the adaptive limit at its defaults", c.Name)
	}
	base.Chains = []Chain{c}
	sd, err := RunSeeds(base, 10, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := sd[0]
	t.Logf("recovered in %d of 10 seeds after %s; served in the fault %s, success %s", r.Recovered,
		r.RecoverySeconds.Format("%.0f s"), r.FaultSuccessRate.Format("%.3f"), r.SuccessRate.Format("%.3f"))
	if r.Recovered != 10 || r.RecoverySeconds.Median > 2 {
		t.Errorf("recovered in %d of 10 seeds, after %s; want every seed, half of them within 2 s", r.Recovered, r.RecoverySeconds.Format("%.0f s"))
	}
	if r.SuccessRate.Min < 0.8 {
		t.Errorf("served %s of the users; want at least 0.8 in every seed (0.44 before)", r.SuccessRate.Format("%.3f"))
	}
}
