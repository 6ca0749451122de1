package idempotency_test

import (
	"testing"

	"github.com/heed-go/heed/idempotency"
	"github.com/heed-go/heed/idempotency/storetest"
)

func BenchmarkMiddlewareMemory(b *testing.B) {
	storetest.Benchmark(b, idempotency.NewMemoryStore())
}

func BenchmarkParseKey(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		idempotency.ParseKey(`"8e03978e-40d5-43e8-bc93-6894a57f9324"`)
	}
}
