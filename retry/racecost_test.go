package retry

import (
	"context"
	"testing"
	"time"

	"github.com/heed-go/heed/internal/benchpair"
)

// BenchmarkRaceCost is BenchmarkRace's two cases alternating in chunks of
// 256 calls in one loop, so that both see the same machine: the fastest
// and the median chunk of each (ns/op), and their differences (on-off),
// what hedging costs the protocol for a call that sends no hedge.
//
// `go test -run XXX -bench 'BenchmarkRaceCost' -benchmem -benchtime
// 400000x ./retry`, test binaries of main and of the change alternating,
// 8 runs each, load average about 22 on 2 cores: on-off fastest chunk
// 38.9 to 41.2 ns, median chunk 55.0 to 57.0 (before issue 30's last
// round, same runs: 52.0 to 56.1 and 68.5 to 70.9); 16 B a call averaged
// (the on side's context, 32 B). BenchmarkRaceCostDone: 238.5 to 247.1
// ns fastest (257.8 to 274.8 before). What is left, measured by taking
// each away in a build of its own (BenchmarkRaceCost, fastest chunk): the
// context's allocation about 16 ns, the timer list's lock about 4 ns,
// comparing the policy with the shared copy about 2 ns; the
// compare-and-swap that settles the race, and one copy of the Result
// through memory that the compiler makes after the attempt returns.
func BenchmarkRaceCost(b *testing.B) {
	ok := func(context.Context, int, Limit) Result { return Result{} }
	ctx := context.Background()
	benchpair.Interleave(b, raceOnce(ctx, Policy{}, ok), raceOnce(ctx, Policy{Hedge: &Hedge{Delay: time.Second}}, ok))
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
	benchpair.Interleave(b, raceOnce(ctx, Policy{}, ok), raceOnce(ctx, Policy{Hedge: &Hedge{Delay: time.Second}}, ok))
	_ = sink
}

// raceOnce returns one call of the benchmarks: a Call under p whose one
// attempt races as the executors race it (Admit, Race, End).
func raceOnce(ctx context.Context, p Policy, attempt func(context.Context, int, Limit) Result) func() {
	return func() {
		c := Call{Policy: p}
		now := time.Now()
		lim, _ := c.Admit(now)
		res, _, cancel := c.Race(ctx, now, lim, attempt)
		if cancel != nil {
			cancel()
		}
		c.End(now, res)
	}
}
