package heedasynq_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/heed-go/heed/breaker"
	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/heedasynq"
	"github.com/heed-go/heed/internal/enginetest"
	"github.com/heed-go/heed/retry"
)

// benchPolicy is heed's policy as a user would have it: a retry budget, a
// breaker and an attempt timeout.
func benchPolicy(b *testing.B, opt asynq.RedisConnOpt) *heedasynq.Policy {
	bu, _ := budget.New(budget.Config{})
	br, _ := breaker.New(breaker.Config{})
	return newPolicy(b, retry.Policy{Budget: bu, Breaker: br, AttemptTimeout: time.Minute}, opt)
}

// drainRounds is how many times BenchmarkDrain runs each variant, one after
// the other, so that a busy machine weighs on both alike.
const drainRounds = 7

// BenchmarkDrain is asynq's per-task cost in a drain of no-op tasks, without
// and with heed's middleware, RetryDelay and IsFailure, side by side, in
// drainRounds alternating rounds (enginetest.Drain): each op is one task,
// from the server's start until its handler has run for every task (the
// shutdown, which waits for asynq's background loops, is not counted). The
// log at the end gives each variant's median and least, and heed's own
// work per job measured between the rounds beside the engine's CPU per
// job. Run it with a fixed count of tasks:
//
//	go test -run '^$' -bench Drain -benchtime 10000x -cpu 2 -v .
func BenchmarkDrain(b *testing.B) {
	enginetest.Drain(b, drainRounds, "asynq", "asynq", "BenchmarkMiddleware", middlewareCost, func(b *testing.B, heed bool) (run, stop func()) {
		opt, q := openQueue(b)
		var h *heedasynq.Policy
		if heed {
			h = benchPolicy(b, opt)
		}
		c := asynq.NewClient(opt)
		for i := range b.N {
			if _, err := c.Enqueue(asynq.NewTask(taskType, nil), asynq.Queue(q)); err != nil {
				b.Fatalf("task %d: %v", i, err)
			}
		}
		c.Close()
		var done atomic.Int64
		all := make(chan struct{})
		n := int64(b.N)
		cfg := asynq.Config{
			Queues:            map[string]int{q: 1},
			Concurrency:       20,
			TaskCheckInterval: 20 * time.Millisecond,
			Logger:            quiet{},
			LogLevel:          asynq.FatalLevel,
		}
		mux := asynq.NewServeMux()
		if h != nil {
			cfg.RetryDelayFunc, cfg.IsFailure = h.RetryDelay, h.IsFailure
			mux.Use(h.Middleware)
		}
		mux.HandleFunc(taskType, func(context.Context, *asynq.Task) error {
			if done.Add(1) == n {
				close(all)
			}
			return nil
		})
		srv := asynq.NewServer(opt, cfg)
		run = func() {
			if err := srv.Start(mux); err != nil {
				b.Fatal(err)
			}
			<-all
		}
		return run, srv.Shutdown
	})
}

// BenchmarkMiddleware is the middleware's own cost per task: one
// successful attempt of a no-op handler, outside asynq, under benchPolicy.
func BenchmarkMiddleware(b *testing.B) {
	h := benchPolicy(b, nil)
	ctx := context.Background()
	task := asynq.NewTask(taskType, nil)
	handler := h.Middleware(asynq.HandlerFunc(func(context.Context, *asynq.Task) error { return nil }))
	b.ReportAllocs()
	for b.Loop() {
		if err := handler.ProcessTask(ctx, task); err != nil {
			b.Fatal(err)
		}
	}
}

// middlewareCost is BenchmarkMiddleware's figure, measured inline
// (testing.Benchmark cannot run inside a benchmark): CPU ns per call
// over 100,000 calls (CPU time, as the drains' cpu-ns/op, which a busy
// machine's waits do not inflate).
func middlewareCost(b *testing.B) float64 {
	h := benchPolicy(b, nil)
	ctx := context.Background()
	task := asynq.NewTask(taskType, nil)
	handler := h.Middleware(asynq.HandlerFunc(func(context.Context, *asynq.Task) error { return nil }))
	const n = 100_000
	start := enginetest.CPUTime()
	for range n {
		if err := handler.ProcessTask(ctx, task); err != nil {
			b.Fatal(err)
		}
	}
	return float64(enginetest.CPUTime()-start) / n
}
