package sim

import (
	"fmt"
	"testing"

	"github.com/heed-go/heed/budget"
)

// TestPartialOutageGoal is the load-safety goal across many seeds, with
// heed's defaults (zero Layers): when C fails half of the calls at random
// ("partial"), at least 85% of the users are served, while a total outage
// ("outage") stays within 1.15× of the normal load at C over the outage and
// 1.2× in every second, and "spike" still recovers within 10 s of the
// trigger's end. It also logs the frontier of the budget's Earn and
// Ceiling (go test -run TestPartialOutageGoal -v ./sim prints the table
// of docs/http.md): what the partial outage serves against what the total
// outage costs.
func TestPartialOutageGoal(t *testing.T) {
	const seeds = 10
	variants := []struct {
		name string
		cfg  budget.Config
	}{
		{"no earning (Earn -1)", budget.Config{Earn: -1}},
		{"Earn 2", budget.Config{Earn: 2}},
		{"Earn 3 (default)", budget.Config{}},
		{"Earn 3, Ceiling 0.5", budget.Config{Ceiling: 0.5}},
		{"Earn 3, Burst 6", budget.Config{Burst: 6}},
		{"Earn 3, Burst 8", budget.Config{Burst: 8}},
	}
	heedOnly := func(name string, cfg budget.Config) *Seeds {
		s, _ := Builtin(name)
		c := s.Chains[1] // spike's "heed"
		if name != "spike" {
			c = s.Chains[0] // "heed defaults"
		}
		for i := range c.Layers {
			c.Layers[i].Budget = cfg
		}
		s.Chains = []Chain{c}
		sd, err := RunSeeds(s, seeds, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return sd[0]
	}
	t.Log("| budget | partial: served | partial: load mean / worst second | outage: load mean / worst second | spike: recovery |")
	t.Log("|---|---|---|---|---|")
	for _, v := range variants {
		p, o, sp := heedOnly("partial", v.cfg), heedOnly("outage", v.cfg), heedOnly("spike", v.cfg)
		pct := Spread{100 * p.FaultSuccessRate.Median, 100 * p.FaultSuccessRate.Min, 100 * p.FaultSuccessRate.Max}
		rec := fmt.Sprintf("%s, %d of %d seeds", sp.RecoverySeconds.Format("%.0f s"), sp.Recovered, seeds)
		t.Logf("| %s | %s | %s / %s | %s / %s | %s |", v.name, pct.Format("%.1f%%"),
			p.FaultAttemptsPerRequest.Format("%.2f×"), p.FaultPeak.Format("%.2f×"),
			o.FaultAttemptsPerRequest.Format("%.2f×"), o.FaultPeak.Format("%.2f×"), rec)
		if v.name != "Earn 3 (default)" {
			continue
		}
		if p.FaultSuccessRate.Min < 0.85 {
			t.Errorf("partial: served %s, want at least 85%% in every seed", pct.Format("%.1f%%"))
		}
		if o.FaultAttemptsPerRequest.Max > 1.15 || o.FaultPeak.Max > 1.2 {
			t.Errorf("outage: load %s over the outage, %s in the worst second; want at most 1.15× and 1.2× in every seed",
				o.FaultAttemptsPerRequest.Format("%.3f×"), o.FaultPeak.Format("%.3f×"))
		}
		if sp.Recovered < seeds || sp.RecoverySeconds.Max > 10 {
			t.Errorf("spike: recovered in %d of %d seeds, after %s; want within 10 s in every seed", sp.Recovered, seeds, sp.RecoverySeconds.Format("%.0f s"))
		}
	}
}
