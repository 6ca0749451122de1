package compare

// heed's job queue beside River's, on one PostgreSQL server, with no-op
// jobs: the batch insert (heed's Client.EnqueueMany, River's InsertMany
// and InsertManyFast) and the drain of a full queue (heed's Worker at 10,
// 50 and 100 jobs at once, its default marked, River's client with 100
// workers, with River's default fetch settings and with the ones its own
// bench uses).
//
// One benchmark op is one job, and each run of a benchmark is one round:
// every variant does b.N jobs in turn, each over a fresh schema, in an
// order that rotates from one round to the next, so that a change of load
// on the machine falls on all of them alike. Each variant reports its own
// jobs/s and allocations per job ("heed-jobs/s", "river-InsertMany-jobs/s",
// ...); ns/op is the whole round's. Three alternating rounds of 100,000
// jobs, and their medians:
//
//	HEED_TEST_POSTGRES_URL=postgres://... go test -run '^$' \
//	    -bench 'Queue(Insert|Drain)$' -benchtime 100000x -count 3 -timeout 60m . | tee q.txt
//	benchstat q.txt
//
// They skip without HEED_TEST_POSTGRES_URL.

import (
	"context"
	"fmt"
	"runtime"
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

// insertBatch is how many jobs each batch insert call carries; fillBatch,
// how many each call that fills the queue before a drain carries.
const (
	insertBatch = 1000
	fillBatch   = 10_000
)

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
// cfg.Workers set it works the default queue with maxWorkers workers.
func openRiver(b *testing.B, maxWorkers int, cfg *river.Config) *river.Client[pgx.Tx] {
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
	if cfg.Workers != nil {
		cfg.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: maxWorkers}}
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

// inBatches calls insert with the sizes of n jobs cut into batches of
// size.
func inBatches(b *testing.B, n, size int, insert func(n int) error) {
	b.Helper()
	for left := n; left > 0; left -= size {
		if err := insert(min(left, size)); err != nil {
			b.Fatal(err)
		}
	}
}

// variant is one of the compared ways of doing n jobs. setup prepares
// them (untimed) and returns the timed part, which returns what is left
// to stop (untimed; nil for nothing).
type variant struct {
	name  string
	setup func(b *testing.B, n int) (timed func() (stop func()))
}

// rounds counts the rounds run with more than one job, to rotate the
// order of the variants.
var rounds atomic.Int64

// round runs every variant once for b.N jobs, in an order rotated by one
// place per round, and reports each one's jobs/s and allocations per job.
func round(b *testing.B, vs []variant) {
	first := 0
	if b.N > 1 {
		first = int(rounds.Add(1)-1) % len(vs)
	}
	type result struct{ jobsPerSec, allocsPerJob float64 }
	res := make([]result, len(vs))
	for k := range vs {
		i := (first + k) % len(vs)
		timed := vs[i].setup(b, b.N)
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		stop := timed()
		d := time.Since(start)
		runtime.ReadMemStats(&after)
		if stop != nil {
			stop()
		}
		res[i] = result{float64(b.N) / d.Seconds(), float64(after.Mallocs-before.Mallocs) / float64(b.N)}
	}
	for i, v := range vs {
		b.ReportMetric(res[i].jobsPerSec, v.name+"-jobs/s")
		b.ReportMetric(res[i].allocsPerJob, v.name+"-allocs/job")
	}
}

func BenchmarkQueueInsert(b *testing.B) {
	ctx := context.Background()
	round(b, []variant{
		{"heed", func(b *testing.B, n int) func() func() {
			c := queue.NewClient(openHeed(b), queue.ClientConfig{})
			return func() func() {
				inBatches(b, n, insertBatch, func(n int) error {
					_, err := c.EnqueueMany(ctx, heedItems(n))
					return err
				})
				return nil
			}
		}},
		{"river-InsertMany", func(b *testing.B, n int) func() func() {
			c := openRiver(b, 0, &river.Config{})
			return func() func() {
				inBatches(b, n, insertBatch, func(n int) error {
					_, err := c.InsertMany(ctx, riverParams(n))
					return err
				})
				return nil
			}
		}},
		{"river-InsertManyFast", func(b *testing.B, n int) func() func() {
			c := openRiver(b, 0, &river.Config{})
			return func() func() {
				inBatches(b, n, insertBatch, func(n int) error {
					_, err := c.InsertManyFast(ctx, riverParams(n))
					return err
				})
				return nil
			}
		}},
	})
}

// heedDrain is the drain of n jobs by a heed worker working the default
// queue with conc jobs at once (0: the worker's default).
func heedDrain(b *testing.B, n, conc int) func() func() {
	ctx := context.Background()
	s := openHeed(b)
	c := queue.NewClient(s, queue.ClientConfig{})
	inBatches(b, n, fillBatch, func(n int) error {
		_, err := c.EnqueueMany(ctx, heedItems(n))
		return err
	})
	var done atomic.Int64
	all := make(chan struct{})
	cfg := queue.WorkerConfig{
		Observe: func(_ context.Context, e queue.Event) {
			if e.Kind == queue.EventSucceeded && done.Add(1) == int64(n) {
				close(all)
			}
		},
	}
	if conc > 0 {
		cfg.Queues = map[string]int{queue.DefaultQueue: conc}
	}
	w, err := queue.NewWorker(s, cfg)
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
}

// riverDrain is the drain of n jobs by a River client with 100 workers,
// with the fetch settings in cfg (zero: River's defaults).
func riverDrain(b *testing.B, n int, cfg *river.Config) func() func() {
	ctx := context.Background()
	workers := river.NewWorkers()
	river.AddWorker(workers, &noopWorker{})
	cfg.Workers = workers
	c := openRiver(b, 100, cfg)
	inBatches(b, n, fillBatch, func(n int) error {
		_, err := c.InsertManyFast(ctx, riverParams(n))
		return err
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

func BenchmarkQueueDrain(b *testing.B) {
	var vs []variant
	for _, conc := range []int{10, 50, 100} {
		name := fmt.Sprintf("heed-%d", conc)
		if conc == (queue.WorkerConfig{}).WithDefaults().Queues[queue.DefaultQueue] {
			name += "-default" // the worker's Queues left nil
			conc = 0
		}
		vs = append(vs, variant{name, func(b *testing.B, n int) func() func() { return heedDrain(b, n, conc) }})
	}
	round(b, append(vs, []variant{
		{"river-100", func(b *testing.B, n int) func() func() { return riverDrain(b, n, &river.Config{}) }},
		// River's bench (cmd/river/riverbench) fetches with these.
		{"river-100-fastfetch", func(b *testing.B, n int) func() func() {
			return riverDrain(b, n, &river.Config{FetchCooldown: 2 * time.Millisecond, FetchPollInterval: 20 * time.Millisecond})
		}},
	}...))
}
