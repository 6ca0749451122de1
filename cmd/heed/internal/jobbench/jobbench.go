// Package jobbench measures the job queue on a database, with no-op jobs:
// the harness of heed jobs bench. [Bench.Insert] and [Bench.Drain] make the
// burn-down (insert, then drain: jobs per second), [Bench.Steady] the
// steady state (enqueue at a rate while a worker runs: the time from
// enqueue to the start of each job).
package jobbench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heed-go/heed/cmd/heed/internal/jobkinds"
	"github.com/heed-go/heed/cmd/heed/internal/storeurl"
	"github.com/heed-go/heed/queue"
)

// InsertBatch is how many jobs one Client.EnqueueMany call of Insert
// inserts (one transaction; on PostgreSQL, one COPY), as an application
// loading work would, and as internal/compare's queue benchmarks do.
const InsertBatch = 1000

// A Bench runs benchmarks on one database. Its counters tell a progress
// line how far each phase is; they may be read at any time.
type Bench struct {
	DB          *storeurl.DB
	Concurrency int // jobs the worker runs at once

	Inserted, Drained, Enqueued, Started atomic.Int64
}

// Insert inserts n no-op jobs into queue q with inserters goroutines, each
// taking InsertBatch jobs at a time through Client.EnqueueMany, and
// returns how long it took.
func (b *Bench) Insert(ctx context.Context, q string, n int64, inserters int) (time.Duration, error) {
	c := queue.NewClient(b.DB.Jobs(), queue.ClientConfig{})
	start := time.Now()
	var next atomic.Int64 // jobs taken
	var wg sync.WaitGroup
	var insertErr error
	var once sync.Once
	fail := func(err error) { once.Do(func() { insertErr = err }) }
	for range inserters {
		wg.Go(func() {
			items := make([]queue.EnqueueItem, 0, InsertBatch)
			for {
				end := next.Add(InsertBatch)
				k := min(end, n) - (end - InsertBatch)
				if k <= 0 {
					return
				}
				items = items[:0]
				for range k {
					items = append(items, queue.EnqueueItem{Kind: "noop", Options: queue.EnqueueOptions{Queue: q}})
				}
				if _, err := c.EnqueueMany(ctx, items); err != nil {
					fail(err)
					return
				}
				b.Inserted.Add(k)
			}
		})
	}
	wg.Wait()
	return time.Since(start), insertErr
}

// Drain runs a worker on queue q until want jobs succeeded and returns how
// long that took from the worker's start. onEvent, when not nil, sees
// every event; ready, when not nil, is closed once the worker runs.
func (b *Bench) Drain(ctx context.Context, q string, want int64, onEvent func(queue.Event), ready chan struct{}) (time.Duration, error) {
	var ok, dead atomic.Int64
	done := make(chan struct{})
	var once sync.Once
	w, err := queue.NewWorker(b.DB.Jobs(), queue.WorkerConfig{
		Queues:       map[string]int{q: b.Concurrency},
		PollInterval: 100 * time.Millisecond,
		Observe: func(_ context.Context, e queue.Event) {
			if onEvent != nil {
				onEvent(e)
			}
			switch e.Kind {
			case queue.EventSucceeded:
				b.Drained.Add(1)
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
	if ready != nil {
		close(ready)
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

// Steady enqueues total no-op jobs into queue q at rate jobs per second
// while a worker runs them, and returns the time from enqueue to the start
// of each job, sorted.
func (b *Bench) Steady(ctx context.Context, q string, rate float64, total int64) ([]time.Duration, error) {
	c := queue.NewClient(b.DB.Jobs(), queue.ClientConfig{})
	lat := make([]time.Duration, 0, total)
	var mu sync.Mutex
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
					b.Enqueued.Add(1)
				}
			})
		}
		start := time.Now()
		for i := range total {
			at := start.Add(time.Duration(float64(i) / rate * float64(time.Second)))
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
	_, err := b.Drain(ctx, q, total, func(e queue.Event) {
		if e.Kind == queue.EventStarted {
			b.Started.Add(1)
			l := time.Since(e.Job.CreatedAt)
			mu.Lock()
			lat = append(lat, l)
			mu.Unlock()
		}
	}, ready)
	ewg.Wait()
	if enqErr != nil {
		return nil, enqErr
	}
	slices.Sort(lat)
	return lat, err
}

// Percentile returns the p-th quantile (0 to 1) of sorted, rounded to
// 10µs; 0 for none.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))].Round(10 * time.Microsecond)
}
