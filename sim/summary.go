package sim

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/heed-go/heed/internal/textfmt"
)

// writeScenarioLine writes the line that names the scenario and its runs.
func writeScenarioLine(w io.Writer, sc *Scenario, seeds string) {
	fmt.Fprintf(w, "scenario %s: %s user requests/s (%s) for %v, %s",
		sc.Name, textfmt.Group(sc.Load.Rate), sc.Load.Arrival, sc.Horizon, seeds)
	if len(sc.Faults) > 0 {
		var fs []string
		for _, f := range sc.Faults {
			fs = append(fs, f.String())
		}
		fmt.Fprintf(w, "; faults: %s", strings.Join(fs, ", "))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w)
}

// WriteSeedsSummary writes, as heed sim --seeds prints it, the median and range of each chain's figures
// over the seeds: during the faults, the users served and the load per user
// request on the bottom service (mean, and the worst second), and the
// recovery.
func WriteSeedsSummary(w io.Writer, sc *Scenario, n int, spreads []*Seeds) {
	writeScenarioLine(w, sc, fmt.Sprintf("seeds %d–%d (median and range)", sc.Seed, sc.Seed+uint64(n)-1))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "POLICY\tSERVED IN FAULTS\tLOAD PER USER IN FAULTS\tWORST SECOND\tRECOVERY")
	for _, sd := range spreads {
		pct := Spread{Median: 100 * sd.FaultSuccessRate.Median, Min: 100 * sd.FaultSuccessRate.Min, Max: 100 * sd.FaultSuccessRate.Max}
		rec := fmt.Sprintf("%s in %d of %d seeds", sd.RecoverySeconds.format("%.0fs"), sd.Recovered, n)
		if sd.Recovered == 0 {
			rec = fmt.Sprintf("did not recover in %d of %d seeds", n, n)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", sd.Chain, pct.format("%.1f%%"), sd.FaultAttemptsPerRequest.format("%.2f×"),
			sd.FaultPeak.format("%.2f×"), rec)
	}
	tw.Flush()
}

// WriteSummary writes results as heed sim prints them: a line naming the
// scenario, a table of the chains' figures, and why users failed.
func WriteSummary(w io.Writer, sc *Scenario, results []*Result) {
	writeScenarioLine(w, sc, fmt.Sprintf("seed %d", sc.Seed))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "POLICY\tATTEMPTS/REQUEST\tPEAK AMPLIFICATION\tSUCCEEDED\tP99\tRECOVERY")
	for _, r := range results {
		sm := &r.Summary
		fmt.Fprintf(tw, "%s\t%.2f\t%.1f× at %v\t%.1f%%\t%v\t%s\n", r.Chain, sm.AttemptsPerRequest,
			sm.PeakAmplification, sm.PeakAt, 100*sm.SuccessRate, textfmt.Latency(sm.P99), sm.RecoveryString())
	}
	tw.Flush()
	blank := false
	for _, r := range results {
		sm := &r.Summary
		if sm.Failed == 0 {
			continue
		}
		keys := make([]string, 0, len(sm.GiveUps))
		for k := range sm.GiveUps {
			keys = append(keys, k)
		}
		// Largest first, then by name, so the output is stable.
		sortKeys(keys, sm.GiveUps)
		var parts []string
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%s %s", k, textfmt.Group(float64(sm.GiveUps[k]))))
		}
		if !blank {
			fmt.Fprintln(w)
			blank = true
		}
		fmt.Fprintf(w, "%s: %s of %s user requests failed (gave up: %s)", r.Chain, textfmt.Group(float64(sm.Failed)),
			textfmt.Group(float64(sm.UserRequests)), strings.Join(parts, ", "))
		if sm.Orphaned > 0 {
			fmt.Fprintf(w, "; %s attempts served after their caller gave up", textfmt.Group(float64(sm.Orphaned)))
		}
		if sm.Open > 0 {
			fmt.Fprintf(w, "; %s still open at the horizon", textfmt.Group(float64(sm.Open)))
		}
		fmt.Fprintln(w)
	}
}

func sortKeys(keys []string, n map[string]int64) {
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0; j-- {
			a, b := keys[j-1], keys[j]
			if n[a] > n[b] || (n[a] == n[b] && a < b) {
				break
			}
			keys[j-1], keys[j] = b, a
		}
	}
}
