package compare

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/sony/gobreaker/v2"

	heedbackoff "github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/breaker"
	"github.com/heed-go/heed/retry"
)

var errFail = errors.New("fail")

// The cases of go-libs.md: success; fail once then succeed (zero delay);
// three failing attempts (zero delay).

func BenchmarkSuccess(b *testing.B) {
	ctx := context.Background()
	b.Run("heed", func(b *testing.B) {
		p := retry.Policy{}
		fn := func(context.Context) error { return nil }
		b.ReportAllocs()
		for b.Loop() {
			_ = retry.Do(ctx, p, fn)
		}
	})
	b.Run("cenkalti-v5", func(b *testing.B) {
		op := func() (struct{}, error) { return struct{}{}, nil }
		b.ReportAllocs()
		for b.Loop() {
			_, _ = backoff.Retry(ctx, op, backoff.WithBackOff(&backoff.ZeroBackOff{}), backoff.WithMaxTries(3))
		}
	})
}

func BenchmarkOneRetry(b *testing.B) {
	ctx := context.Background()
	b.Run("heed", func(b *testing.B) {
		p := retry.Policy{Backoff: heedbackoff.Schedule{Kind: heedbackoff.Immediate}, Retryable: func(error) bool { return true }}
		i := 0
		fn := func(context.Context) error {
			i++
			if i%2 == 1 {
				return errFail
			}
			return nil
		}
		b.ReportAllocs()
		for b.Loop() {
			_ = retry.Do(ctx, p, fn)
		}
	})
	b.Run("cenkalti-v5", func(b *testing.B) {
		i := 0
		op := func() (struct{}, error) {
			i++
			if i%2 == 1 {
				return struct{}{}, errFail
			}
			return struct{}{}, nil
		}
		b.ReportAllocs()
		for b.Loop() {
			_, _ = backoff.Retry(ctx, op, backoff.WithBackOff(&backoff.ZeroBackOff{}), backoff.WithMaxTries(3))
		}
	})
}

func BenchmarkExhaust(b *testing.B) {
	ctx := context.Background()
	b.Run("heed", func(b *testing.B) {
		p := retry.Policy{Backoff: heedbackoff.Schedule{Kind: heedbackoff.Immediate}, Retryable: func(error) bool { return true }}
		fn := func(context.Context) error { return errFail }
		b.ReportAllocs()
		for b.Loop() {
			_ = retry.Do(ctx, p, fn)
		}
	})
	b.Run("cenkalti-v5", func(b *testing.B) {
		op := func() (struct{}, error) { return struct{}{}, errFail }
		b.ReportAllocs()
		for b.Loop() {
			_, _ = backoff.Retry(ctx, op, backoff.WithBackOff(&backoff.ZeroBackOff{}), backoff.WithMaxTries(3))
		}
	})
}

// BenchmarkBreaker compares the closed-state hot path (allow, then record a
// success) under b.RunParallel.
func BenchmarkBreaker(b *testing.B) {
	b.Run("heed", func(b *testing.B) {
		br, err := breaker.New(breaker.Config{})
		if err != nil {
			b.Fatal(err)
		}
		now := time.Now()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				p, err := br.AllowAt(now)
				if err == nil {
					p.RecordAt(now, breaker.Success)
				}
			}
		})
	})
	b.Run("gobreaker-v2", func(b *testing.B) {
		cb := gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{Name: "x"})
		op := func() (struct{}, error) { return struct{}{}, nil }
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				_, _ = cb.Execute(op)
			}
		})
	})
}
