package heedriver_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/heed-go/heed/breaker"
	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/heedriver"
	"github.com/heed-go/heed/internal/enginetest"
	"github.com/heed-go/heed/retry"
)

// benchPolicy is heed's policy as a user would have it: a retry budget, a
// breaker and an attempt timeout.
func benchPolicy(b *testing.B) *heedriver.Policy {
	bu, _ := budget.New(budget.Config{})
	br, _ := breaker.New(breaker.Config{})
	h, err := heedriver.New(retry.Policy{Budget: bu, Breaker: br, AttemptTimeout: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	return h
}

// drainRounds is how many times BenchmarkDrain runs each variant, one after
// the other, so that a busy machine weighs on both alike.
const drainRounds = 7

// BenchmarkDrain is River's per-job cost in a drain of no-op jobs, without
// and with heed's middleware and retry policy, side by side (River as it
// comes, its 1 min job timeout kept; heed's 1 min attempt timeout on top),
// in drainRounds alternating rounds (enginetest.Drain): each op is one job,
// from the client's start until its worker has run for every job (the
// stop is not counted). The log at the end gives each variant's median
// and least, and heed's own work per job measured between the rounds
// beside the engine's CPU per job. Run it with a fixed count of jobs:
//
//	go test -run '^$' -bench Drain -benchtime 10000x -cpu 2 -v .
func BenchmarkDrain(b *testing.B) {
	pool, schema := openSchema(b)
	ctx := context.Background()
	enginetest.Drain(b, drainRounds, "river", "River", "BenchmarkWork", workCost, func(b *testing.B, heed bool) (run, stop func()) {
		var h *heedriver.Policy
		if heed {
			h = benchPolicy(b)
		}
		if _, err := pool.Exec(ctx, "TRUNCATE "+pgx.Identifier{schema, "river_job"}.Sanitize()); err != nil {
			b.Fatal(err)
		}
		var done atomic.Int64
		all := make(chan struct{})
		n := int64(b.N)
		c := newClient(b, pool, schema, h, func(ctx context.Context, job *river.Job[scriptArgs]) error {
			if done.Add(1) == n {
				close(all)
			}
			return nil
		}, func(cfg *river.Config) {
			cfg.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 100}}
			cfg.PollOnly = false
			cfg.JobTimeout = 0 // River's default (1 min) in both: heed adds its own attempt timeout on top
		})
		params := make([]river.InsertManyParams, b.N)
		for i := range params {
			params[i] = river.InsertManyParams{Args: scriptArgs{N: i}}
		}
		if _, err := c.InsertManyFast(ctx, params); err != nil {
			b.Fatal(err)
		}
		run = func() {
			if err := c.Start(ctx); err != nil {
				b.Fatal(err)
			}
			<-all
		}
		stop = func() {
			if err := c.Stop(ctx); err != nil {
				b.Fatal(err)
			}
		}
		return run, stop
	})
}

// BenchmarkWork is the middleware's own cost per job: one successful
// attempt of a no-op worker, outside River, under benchPolicy.
func BenchmarkWork(b *testing.B) {
	h := benchPolicy(b)
	ctx := context.Background()
	job := &rivertype.JobRow{ID: 1, Attempt: 1, MaxAttempts: 25, Metadata: []byte("{}")}
	noop := func(context.Context) error { return nil }
	b.ReportAllocs()
	for b.Loop() {
		if err := h.Work(ctx, job, noop); err != nil {
			b.Fatal(err)
		}
	}
}

// workCost is BenchmarkWork's figure, measured inline (testing.Benchmark
// cannot run inside a benchmark): CPU ns per call over 100,000 calls (CPU
// time, as the drains' cpu-ns/op, which a busy machine's waits do not
// inflate).
func workCost(b *testing.B) float64 {
	h := benchPolicy(b)
	ctx := context.Background()
	job := &rivertype.JobRow{ID: 1, Attempt: 1, MaxAttempts: 25, Metadata: []byte("{}")}
	noop := func(context.Context) error { return nil }
	const n = 100_000
	start := enginetest.CPUTime()
	for range n {
		if err := h.Work(ctx, job, noop); err != nil {
			b.Fatal(err)
		}
	}
	return float64(enginetest.CPUTime()-start) / n
}
