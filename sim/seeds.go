package sim

import (
	"fmt"
	"slices"
	"time"
)

// maxSeeds is the most seeds [RunSeeds] runs.
const maxSeeds = 1000

// Spread is a figure over several seeds: its median, least and greatest
// value. The zero value is a figure of no runs.
type Spread struct {
	Median, Min, Max float64
}

// format formats the spread as "1.10 (1.08–1.13)", or as the median alone
// when all seeds agree, with format f for each value.
func (s Spread) format(f string) string {
	if s.Min == s.Max {
		return fmt.Sprintf(f, s.Median)
	}
	return fmt.Sprintf(f+" ("+f+"–"+f+")", s.Median, s.Min, s.Max)
}

// spread returns the Spread of vs, which it sorts.
func spread(vs []float64) Spread {
	if len(vs) == 0 {
		return Spread{}
	}
	slices.Sort(vs)
	m := vs[len(vs)/2]
	if len(vs)%2 == 0 {
		m = (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
	}
	return Spread{Median: m, Min: vs[0], Max: vs[len(vs)-1]}
}

// Seeds sums up one chain's runs over several seeds.
type Seeds struct {
	// Scenario and Chain name the runs.
	Scenario, Chain string
	// Results are the runs, one per seed, in seed order.
	Results []*Result
	// AttemptsPerRequest, PeakAmplification and SuccessRate are those of
	// each run's Summary.
	AttemptsPerRequest, PeakAmplification, SuccessRate Spread
	// FaultSuccessRate, FaultAttemptsPerRequest and FaultPeak are those of
	// each run's Summary.Fault: users served during the faults, and the
	// load per user request on the bottom service, mean and worst
	// interval.
	FaultSuccessRate, FaultAttemptsPerRequest, FaultPeak Spread
	// Recovered is the number of runs that recovered; RecoverySeconds is
	// their RecoveryTime, in seconds (a run that did not recover counts as
	// the time from the faults' end to the horizon, so the median of runs
	// most of which did not recover says so).
	Recovered       int
	RecoverySeconds Spread
}

// RunSeeds runs the scenario with n seeds, s.Seed to s.Seed+n-1 (n from 1 to
// 1000), and returns, for each chain in order, the runs and the median and
// range of their figures. It returns an error matching [ErrInvalid] for an
// invalid scenario or n, and o.Context's error when it ends first.
func RunSeeds(s Scenario, n int, o Options) ([]*Seeds, error) {
	if n < 1 || n > maxSeeds {
		return nil, bad("seeds", "is %d, must be from 1 to %d", n, maxSeeds)
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	out := make([]*Seeds, len(s.Chains))
	for i := range s.Chains {
		out[i] = &Seeds{Scenario: s.Name, Chain: s.Chains[i].name(i)}
	}
	base := s.Seed
	for k := range n {
		s.Seed = base + uint64(k)
		rs, err := Run(s, o)
		if err != nil {
			return nil, err
		}
		for i, r := range rs {
			out[i].Results = append(out[i].Results, r)
		}
	}
	for _, sd := range out {
		var apr, peak, succ, fsucc, fapr, fpeak, rec []float64
		for _, r := range sd.Results {
			sm := &r.Summary
			apr = append(apr, sm.AttemptsPerRequest)
			peak = append(peak, sm.PeakAmplification)
			succ = append(succ, sm.SuccessRate)
			fsucc = append(fsucc, sm.Fault.SuccessRate)
			fapr = append(fapr, sm.Fault.AttemptsPerRequest)
			fpeak = append(fpeak, sm.Fault.PeakAttemptsPerRequest)
			t := sm.RecoveryTime
			if sm.Recovered {
				sd.Recovered++
			} else {
				t = time.Duration(len(r.Series))*r.Interval - sm.FaultEnd
			}
			rec = append(rec, t.Seconds())
		}
		sd.AttemptsPerRequest, sd.PeakAmplification, sd.SuccessRate = spread(apr), spread(peak), spread(succ)
		sd.FaultSuccessRate, sd.FaultAttemptsPerRequest, sd.FaultPeak = spread(fsucc), spread(fapr), spread(fpeak)
		sd.RecoverySeconds = spread(rec)
	}
	return out, nil
}
