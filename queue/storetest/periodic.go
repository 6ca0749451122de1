package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/heed-go/heed/clock"
	"github.com/heed-go/heed/queue"
)

// periodicTicks is how many periods RunPeriodic runs.
const periodicTicks = 20

// countingStore counts the JobInsert calls per unique key, to see that
// every worker tried each tick.
type countingStore struct {
	queue.Store
	mu    *sync.Mutex
	calls map[string]int
	tried *sync.Cond
}

// JobNotify passes the store's notifications on: with the clock fake, the
// workers' claim loops wake on them, not on polls.
func (c countingStore) JobNotify(ctx context.Context) (<-chan string, error) {
	return c.Store.(queue.Notifier).JobNotify(ctx)
}

func (c countingStore) JobInsert(ctx context.Context, in queue.JobInsert) (*queue.Job, bool, error) {
	j, ok, err := c.Store.JobInsert(ctx, in)
	c.mu.Lock()
	c.calls[in.UniqueKey]++
	c.tried.Broadcast()
	c.mu.Unlock()
	return j, ok, err
}

// FakeClock is the clock RunPeriodic sets: clock/clocktest's Clock is one.
type FakeClock interface {
	clock.Clock
	Set(t time.Time) // moves the clock to t, firing the timers due
}

// RunPeriodic runs one worker per store of stores (stores over one
// database: the same store several times, or stores opened separately, as
// processes would), all with the same periodic job every minute on a fake
// clock (clk, not yet set past 2026-03-04T05:06:30Z), for 20 periods: the
// first tick is the one that passed before the
// workers started (caught up once), then the clock moves a period at a
// time. Each time every worker tries to enqueue the tick, and exactly one
// job per tick is made and run: 20 runs in all.
func RunPeriodic(t *testing.T, clk FakeClock, stores []queue.Store) {
	for _, s := range stores {
		if _, ok := s.(queue.Notifier); !ok {
			t.Skip("the store is not a queue.Notifier (the test's workers wake on notifications)")
		}
	}
	start := time.Date(2026, 3, 4, 5, 6, 30, 0, time.UTC) // 30 s after a tick
	first := start.Truncate(time.Minute)
	clk.Set(start)
	var mu sync.Mutex
	calls := map[string]int{}
	tried := sync.NewCond(&mu)
	ran := make(chan time.Time, 4*periodicTicks)
	workers := make([]*queue.Worker, len(stores))
	for i, s := range stores {
		w, err := queue.NewWorker(countingStore{s, &mu, calls, tried}, queue.WorkerConfig{
			Clock: clk, Queues: map[string]int{"cron": 2}, PollInterval: time.Hour, RescueInterval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		queue.Handle(w, "tick", func(ctx context.Context, job *queue.Job, _ struct{}) error {
			ran <- job.AvailableAt
			return nil
		})
		if err := w.Periodic(queue.PeriodicJob{Kind: "tick", Schedule: queue.Every(time.Minute),
			Options: queue.EnqueueOptions{Queue: "cron"}}); err != nil {
			t.Fatal(err)
		}
		workers[i] = w
	}
	for _, w := range workers {
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		for _, w := range workers {
			if err := w.Shutdown(ctx); err != nil {
				t.Errorf("Shutdown: %v", err)
			}
		}
	}()
	key := func(tick time.Time) string {
		return `{"kind":"tick","queue":"cron","period":"` + tick.Format(time.RFC3339Nano) + `"}`
	}
	runs := map[time.Time]int{}
	for i := range periodicTicks {
		tick := first.Add(time.Duration(i) * time.Minute)
		if i > 0 {
			clk.Set(tick)
		}
		// Every worker tries the tick...
		mu.Lock()
		for calls[key(tick)] < len(workers) {
			tried.Wait()
		}
		mu.Unlock()
		// ... and one job runs for it. (A worker's claim loop waits on
		// the fake clock between polls; the store's notification of the
		// insert wakes it.)
		select {
		case at := <-ran:
			runs[at]++
		case <-time.After(time.Minute):
			t.Fatalf("tick %d (%v): no job ran", i, tick)
		}
	}
	for _, w := range workers {
		if err := w.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	}
	workers = nil
	close(ran)
	for at := range ran {
		runs[at]++
	}
	if len(runs) != periodicTicks {
		t.Errorf("%d ticks ran, want %d: %v", len(runs), periodicTicks, runs)
	}
	for at, n := range runs {
		if n != 1 {
			t.Errorf("tick %v ran %d times", at, n)
		}
	}
	jobs, err := stores[0].JobList(ctx, queue.JobFilter{Kind: "tick"})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != periodicTicks {
		t.Errorf("%d jobs stored, want %d", len(jobs), periodicTicks)
	}
	for _, j := range jobs {
		if j.State != queue.StateSucceeded || j.Attempt != 1 || j.UniqueKey != key(j.AvailableAt) {
			t.Errorf("job %d: %s after %d attempts, key %s", j.ID, j.State, j.Attempt, j.UniqueKey)
		}
	}
}
