package compare

// The steady state of heed's queue: jobs enqueued at a steady 500 jobs/s
// (one Client.Enqueue every 2 ms, on schedule) while one worker with the
// default configuration runs them, on SQLite and on PostgreSQL. Each job's
// latency is the time its handler starts minus the time it was enqueued
// (its CreatedAt, taken by the client as it enqueues). One op is one job,
// so -benchtime 5000x is 10 s at 500 jobs/s:
//
//	HEED_TEST_POSTGRES_URL=postgres://... go test -run '^$' \
//	    -bench 'QueueLatency' -benchtime 5000x -count 3 .
//
// It reports p50_ms, p99_ms and max_ms of the latency, the p99 of the
// Enqueue calls themselves (enq_p99_ms: the insert and its commit, which
// the latency includes), the rate the jobs were enqueued at (jobs/s,
// below 500 when enqueueing fell behind), and how late a goroutine that
// sleeps 1 ms in a loop meanwhile wakes (sleep_late_p99_ms): on a loaded
// machine, the time a ready goroutine waits for a core, which no queue
// can beat.
// The PostgreSQL run skips without HEED_TEST_POSTGRES_URL.

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
)

// steadyRate is the enqueue rate of BenchmarkQueueLatency, in jobs/s.
const steadyRate = 500

func BenchmarkQueueLatency(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) { steady(b, openHeedSQLite(b)) })
	b.Run("postgres", func(b *testing.B) { steady(b, openHeed(b)) })
}

// steady enqueues b.N no-op jobs into s at steadyRate while a worker with
// the default configuration runs them, and reports the percentiles of
// their enqueue-to-start latency.
func steady(b *testing.B, s jobstore.Store) {
	ctx := context.Background()
	c := queue.NewClient(s, queue.ClientConfig{})
	var mu sync.Mutex
	lat := make([]time.Duration, 0, b.N)
	all := make(chan struct{})
	w, err := queue.NewWorker(s, queue.WorkerConfig{})
	if err != nil {
		b.Fatal(err)
	}
	queue.Handle(w, "noop", func(_ context.Context, job *queue.Job, _ struct{}) error {
		d := time.Since(job.CreatedAt)
		mu.Lock()
		lat = append(lat, d)
		if len(lat) == b.N {
			close(all)
		}
		mu.Unlock()
		return nil
	})
	if err := w.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := w.Shutdown(sctx); err != nil {
			b.Error(err)
		}
	}()
	// The machine's share: how late a goroutine that sleeps 1 ms wakes,
	// measured throughout (on a loaded machine it waits for a core).
	var late []time.Duration
	probeStop, probeDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(probeDone)
		for {
			select {
			case <-probeStop:
				return
			default:
			}
			t := time.Now()
			time.Sleep(time.Millisecond)
			late = append(late, time.Since(t)-time.Millisecond)
		}
	}()
	b.ResetTimer()
	enq := make([]time.Duration, 0, b.N) // each Enqueue call: the insert and its commit
	interval := time.Second / steadyRate
	start := time.Now()
	for i := range b.N {
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		t := time.Now()
		if _, _, err := c.Enqueue(ctx, "noop", nil, queue.EnqueueOptions{}); err != nil {
			b.Fatal(err)
		}
		enq = append(enq, time.Since(t))
	}
	rate := float64(b.N) / time.Since(start).Seconds()
	select {
	case <-all:
	case <-time.After(time.Minute):
		b.Fatalf("%d of %d jobs started within a minute of the last enqueue", len(lat), b.N)
	}
	b.StopTimer()
	close(probeStop)
	<-probeDone
	b.ReportMetric(quantileMS(late, 0.99), "sleep_late_p99_ms")
	mu.Lock()
	defer mu.Unlock()
	b.ReportMetric(quantileMS(lat, 0.50), "p50_ms")
	b.ReportMetric(quantileMS(lat, 0.99), "p99_ms")
	b.ReportMetric(quantileMS(lat, 1), "max_ms")
	b.ReportMetric(quantileMS(enq, 0.99), "enq_p99_ms")
	b.ReportMetric(rate, "jobs/s")
}

// quantileMS returns the q-quantile of ds (q = 1: the largest), in
// milliseconds, sorting ds (0 when ds is empty).
func quantileMS(ds []time.Duration, q float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return float64(ds[min(len(ds)-1, int(q*float64(len(ds))))]) / float64(time.Millisecond)
}
