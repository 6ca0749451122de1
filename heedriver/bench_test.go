package heedriver_test

import (
	"context"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/heed-go/heed/breaker"
	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/heedriver"
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
// in drainRounds alternating rounds: each op is one job, from the client's start until its
// worker has run for every job (the stop is not counted). cpu-ns/op is the
// process's CPU time (user and system) per job, which a busy machine
// disturbs less than the wall time. The log at the end gives each variant's
// median and least (its least disturbed round), and heed's own work per job
// measured between the rounds beside the engine's CPU per job. Run it with a
// fixed count of jobs:
//
//	go test -run '^$' -bench Drain -benchtime 10000x -cpu 2 -v .
func BenchmarkDrain(b *testing.B) {
	pool, schema := openSchema(b)
	ctx := context.Background()
	wall, cpu := map[bool][]float64{}, map[bool][]float64{}
	var own []float64 // heed's own work per job, measured once a round
	for range drainRounds {
		own = append(own, workCost(b))
		for _, heed := range []bool{false, true} {
			name := "river"
			if heed {
				name = "river+heed"
			}
			b.Run(name, func(b *testing.B) {
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
				cpu0 := cpuTime()
				b.ResetTimer()
				if err := c.Start(ctx); err != nil {
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
				if err := c.Stop(ctx); err != nil {
					b.Fatal(err)
				}
			})
		}
	}
	if len(wall[true]) > 0 {
		b.Logf("heed's own work per job (as BenchmarkWork, once a round): median %.0f ns CPU, %.1f%% of River's median CPU per job",
			median(own), 100*median(own)/median(cpu[false]))
		for _, st := range []struct {
			name string
			f    func([]float64) float64
		}{{"medians", median}, {"least", slices.Min[[]float64]}} {
			mw, mc := st.f(wall[false]), st.f(cpu[false])
			hw, hc := st.f(wall[true]), st.f(cpu[true])
			b.Logf("%s of %d rounds, per job: river %.0f ns wall, %.0f ns CPU; river+heed %.0f ns wall (%+.1f%%), %.0f ns CPU (%+.1f%%)",
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
	start := cpuTime()
	for range n {
		if err := h.Work(ctx, job, noop); err != nil {
			b.Fatal(err)
		}
	}
	return float64(cpuTime()-start) / n
}
