package compare

// heed's job queue beside River's SQLite driver (riversqlite over the same
// pure-Go modernc.org/sqlite), each on a fresh SQLite file in WAL mode,
// with no-op jobs: the batch insert (heed's Client.EnqueueMany, River's
// InsertMany) and the drain of a full queue (heed's Worker at its default
// concurrency, River's client with 100 workers). River's SQLite pool has
// one connection, as its driver's documentation advises; heed's store
// opens its own writer and readers. One op is one job. Run them
// alternating, 100,000 jobs, 3 times:
//
//	go test -run '^$' -bench 'QueueSQLite' -benchtime 100000x -count 3 .
//
// Each benchmark reports jobs/s.

import (
	"context"
	"database/sql"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	_ "modernc.org/sqlite" // the "sqlite" driver River's SQLite driver runs on

	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/sqlitestore"
)

func openHeedSQLite(b *testing.B) *sqlitestore.Store {
	b.Helper()
	s, err := sqlitestore.Open(b.Context(), filepath.Join(b.TempDir(), "heed.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// openRiverSQLite returns a River client over a fresh, migrated SQLite
// file; with maxWorkers > 0 it works the default queue with that many
// workers.
func openRiverSQLite(b *testing.B, maxWorkers int, workers *river.Workers) *river.Client[*sql.Tx] {
	b.Helper()
	path := filepath.Join(b.TempDir(), "river.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_busy_timeout=10000&_journal_mode=WAL&_synchronous=NORMAL&_txlock=immediate")
	if err != nil {
		b.Fatal(err)
	}
	db.SetMaxOpenConns(1) // as riversqlite's documentation advises
	b.Cleanup(func() { db.Close() })
	driver := riversqlite.New(db)
	m, err := rivermigrate.New(driver, nil)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := m.Migrate(b.Context(), rivermigrate.DirectionUp, nil); err != nil {
		b.Fatal(err)
	}
	cfg := &river.Config{Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
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

func BenchmarkQueueSQLiteInsert(b *testing.B) {
	ctx := context.Background()
	b.Run("heed-EnqueueMany", func(b *testing.B) {
		c := queue.NewClient(openHeedSQLite(b), queue.ClientConfig{})
		b.ReportAllocs()
		b.ResetTimer()
		batches(b, func(n int) error {
			_, err := c.EnqueueMany(ctx, heedItems(n))
			return err
		})
	})
	b.Run("river-InsertMany", func(b *testing.B) {
		c := openRiverSQLite(b, 0, nil)
		b.ReportAllocs()
		b.ResetTimer()
		batches(b, func(n int) error {
			_, err := c.InsertMany(ctx, riverParams(n))
			return err
		})
	})
}

func BenchmarkQueueSQLiteDrain(b *testing.B) {
	ctx := context.Background()
	b.Run("heed-default", func(b *testing.B) {
		s := openHeedSQLite(b)
		c := queue.NewClient(s, queue.ClientConfig{})
		for left := b.N; left > 0; left -= 10_000 {
			if _, err := c.EnqueueMany(ctx, heedItems(min(left, 10_000))); err != nil {
				b.Fatal(err)
			}
		}
		var done atomic.Int64
		all := make(chan struct{})
		w, err := queue.NewWorker(s, queue.WorkerConfig{ // Queues nil: the default queue at DefaultConcurrency
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
	b.Run("river-100", func(b *testing.B) {
		workers := river.NewWorkers()
		river.AddWorker(workers, &noopWorker{})
		c := openRiverSQLite(b, 100, workers)
		for left := b.N; left > 0; left -= 10_000 {
			if _, err := c.InsertMany(ctx, riverParams(min(left, 10_000))); err != nil {
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
