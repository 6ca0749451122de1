package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
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
func fill(b testing.TB, s *Store, n int) {
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
						jobs, err := s.JobClaim(ctx, jobstore.ClaimParams{Queue: queue.DefaultQueue, Limit: bc.batch,
							Now: t0, LeaseUntil: t0.Add(time.Minute), Worker: worker})
						if err != nil {
							b.Error(err)
							return
						}
						var jobsWG sync.WaitGroup
						for _, j := range jobs {
							jobsWG.Go(func() {
								err := s.JobTransition(ctx, jobstore.Transition{ID: j.ID, LeaseToken: j.LeaseToken,
									State: jobstore.StateSucceeded, Attempt: j.Attempt, FinishedAt: t0,
									Entry: jobstore.Attempt{Attempt: j.Attempt, Worker: worker, StartedAt: t0, FinishedAt: t0, Outcome: "success", Action: "done", Reason: "success"}})
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
// queue.Worker does with a jobstore.TransitionBatcher.
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
				jobs, err := s.JobClaim(ctx, jobstore.ClaimParams{Queue: queue.DefaultQueue, Limit: batch,
					Now: t0, LeaseUntil: t0.Add(time.Minute), Worker: worker})
				if err != nil {
					b.Error(err)
					return
				}
				ts := make([]jobstore.Transition, len(jobs))
				for i, j := range jobs {
					ts[i] = jobstore.Transition{ID: j.ID, LeaseToken: j.LeaseToken, State: jobstore.StateSucceeded, Attempt: j.Attempt, FinishedAt: t0,
						Entry: jobstore.Attempt{Attempt: j.Attempt, Worker: worker, StartedAt: t0, FinishedAt: t0, Outcome: "success", Action: "done", Reason: "success"}}
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

// BenchmarkClaimDurability is BenchmarkClaimComplete with the claim
// committed durably (claimSQL, as the store claims) and lazily (claimSQL
// without its synchronous_commit, as before the attempt limit had to hold
// through a crash of the server), side by side: the cost of a durable
// start of every attempt, per job.
func BenchmarkClaimDurability(b *testing.B) {
	durable := claimSQL
	lazy := func(cond string) string {
		return strings.Replace(durable(cond), "\n\t\tAND (SELECT set_config('synchronous_commit', 'on', true)) = 'on'", "", 1)
	}
	if lazy("") == durable("") {
		b.Fatal("claimSQL has no durable commit to take out")
	}
	defer func() { claimSQL = durable }()
	for _, bc := range []struct{ workers, batch int }{{1, 1}, {4, 10}, {2, 50}} {
		for _, mode := range []struct {
			name string
			sql  func(cond string) string
		}{{"lazy", lazy}, {"durable", durable}} {
			b.Run(fmt.Sprintf("workers=%d,batch=%d,claim=%s", bc.workers, bc.batch, mode.name), func(b *testing.B) {
				claimSQL = mode.sql
				s := openTest(b)
				ctx := context.Background()
				fill(b, s, b.N)
				var left atomic.Int64
				left.Store(int64(b.N))
				b.ResetTimer()
				var wg sync.WaitGroup
				for w := range bc.workers {
					wg.Go(func() {
						worker := fmt.Sprint("w", w)
						for left.Load() > 0 {
							jobs, err := s.JobClaim(ctx, jobstore.ClaimParams{Queue: queue.DefaultQueue, Limit: bc.batch,
								Now: t0, LeaseUntil: t0.Add(time.Minute), Worker: worker})
							if err != nil {
								b.Error(err)
								return
							}
							var jobsWG sync.WaitGroup
							for _, j := range jobs {
								jobsWG.Go(func() {
									err := s.JobTransition(ctx, jobstore.Transition{ID: j.ID, LeaseToken: j.LeaseToken,
										State: jobstore.StateSucceeded, Attempt: j.Attempt, FinishedAt: t0,
										Entry: jobstore.Attempt{Attempt: j.Attempt, Worker: worker, StartedAt: t0, FinishedAt: t0, Outcome: "success", Action: "done", Reason: "success"}})
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
			})
		}
	}
}

// TestClaimCommitsDurably: a claim on the worker pool sets
// synchronous_commit for its own transaction only, and leaves the
// connection's setting (off) as it was.
func TestClaimCommitsDurably(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	fill(t, s, 3)
	conn, err := s.lazy.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	var before, inside, after string
	if err := conn.QueryRow(ctx, "SHOW synchronous_commit").Scan(&before); err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := tx.Query(ctx, claimSQL(""), queue.DefaultQueue, t0, 1, t0.Add(time.Minute), "w")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		n++
	}
	if rows.Err() != nil || n != 1 {
		t.Fatalf("claimed %d: %v", n, rows.Err())
	}
	if err := tx.QueryRow(ctx, "SHOW synchronous_commit").Scan(&inside); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, "SHOW synchronous_commit").Scan(&after); err != nil {
		t.Fatal(err)
	}
	if before != "off" || inside != "on" || after != "off" {
		t.Errorf("synchronous_commit before, during and after a claim: %s, %s, %s; want off, on, off", before, inside, after)
	}
}
