package retry

import (
	"context"
	"slices"
	"testing"
	"time"
)

// BenchmarkRaceCost is BenchmarkRace's two cases alternating in chunks of
// 256 calls in one loop, so that both see the same machine: the fastest
// and the median chunk of each (ns/op), and their differences (on-off),
// what hedging costs the protocol for a call that sends no hedge.
func BenchmarkRaceCost(b *testing.B) {
	ok := func(context.Context, int, Limit) Result { return Result{} }
	ctx := context.Background()
	run := func(p Policy) func() {
		return func() {
			c := Call{Policy: p}
			now := time.Now()
			lim, _ := c.Admit(now)
			res, _, cancel := c.Race(ctx, now, lim, ok)
			if cancel != nil {
				cancel()
			}
			c.End(now, res)
		}
	}
	interleave(b, run(Policy{}), run(Policy{Hedge: &Hedge{Delay: time.Second}}))
}

// BenchmarkRaceCostDone is BenchmarkRaceCost with an attempt that asks
// its context for Done, as net/http's transport does: the race then makes
// its cancellable context, which BenchmarkRaceCost's attempt never needs.
func BenchmarkRaceCostDone(b *testing.B) {
	var sink <-chan struct{}
	ok := func(ctx context.Context, _ int, _ Limit) Result {
		sink = ctx.Done()
		return Result{}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	run := func(p Policy) func() {
		return func() {
			c := Call{Policy: p}
			now := time.Now()
			lim, _ := c.Admit(now)
			res, _, cancel := c.Race(ctx, now, lim, ok)
			if cancel != nil {
				cancel()
			}
			c.End(now, res)
		}
	}
	interleave(b, run(Policy{}), run(Policy{Hedge: &Hedge{Delay: time.Second}}))
	_ = sink
}

// interleave runs off and on alternately, chunk by chunk, b.N times in
// all, and reports the fastest and the median chunk of each (ns/op) and
// the differences on-off.
func interleave(b *testing.B, off, on func()) {
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
