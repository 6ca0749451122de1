package compare

// heed's job queue beside River's, on one PostgreSQL server, with no-op
// jobs: the batch insert (heed's Client.EnqueueMany, River's InsertMany and
// InsertManyFast) and the drain of a full queue (heed's Worker at 50 and
// 100 jobs at once, River's client with 100 workers). One op is one job;
// each library gets a fresh schema. Run them alternating, 100,000 jobs, 3
// times:
//
//	HEED_TEST_POSTGRES_URL=postgres://... go test -run '^$' \
//	    -bench 'Queue' -benchtime 100000x -count 3 ./...
//
// Each benchmark reports jobs/s. They skip without HEED_TEST_POSTGRES_URL.

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/heed-go/heed/pgstore"
	"github.com/heed-go/heed/pgstore/pgstoretest"
	"github.com/heed-go/heed/queue"
)

// insertBatch is how many jobs each batch insert call carries.
const insertBatch = 1000

type noopArgs struct{}

func (noopArgs) Kind() string { return "noop" }

type noopWorker struct {
	river.WorkerDefaults[noopArgs]
}

func (noopWorker) Work(context.Context, *river.Job[noopArgs]) error { return nil }

func openHeed(b *testing.B) *pgstore.Store {
	b.Helper()
	_, url := pgstoretest.Schema(b)
	s, err := pgstore.Open(b.Context(), url)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// openRiver returns a River client over a fresh, migrated schema; with
// maxWorkers > 0 it works the default queue with that many workers.
func openRiver(b *testing.B, maxWorkers int, workers *river.Workers) *river.Client[pgx.Tx] {
	b.Helper()
	_, url := pgstoretest.Schema(b)
	pool, err := pgxpool.New(b.Context(), url)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	driver := riverpgxv5.New(pool)
	m, err := rivermigrate.New(driver, nil)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := m.Migrate(b.Context(), rivermigrate.DirectionUp, nil); err != nil {
		b.Fatal(err)
	}
	cfg := &river.Config{Logger: nil}
	if maxWorkers > 0 {
		cfg.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: maxWorkers}}
		cfg.Workers = workers
	}
	c, err := river.NewClient(driver, cfg)
	if err != nil {
		b.Fatal(err)
	}
	return c
}

func heedItems(n int) []queue.EnqueueItem {
	items := make([]queue.EnqueueItem, n)
	for i := range items {
		items[i] = queue.EnqueueItem{Kind: "noop", Args: []byte("{}")}
	}
	return items
}

func riverParams(n int) []river.InsertManyParams {
	ps := make([]river.InsertManyParams, n)
	for i := range ps {
		ps[i] = river.InsertManyParams{Args: noopArgs{}}
	}
	return ps
}

// batches calls insert with the sizes of b.N jobs cut into insertBatch.
func batches(b *testing.B, insert func(n int) error) {
	for left := b.N; left > 0; left -= insertBatch {
		if err := insert(min(left, insertBatch)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}

func BenchmarkQueueInsert(b *testing.B) {
	ctx := context.Background()
	b.Run("heed-EnqueueMany", func(b *testing.B) {
		c := queue.NewClient(openHeed(b), queue.ClientConfig{})
		b.ReportAllocs()
		b.ResetTimer()
		batches(b, func(n int) error {
			_, err := c.EnqueueMany(ctx, heedItems(n))
			return err
		})
	})
	b.Run("river-InsertMany", func(b *testing.B) {
		c := openRiver(b, 0, nil)
		b.ReportAllocs()
		b.ResetTimer()
		batches(b, func(n int) error {
			_, err := c.InsertMany(ctx, riverParams(n))
			return err
		})
	})
	b.Run("river-InsertManyFast", func(b *testing.B) {
		c := openRiver(b, 0, nil)
		b.ReportAllocs()
		b.ResetTimer()
		batches(b, func(n int) error {
			_, err := c.InsertManyFast(ctx, riverParams(n))
			return err
		})
	})
}

func BenchmarkQueueDrain(b *testing.B) {
	ctx := context.Background()
	for _, conc := range []int{50, 100} {
		b.Run(fmt.Sprintf("heed-%d", conc), func(b *testing.B) {
			s := openHeed(b)
			c := queue.NewClient(s, queue.ClientConfig{})
			for left := b.N; left > 0; left -= 10_000 {
				if _, err := c.EnqueueMany(ctx, heedItems(min(left, 10_000))); err != nil {
					b.Fatal(err)
				}
			}
			var done atomic.Int64
			all := make(chan struct{})
			w, err := queue.NewWorker(s, queue.WorkerConfig{
				Queues: map[string]int{queue.DefaultQueue: conc},
				Observe: func(_ context.Context, e queue.Event) {
					if e.Kind == queue.EventSucceeded && done.Add(1) == int64(b.N) {
						close(all)
					}
				},
			})
			if err != nil {
				b.Fatal(err)
			}
			queue.Handle(w, "noop", func(context.Context, *queue.Job, struct{}) error { return nil })
			b.ReportAllocs()
			b.ResetTimer()
			if err := w.Start(ctx); err != nil {
				b.Fatal(err)
			}
			<-all
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
			sctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			if err := w.Shutdown(sctx); err != nil {
				b.Fatal(err)
			}
		})
	}
	b.Run("river-100", func(b *testing.B) {
		workers := river.NewWorkers()
		river.AddWorker(workers, &noopWorker{})
		c := openRiver(b, 100, workers)
		for left := b.N; left > 0; left -= 10_000 {
			if _, err := c.InsertManyFast(ctx, riverParams(min(left, 10_000))); err != nil {
				b.Fatal(err)
			}
		}
		events, cancelSub := c.SubscribeConfig(&river.SubscribeConfig{ChanSize: b.N + 1, Kinds: []river.EventKind{river.EventKindJobCompleted}})
		defer cancelSub()
		b.ReportAllocs()
		b.ResetTimer()
		if err := c.Start(ctx); err != nil {
			b.Fatal(err)
		}
		for range b.N {
			<-events
		}
		b.StopTimer()
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
		sctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := c.Stop(sctx); err != nil {
			b.Fatal(err)
		}
	})
}
