package compare

// A copy of issue15p's rounds (their internal/compare/queue_test.go), so
// that the SQLite benchmarks alternate the same way before that branch
// lands. When both are merged, keep theirs and delete this file: the
// names are the same.

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// fillBatch is how many jobs each call that fills the queue before a
// drain carries.
const fillBatch = 10_000

// inBatches calls insert with the sizes of n jobs cut into batches of
// size.
func inBatches(b *testing.B, n, size int, insert func(n int) error) {
	b.Helper()
	for left := n; left > 0; left -= size {
		if err := insert(min(left, size)); err != nil {
			b.Fatal(err)
		}
	}
}

// variant is one of the compared ways of doing n jobs. setup prepares
// them (untimed) and returns the timed part, which returns what is left
// to stop (untimed; nil for nothing).
type variant struct {
	name  string
	setup func(b *testing.B, n int) (timed func() (stop func()))
}

// rounds counts the rounds run with more than one job, to rotate the
// order of the variants.
var rounds atomic.Int64

// round runs every variant once for b.N jobs, in an order rotated by one
// place per round, and reports each one's jobs/s and allocations per job.
func round(b *testing.B, vs []variant) {
	first := 0
	if b.N > 1 {
		first = int(rounds.Add(1)-1) % len(vs)
	}
	type result struct{ jobsPerSec, allocsPerJob float64 }
	res := make([]result, len(vs))
	for k := range vs {
		i := (first + k) % len(vs)
		timed := vs[i].setup(b, b.N)
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		stop := timed()
		d := time.Since(start)
		runtime.ReadMemStats(&after)
		if stop != nil {
			stop()
		}
		res[i] = result{float64(b.N) / d.Seconds(), float64(after.Mallocs-before.Mallocs) / float64(b.N)}
	}
	for i, v := range vs {
		b.ReportMetric(res[i].jobsPerSec, v.name+"-jobs/s")
		b.ReportMetric(res[i].allocsPerJob, v.name+"-allocs/job")
	}
}
