package compare

// heed's job queue beside River's SQLite driver (riversqlite over the same
// pure-Go modernc.org/sqlite), each on a fresh SQLite file in WAL mode,
// with no-op jobs: the batch insert (heed's Client.EnqueueMany, River's
// InsertMany, 1,000 jobs a call) and the drain of a full queue (heed's
// Worker at its default concurrency, River's client with 100 workers, with
// River's default fetch settings and with the ones its own bench uses).
// River's SQLite pool has one connection, as its driver's documentation
// advises; heed's store opens its own writer and readers.
//
// As in queue_test.go, one op is one job and each run is one round: every
// variant does b.N jobs in turn, in an order that rotates from one round
// to the next, and reports its own jobs/s ("heed-jobs/s",
// "river-InsertMany-jobs/s", ...). Three alternating rounds of 100,000
// jobs, and their medians:
//
//	go test -run '^$' -bench 'QueueSQLite' -benchtime 100000x -count 3 -timeout 60m . | tee s.txt
//	benchstat s.txt

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

// openRiverSQLite returns a River client with cfg (its fetch settings)
// over a fresh, migrated SQLite file, and its pool; with workers set it
// works the default queue with maxWorkers workers.
func openRiverSQLite(b *testing.B, maxWorkers int, workers *river.Workers, cfg *river.Config) (*river.Client[*sql.Tx], *sql.DB) {
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
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if workers != nil {
		cfg.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: maxWorkers}}
		cfg.Workers = workers
	}
	c, err := river.NewClient(driver, cfg)
	if err != nil {
		b.Fatal(err)
	}
	return c, db
}

func BenchmarkQueueSQLiteInsert(b *testing.B) {
	ctx := context.Background()
	round(b, []variant{
		{"heed", func(b *testing.B, n int) func() func() {
			c := queue.NewClient(openHeedSQLite(b), queue.ClientConfig{})
			return func() func() {
				inBatches(b, n, insertBatch, func(n int) error {
					_, err := c.EnqueueMany(ctx, heedItems(n))
					return err
				})
				return nil
			}
		}},
		{"river-InsertMany", func(b *testing.B, n int) func() func() {
			c, _ := openRiverSQLite(b, 0, nil, &river.Config{})
			return func() func() {
				inBatches(b, n, insertBatch, func(n int) error {
					_, err := c.InsertMany(ctx, riverParams(n))
					return err
				})
				return nil
			}
		}},
	})
}

func BenchmarkQueueSQLiteDrain(b *testing.B) {
	ctx := context.Background()
	round(b, []variant{
		{"heed", func(b *testing.B, n int) func() func() {
			s := openHeedSQLite(b)
			c := queue.NewClient(s, queue.ClientConfig{})
			inBatches(b, n, fillBatch, func(n int) error {
				_, err := c.EnqueueMany(ctx, heedItems(n))
				return err
			})
			var done atomic.Int64
			all := make(chan struct{})
			w, err := queue.NewWorker(s, queue.WorkerConfig{ // Queues nil: the default queue at DefaultConcurrency
				Observe: func(_ context.Context, e queue.Event) {
					if e.Kind == queue.EventSucceeded && done.Add(1) == int64(n) {
						close(all)
					}
				},
			})
			if err != nil {
				b.Fatal(err)
			}
			queue.Handle(w, "noop", func(context.Context, *queue.Job, struct{}) error { return nil })
			return func() func() {
				if err := w.Start(ctx); err != nil {
					b.Fatal(err)
				}
				<-all
				return func() {
					sctx, cancel := context.WithTimeout(ctx, time.Minute)
					defer cancel()
					if err := w.Shutdown(sctx); err != nil {
						b.Fatal(err)
					}
				}
			}
		}},
		{"river-100", func(b *testing.B, n int) func() func() { return riverSQLiteDrain(b, n, &river.Config{}) }},
		// River's bench (cmd/river/riverbench) fetches with these.
		{"river-100-fastfetch", func(b *testing.B, n int) func() func() {
			return riverSQLiteDrain(b, n, &river.Config{FetchCooldown: 2 * time.Millisecond, FetchPollInterval: 20 * time.Millisecond})
		}},
	})
}

// riverSQLiteDrain is the drain of n jobs by a River client with 100
// workers over SQLite, with the fetch settings in cfg (zero: River's
// defaults).
func riverSQLiteDrain(b *testing.B, n int, cfg *river.Config) func() func() {
	ctx := context.Background()
	workers := river.NewWorkers()
	river.AddWorker(workers, &noopWorker{})
	c, db := openRiverSQLite(b, 100, workers, cfg)
	inBatches(b, n, fillBatch, func(n int) error {
		// A transaction per call: River's SQLite InsertMany
		// inserts row by row.
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if _, err := c.InsertManyTx(ctx, tx, riverParams(n)); err != nil {
			return err
		}
		return tx.Commit()
	})
	events, cancelSub := c.SubscribeConfig(&river.SubscribeConfig{ChanSize: n + 1, Kinds: []river.EventKind{river.EventKindJobCompleted}})
	b.Cleanup(cancelSub)
	return func() func() {
		if err := c.Start(ctx); err != nil {
			b.Fatal(err)
		}
		for range n {
			<-events
		}
		return func() {
			sctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			if err := c.Stop(sctx); err != nil {
				b.Fatal(err)
			}
		}
	}
}
