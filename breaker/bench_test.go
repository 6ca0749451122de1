package breaker_test

import (
	"testing"
	"time"

	"github.com/heed-go/heed/breaker"
)

// BenchmarkAllowRecord measures the closed-state hot path: AllowAt, then
// RecordAt of a success, at a fixed instant. The monotonic variant uses a
// fixed time.Now value, which carries a monotonic clock reading, as the
// instants of real callers do.
func BenchmarkAllowRecord(b *testing.B) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	mono := time.Now()
	b.Run("serial", func(b *testing.B) {
		br, err := breaker.New(breaker.Config{})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			p, err := br.AllowAt(now)
			if err != nil {
				b.Fatal(err)
			}
			p.RecordAt(now, breaker.Success)
		}
	})
	for _, c := range []struct {
		name string
		now  time.Time
	}{{"parallel", now}, {"parallel-monotonic", mono}} {
		b.Run(c.name, func(b *testing.B) {
			br, err := breaker.New(breaker.Config{})
			if err != nil {
				b.Fatal(err)
			}
			now := c.now
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					p, err := br.AllowAt(now)
					if err != nil {
						b.Error(err)
						return
					}
					p.RecordAt(now, breaker.Success)
				}
			})
		})
	}
}

// BenchmarkAllowOpen measures a refusal: the cost of failing fast.
func BenchmarkAllowOpen(b *testing.B) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	br, err := breaker.New(breaker.Config{MinCalls: 1})
	if err != nil {
		b.Fatal(err)
	}
	p, _ := br.AllowAt(now)
	p.RecordAt(now, breaker.Failure)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := br.AllowAt(now); err != breaker.ErrOpen {
				b.Error(err)
				return
			}
		}
	})
}
