package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mattn/go-isatty"

	"github.com/heed-go/heed/internal/jobkinds"
	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/storeurl"
)

var jobsBenchDoc = helpDoc{
	file: "jobs-bench",
	groups: []flagGroup{
		{"Benchmark flags", []string{"jobs", "concurrency", "inserters", "rate", "duration", "burn", "steady", "cpuprofile"}},
		{"Database flags", []string{"db"}},
	},
}

// jobsBenchMain is "heed jobs bench".
func jobsBenchMain(ctx context.Context, s streams, args []string) int {
	const name = "jobs bench"
	fs := newFlagSet(name)
	dbFlag := fs.String("db", "", "the `DATABASE`: a SQLite file or a postgres:// URL (default: a new temporary SQLite file)")
	n := fs.Int("jobs", 100_000, "burn-down: jobs to insert, then drain")
	conc := fs.Int("concurrency", 50, "jobs the worker runs at once")
	inserters := fs.Int("inserters", 4, "burn-down: goroutines inserting jobs")
	rate := fs.Float64("rate", 500, "steady state: jobs enqueued per second")
	dur := durationFlag(fs, "duration", 10*time.Second, "steady state: how long to enqueue")
	burn := fs.Bool("burn", true, "run the burn-down")
	steady := fs.Bool("steady", true, "run the steady state")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the benchmark to `FILE` (go tool pprof FILE)")
	if code, done := parseFlags(fs, args, s, jobsBenchDoc); done {
		return code
	}
	switch {
	case fs.NArg() > 0:
		return usageError(s, name, fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	case *n < 1, *conc < 1, *inserters < 1:
		return usageError(s, name, errors.New("--jobs, --concurrency and --inserters must be at least 1"))
	case !(*rate > 0) || *dur <= 0:
		return usageError(s, name, errors.New("--rate and --duration must be positive"))
	case !*burn && !*steady:
		return usageError(s, name, errors.New("nothing to run: --burn=false and --steady=false"))
	}
	dsn := *dbFlag
	if dsn == "" {
		dir, err := os.MkdirTemp("", "heed-bench-")
		if err != nil {
			return jobsFail(ctx, s, name, err)
		}
		defer os.RemoveAll(dir)
		dsn = filepath.Join(dir, "bench.db")
	}
	d, err := openDB(ctx, dsn, openMigrate, poolSizeFor(*conc+*inserters))
	if err != nil {
		return jobsFail(ctx, s, name, err)
	}
	defer d.Close()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return jobsFail(ctx, s, name, err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return jobsFail(ctx, s, name, err)
		}
		defer pprof.StopCPUProfile()
	}
	var b [4]byte
	rand.Read(b[:])
	prefix := "bench-" + hex.EncodeToString(b[:])
	fmt.Fprintf(s.stdout, "heed jobs bench: %s, %d CPUs, %s, queues %s-*, worker concurrency %d\n",
		d.Name(), runtime.NumCPU(), runtime.Version(), prefix, *conc)
	c := queue.NewClient(d.Jobs(), queue.ClientConfig{})
	var term io.Writer // progress lines go there, on a terminal only
	if f, ok := s.stderr.(*os.File); ok && isatty.IsTerminal(f.Fd()) {
		term = f
	}

	if *burn {
		q := prefix + "-burn"
		start := time.Now()
		var next atomic.Int64
		var wg sync.WaitGroup
		var insertErr error
		var once sync.Once
		done := func() int64 { return min(next.Load(), int64(*n)) }
		stop := showProgress(term, func() string {
			return fmt.Sprintf("burn-down: inserted %s of %s jobs", group(float64(done())), group(float64(int64(*n))))
		})
		for range *inserters {
			wg.Go(func() {
				if d.Postgres() != nil {
					// PostgreSQL: batches of 500 per transaction, as an
					// application would with EnqueueTx; a commit each
					// would measure the disk's fsync instead.
					if err := benchInsertPG(ctx, d, q, &next, int64(*n)); err != nil {
						once.Do(func() { insertErr = err })
					}
					return
				}
				for next.Add(1) <= int64(*n) {
					if _, _, err := c.Enqueue(ctx, "noop", nil, queue.EnqueueOptions{Queue: q}); err != nil {
						once.Do(func() { insertErr = err })
						return
					}
				}
			})
		}
		wg.Wait()
		stop()
		if insertErr != nil {
			return jobsFail(ctx, s, name, insertErr)
		}
		ins := time.Since(start)
		fmt.Fprintf(s.stdout, "burn-down: inserted %d no-op jobs in %.2fs (%.0f jobs/s, %d inserters%s)\n",
			*n, ins.Seconds(), float64(*n)/ins.Seconds(), *inserters, batchNote(d))
		var drained atomic.Int64
		stop = showProgress(term, func() string {
			return fmt.Sprintf("burn-down: drained %s of %s jobs", group(float64(drained.Load())), group(float64(int64(*n))))
		})
		took, err := benchDrain(ctx, d.Jobs(), q, *conc, int64(*n), func(e queue.Event) {
			if e.Kind == queue.EventSucceeded {
				drained.Add(1)
			}
		})
		stop()
		if err != nil {
			return jobsFail(ctx, s, name, err)
		}
		fmt.Fprintf(s.stdout, "burn-down: drained %d jobs in %.2fs: %.0f jobs/s\n", *n, took.Seconds(), float64(*n)/took.Seconds())
	}

	if *steady {
		q := prefix + "-steady"
		total := int64(float64(*dur) / float64(time.Second) * *rate)
		if total < 1 {
			total = 1
		}
		lat := make([]time.Duration, 0, total)
		var mu sync.Mutex
		onStart := func(e queue.Event) {
			l := time.Since(e.Job.CreatedAt)
			mu.Lock()
			lat = append(lat, l)
			mu.Unlock()
		}
		var enqueued, started atomic.Int64
		stop := showProgress(term, func() string {
			return fmt.Sprintf("steady state: enqueued %s of %s jobs, %s started", group(float64(enqueued.Load())), group(float64(total)), group(float64(started.Load())))
		})
		var enqErr error
		var ewg sync.WaitGroup
		ready := make(chan struct{})
		ewg.Go(func() {
			<-ready
			// A pacer hands out send times; a few enqueuers follow them, so
			// that one slow insert does not hold back the next.
			ticks := make(chan time.Time)
			var wg sync.WaitGroup
			var once sync.Once
			for range 4 {
				wg.Go(func() {
					for at := range ticks {
						time.Sleep(time.Until(at))
						if _, _, err := c.Enqueue(ctx, "noop", nil, queue.EnqueueOptions{Queue: q}); err != nil {
							once.Do(func() { enqErr = err })
						}
						enqueued.Add(1)
					}
				})
			}
			start := time.Now()
			for i := range total {
				at := start.Add(time.Duration(float64(i) / *rate * float64(time.Second)))
				select {
				case ticks <- at:
				case <-ctx.Done():
				}
				if ctx.Err() != nil {
					break
				}
			}
			close(ticks)
			wg.Wait()
		})
		_, err := benchDrain(ctx, d.Jobs(), q, *conc, total, func(e queue.Event) {
			if e.Kind == queue.EventStarted {
				started.Add(1)
				onStart(e)
			}
		}, ready)
		ewg.Wait()
		stop()
		if enqErr != nil {
			return jobsFail(ctx, s, name, enqErr)
		}
		if err != nil {
			return jobsFail(ctx, s, name, err)
		}
		slices.Sort(lat)
		pct := func(p float64) time.Duration {
			if len(lat) == 0 {
				return 0
			}
			return lat[min(len(lat)-1, int(p*float64(len(lat))))].Round(10 * time.Microsecond)
		}
		fmt.Fprintf(s.stdout, "steady state: %d jobs at %.0f/s for %v: enqueue to start p50 %v, p90 %v, p99 %v, max %v\n",
			len(lat), *rate, *dur, pct(0.50), pct(0.90), pct(0.99), pct(1))
	}
	return exitOK
}

// benchDrain runs a worker on queue q until want jobs succeeded and returns
// how long that took from the worker's start. When ready is given, it is
// closed once the worker runs.
func benchDrain(ctx context.Context, st queue.Store, q string, conc int, want int64, onEvent func(queue.Event), ready ...chan struct{}) (time.Duration, error) {
	var ok, dead atomic.Int64
	done := make(chan struct{})
	var once sync.Once
	w, err := queue.NewWorker(st, queue.WorkerConfig{
		Queues:       map[string]int{q: conc},
		PollInterval: 100 * time.Millisecond,
		Logger:       nil,
		Observe: func(_ context.Context, e queue.Event) {
			if onEvent != nil {
				onEvent(e)
			}
			switch e.Kind {
			case queue.EventSucceeded:
				if ok.Add(1) >= want {
					once.Do(func() { close(done) })
				}
			case queue.EventDead:
				dead.Add(1)
				once.Do(func() { close(done) })
			}
		},
	})
	if err != nil {
		return 0, err
	}
	jobkinds.Register(w, jobkinds.Config{})
	start := time.Now()
	if err := w.Start(ctx); err != nil {
		return 0, err
	}
	for _, r := range ready {
		close(r)
	}
	select {
	case <-done:
	case <-ctx.Done():
	}
	took := time.Since(start)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	w.Shutdown(sctx)
	switch {
	case ctx.Err() != nil:
		return took, ctx.Err()
	case dead.Load() > 0:
		return took, fmt.Errorf("%d jobs died (see heed jobs dead ls)", dead.Load())
	}
	return took, nil
}

// benchInsertPG inserts no-op jobs into queue q of a PostgreSQL database in
// transactions of up to 500, until next passes n.
func benchInsertPG(ctx context.Context, d *storeurl.DB, q string, next *atomic.Int64, n int64) error {
	for {
		tx, err := d.Postgres().Pool().Begin(ctx)
		if err != nil {
			return err
		}
		k := 0
		for ; k < 500 && next.Add(1) <= n; k++ {
			if _, _, err := d.Postgres().EnqueueTx(ctx, tx, "noop", nil, queue.EnqueueOptions{Queue: q}); err != nil {
				tx.Rollback(ctx)
				return err
			}
		}
		if err := tx.Commit(ctx); err != nil {
			return err
		}
		if k < 500 {
			return nil
		}
	}
}

func batchNote(d *storeurl.DB) string {
	if d.Postgres() != nil {
		return ", 500 per transaction"
	}
	return ", one per transaction"
}

// progressEvery is how often a progress line is redrawn.
const progressEvery = 250 * time.Millisecond

// showProgress draws line() on the terminal term at once and every
// progressEvery, on one line redrawn in place, until the returned function
// is called, which clears it. With a nil term it draws nothing.
func showProgress(term io.Writer, line func() string) (stop func()) {
	if term == nil {
		return func() {}
	}
	quit := make(chan struct{})
	var wg sync.WaitGroup
	draw := func() { fmt.Fprintf(term, "\r\033[Kheed jobs bench: %s", line()) }
	draw()
	wg.Go(func() {
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				draw()
			}
		}
	})
	return func() {
		close(quit)
		wg.Wait()
		fmt.Fprint(term, "\r\033[K")
	}
}
