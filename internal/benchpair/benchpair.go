// Package benchpair measures what a feature costs when it is on against
// when it is off, in one benchmark loop, so that both sides see the same
// machine: on a busy machine two separate benchmark runs differ by more
// than the cost being measured.
package benchpair

import (
	"slices"
	"testing"
	"time"
)

// Interleave runs off and on alternately, chunk by chunk, b.N times in
// all, and reports the fastest and the median chunk of each (ns/op) and
// the differences on-off.
func Interleave(b *testing.B, off, on func()) {
	const chunk = 256
	var offs, ons []float64
	b.ReportAllocs()
	for i := 0; i < b.N; i += 2 * chunk {
		for k, f := range []func(){off, on} {
			start := time.Now()
			for range chunk {
				f()
			}
			ns := float64(time.Since(start).Nanoseconds()) / chunk
			if k == 0 {
				offs = append(offs, ns)
			} else {
				ons = append(ons, ns)
			}
		}
	}
	slices.Sort(offs)
	slices.Sort(ons)
	med := func(s []float64) float64 { return s[len(s)/2] }
	b.ReportMetric(offs[0], "off-min-ns")
	b.ReportMetric(ons[0], "on-min-ns")
	b.ReportMetric(ons[0]-offs[0], "diff-min-ns")
	b.ReportMetric(med(offs), "off-med-ns")
	b.ReportMetric(med(ons), "on-med-ns")
	b.ReportMetric(med(ons)-med(offs), "diff-med-ns")
}
