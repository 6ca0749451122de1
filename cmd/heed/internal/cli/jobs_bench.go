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
	"sync"
	"time"

	"github.com/mattn/go-isatty"

	"github.com/heed-go/heed/cmd/heed/internal/jobbench"
	"github.com/heed-go/heed/cmd/heed/internal/storeurl"
	"github.com/heed-go/heed/internal/textfmt"
	"github.com/heed-go/heed/queue"
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
	conc := fs.Int("concurrency", workerDefaults.Queues[queue.DefaultQueue], "jobs the worker runs at once")
	inserters := fs.Int("inserters", 4, "burn-down: goroutines inserting jobs")
	rate := fs.Float64("rate", 500, "steady state: jobs enqueued per second")
	dur := durationFlag(fs, "duration", 10*time.Second, "steady state: how long to enqueue")
	burn := fs.Bool("burn", true, "run the burn-down")
	steady := fs.Bool("steady", true, "run the steady state")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the benchmark to `FILE` (go tool pprof FILE)")
	if code, done := parseNoArgs(fs, args, s, jobsBenchDoc); done {
		return code
	}
	switch {
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
	d, err := openDB(ctx, dsn, storeurl.Migrate, poolSizeFor(*conc+*inserters))
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
	var term io.Writer // progress lines go there, on a terminal only
	if f, ok := s.stderr.(*os.File); ok && isatty.IsTerminal(f.Fd()) {
		term = f
	}
	bench := &jobbench.Bench{DB: d, Concurrency: *conc}
	if *burn {
		q := prefix + "-burn"
		stop := showProgress(term, func() string {
			return fmt.Sprintf("burn-down: inserted %s of %s jobs", textfmt.Group(float64(bench.Inserted.Load())), textfmt.Group(float64(*n)))
		})
		ins, err := bench.Insert(ctx, q, int64(*n), *inserters)
		stop()
		if err != nil {
			return jobsFail(ctx, s, name, err)
		}
		fmt.Fprintf(s.stdout, "burn-down: inserted %d no-op jobs in %.2fs (%.0f jobs/s, %d inserters, EnqueueMany of %d)\n",
			*n, ins.Seconds(), float64(*n)/ins.Seconds(), *inserters, jobbench.InsertBatch)
		stop = showProgress(term, func() string {
			return fmt.Sprintf("burn-down: drained %s of %s jobs", textfmt.Group(float64(bench.Drained.Load())), textfmt.Group(float64(*n)))
		})
		took, err := bench.Drain(ctx, q, int64(*n), nil, nil)
		stop()
		if err != nil {
			return jobsFail(ctx, s, name, err)
		}
		fmt.Fprintf(s.stdout, "burn-down: drained %d jobs in %.2fs: %.0f jobs/s\n", *n, took.Seconds(), float64(*n)/took.Seconds())
	}
	if *steady {
		total := max(int64(float64(*dur)/float64(time.Second)**rate), 1)
		stop := showProgress(term, func() string {
			return fmt.Sprintf("steady state: enqueued %s of %s jobs, %s started", textfmt.Group(float64(bench.Enqueued.Load())), textfmt.Group(float64(total)), textfmt.Group(float64(bench.Started.Load())))
		})
		lat, err := bench.Steady(ctx, prefix+"-steady", *rate, total)
		stop()
		if err != nil {
			return jobsFail(ctx, s, name, err)
		}
		pct := func(p float64) time.Duration { return jobbench.Percentile(lat, p) }
		fmt.Fprintf(s.stdout, "steady state: %d jobs at %.0f/s for %v: enqueue to start p50 %v, p90 %v, p99 %v, max %v\n",
			len(lat), *rate, *dur, pct(0.50), pct(0.90), pct(0.99), pct(1))
	}
	return exitOK
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
