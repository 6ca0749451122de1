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
	benchpair.Interleave(b, run(Policy{}), run(Policy{Hedge: &Hedge{Delay: time.Second}}))
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
	benchpair.Interleave(b, run(Policy{}), run(Policy{Hedge: &Hedge{Delay: time.Second}}))
	_ = sink
}
