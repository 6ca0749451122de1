package retry

import (
	"context"
	"testing"
	"time"

	"github.com/heed-go/heed/backoff"
)

// The three cases the issue measures (and that go-libs.md measured for other
// libraries): success, one retry with zero delay, three failing attempts.

func BenchmarkDoSuccess(b *testing.B) {
	ctx := context.Background()
	p := Policy{}
	fn := func(context.Context) error { return nil }
	b.ReportAllocs()
	for b.Loop() {
		_ = Do(ctx, p, fn)
	}
}

func BenchmarkDoOneRetry(b *testing.B) {
	ctx := context.Background()
	p := Policy{Backoff: backoff.Schedule{Kind: backoff.Immediate}}
	i := 0
	fn := func(context.Context) error {
		i++
		if i%2 == 1 {
			return errFlaky
		}
		return nil
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = Do(ctx, p, fn)
	}
}

func BenchmarkDoExhaust(b *testing.B) {
	ctx := context.Background()
	p := Policy{Backoff: backoff.Schedule{Kind: backoff.Immediate}}
	fn := func(context.Context) error { return errFlaky }
	b.ReportAllocs()
	for b.Loop() {
		_ = Do(ctx, p, fn)
	}
}

func BenchmarkDecide(b *testing.B) {
	p := Policy{}
	h := History{Attempts: 1, Start: t0}
	b.ReportAllocs()
	for b.Loop() {
		_ = Decide(&p, h, errFlaky, t0, nil)
	}
}

// BenchmarkRace: one attempt through Call.Race that succeeds at once,
// without a Hedge (Race makes the attempt alone) and with one whose 1 s
// delay is never reached: what hedging costs a call that sends no hedge
// in the protocol itself: the first attempt's context (one allocation,
// 32 B, made cancellable only if the attempt asks for Done), the race's
// entry in the hedge's timer list (a lock to add it, reusing a race that
// ended) and one compare-and-swap to claim it when the attempt ends. The
// Call stays on the stack either way. BenchmarkRaceCost runs both cases
// alternating in one loop; its comment has the figures.
func BenchmarkRace(b *testing.B) {
	ok := func(context.Context, int, Limit) Result { return Result{} }
	for _, bc := range []struct {
		name  string
		hedge *Hedge
	}{{"off", nil}, {"on", &Hedge{Delay: time.Second}}} {
		b.Run(bc.name, func(b *testing.B) {
			call := raceOnce(context.Background(), Policy{Hedge: bc.hedge}, ok)
			b.ReportAllocs()
			for b.Loop() {
				call()
			}
		})
	}
}
