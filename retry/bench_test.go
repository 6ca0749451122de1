package retry

import (
	"context"
	"testing"

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
