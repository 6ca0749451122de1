package heedasynq_test

import (
	"context"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/heed-go/heed/breaker"
	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/heedasynq"
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
// drainRounds alternating rounds: each op is one task, from the server's
// start until its handler has run for every task (the shutdown, which waits
// for asynq's background loops, is not counted). cpu-ns/op is the process's
// CPU time (user and system) per task, which a busy machine disturbs less
// than the wall time. The log at the end gives each variant's median and
// least (its least disturbed round), and heed's own work per job measured
// between the rounds beside the engine's CPU per job. Run it with a fixed
// count of tasks:
//
//	go test -run '^$' -bench Drain -benchtime 10000x -cpu 2 -v .
func BenchmarkDrain(b *testing.B) {
	wall, cpu := map[bool][]float64{}, map[bool][]float64{}
	var own []float64 // heed's own work per job, measured once a round
	for range drainRounds {
		own = append(own, middlewareCost(b))
		for _, heed := range []bool{false, true} {
			name := "asynq"
			if heed {
				name = "asynq+heed"
			}
			b.Run(name, func(b *testing.B) {
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
				cpu0 := cpuTime()
				b.ResetTimer()
				if err := srv.Start(mux); err != nil {
					b.Fatal(err)
				}
				<-all
				b.StopTimer()
				perJob := float64(cpuTime()-cpu0) / float64(b.N)
				b.ReportMetric(perJob, "cpu-ns/op")
				if b.N > 1 {
					wall[heed] = append(wall[heed], float64(b.Elapsed())/float64(b.N))
					cpu[heed] = append(cpu[heed], perJob)
				}
				srv.Shutdown()
			})
		}
	}
	if len(wall[true]) > 0 {
		b.Logf("heed's own work per job (as BenchmarkMiddleware, once a round): median %.0f ns CPU, %.1f%% of asynq's median CPU per job",
			median(own), 100*median(own)/median(cpu[false]))
		for _, st := range []struct {
			name string
			f    func([]float64) float64
		}{{"medians", median}, {"least", slices.Min[[]float64]}} {
			mw, mc := st.f(wall[false]), st.f(cpu[false])
			hw, hc := st.f(wall[true]), st.f(cpu[true])
			b.Logf("%s of %d rounds, per job: asynq %.0f ns wall, %.0f ns CPU; asynq+heed %.0f ns wall (%+.1f%%), %.0f ns CPU (%+.1f%%)",
				st.name, len(wall[true]), mw, mc, hw, 100*(hw/mw-1), hc, 100*(hc/mc-1))
		}
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// cpuTime is the process's CPU time so far (user and system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
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
	start := cpuTime()
	for range n {
		if err := handler.ProcessTask(ctx, task); err != nil {
			b.Fatal(err)
		}
	}
	return float64(cpuTime()-start) / n
}
