package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heed-go/heed/queue"
)

// BenchmarkInsert measures JobInsert of one job, one at a time and from
// parallel goroutines.
func BenchmarkInsert(b *testing.B) {
	b.Run("serial", func(b *testing.B) {
		s := openTest(b)
		ctx := context.Background()
		in := newInsert(b, "bench", queue.EnqueueOptions{})
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := s.JobInsert(ctx, in); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
	})
	b.Run("parallel", func(b *testing.B) {
		s := openTest(b)
		ctx := context.Background()
		in := newInsert(b, "bench", queue.EnqueueOptions{})
		b.ReportAllocs()
		b.SetParallelism(16) // 16 × GOMAXPROCS goroutines, as request handlers
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, _, err := s.JobInsert(ctx, in); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
		if n := s.insert.batches.Load(); n > 0 {
			b.ReportMetric(float64(s.insert.batched.Load())/float64(n), "jobs/batch")
		}
	})
}

// fill inserts n available jobs in one statement.
func fill(b *testing.B, s *Store, n int) {
	b.Helper()
	_, err := s.Pool().Exec(context.Background(), `INSERT INTO heed_jobs (kind, queue, args, state, available_at, created_at)
		SELECT 'bench', 'default', '{}', 'available', $1, $1 FROM generate_series(1, $2)`, t0, n)
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkClaimComplete measures the life of a job in the store: a claim
// and a transition to succeeded. One op is one job. Each of the workers
// claims up to batch jobs at a time and finishes them concurrently, one
// goroutine per job, as queue's workers run handlers; workers=1,batch=1 is
// the latency of one job alone.
func BenchmarkClaimComplete(b *testing.B) {
	for _, bc := range []struct{ workers, batch int }{{1, 1}, {4, 10}, {2, 50}} {
		b.Run(fmt.Sprintf("workers=%d,batch=%d", bc.workers, bc.batch), func(b *testing.B) {
			s := openTest(b)
			ctx := context.Background()
			fill(b, s, b.N)
			var left atomic.Int64
			left.Store(int64(b.N))
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			for w := range bc.workers {
				wg.Go(func() {
					worker := fmt.Sprint("w", w)
					for left.Load() > 0 {
						jobs, err := s.JobClaim(ctx, queue.ClaimParams{Queue: queue.DefaultQueue, Limit: bc.batch,
							Now: t0, LeaseUntil: t0.Add(time.Minute), Worker: worker})
						if err != nil {
							b.Error(err)
							return
						}
						var jobsWG sync.WaitGroup
						for _, j := range jobs {
							jobsWG.Go(func() {
								err := s.JobTransition(ctx, queue.Transition{ID: j.ID, LeaseToken: j.LeaseToken,
									State: queue.StateSucceeded, Attempt: j.Attempt, FinishedAt: t0,
									Entry: queue.Attempt{Attempt: j.Attempt, Worker: worker, StartedAt: t0, FinishedAt: t0, Outcome: "success", Action: "done", Reason: "success"}})
								if err != nil {
									b.Error(err)
								}
								left.Add(-1)
							})
						}
						jobsWG.Wait()
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
			if n := s.batch.batches.Load(); n > 0 {
				b.ReportMetric(float64(s.batch.batched.Load())/float64(n), "jobs/batch")
			}
		})
	}
}

// BenchmarkClaimTransitions is BenchmarkClaimComplete with the batch API:
// each claimed batch is finished with one JobTransitions call, as
// queue.Worker does with a queue.TransitionBatcher.
func BenchmarkClaimTransitions(b *testing.B) {
	const workers, batch = 2, 50
	s := openTest(b)
	ctx := context.Background()
	fill(b, s, b.N)
	var left atomic.Int64
	left.Store(int64(b.N))
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			worker := fmt.Sprint("w", w)
			for left.Load() > 0 {
				jobs, err := s.JobClaim(ctx, queue.ClaimParams{Queue: queue.DefaultQueue, Limit: batch,
					Now: t0, LeaseUntil: t0.Add(time.Minute), Worker: worker})
				if err != nil {
					b.Error(err)
					return
				}
				ts := make([]queue.Transition, len(jobs))
				for i, j := range jobs {
					ts[i] = queue.Transition{ID: j.ID, LeaseToken: j.LeaseToken, State: queue.StateSucceeded, Attempt: j.Attempt, FinishedAt: t0,
						Entry: queue.Attempt{Attempt: j.Attempt, Worker: worker, StartedAt: t0, FinishedAt: t0, Outcome: "success", Action: "done", Reason: "success"}}
				}
				errs, err := s.JobTransitions(ctx, ts)
				if err == nil {
					err = errors.Join(errs...)
				}
				if err != nil {
					b.Error(err)
					return
				}
				left.Add(-int64(len(jobs)))
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}
