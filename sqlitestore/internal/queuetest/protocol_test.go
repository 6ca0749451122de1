package queuetest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heed-go/heed/breaker"
	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
	"github.com/heed-go/heed/retry"
	"github.com/heed-go/heed/sqlitestore"
)

// finals counts jobs reaching a final state, through the worker's events.
type finals struct {
	mu        sync.Mutex
	succeeded int
	dead      int
	all       chan struct{} // closed when want jobs are final
	want      int
}

func newFinals(want int) *finals { return &finals{want: want, all: make(chan struct{})} }

func (f *finals) observe(_ context.Context, e queue.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch e.Kind {
	case queue.EventSucceeded:
		f.succeeded++
	case queue.EventDead:
		f.dead++
	default:
		return
	}
	if f.succeeded+f.dead == f.want {
		close(f.all)
	}
}

// inBubble runs a worker over an in-memory SQLite store in virtual time:
// the budget's window and the breaker's cooldown pass at once.
func inBubble(t *testing.T, jobs int, setup func() queue.WorkerConfig, handle func(w *queue.Worker)) (*finals, []*queue.Job) {
	t.Helper()
	var f *finals
	var list []*queue.Job
	synctest.Test(t, func(t *testing.T) {
		s, err := sqlitestore.Open(ctx, ":memory:")
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		f = newFinals(jobs)
		cfg := setup()
		cfg.Observe = f.observe
		w, err := queue.NewWorker(s, cfg)
		if err != nil {
			t.Fatal(err)
		}
		handle(w)
		c := queue.NewClient(s, queue.ClientConfig{})
		ids := make([]int64, jobs)
		for i := range ids {
			j, _, err := c.Enqueue(ctx, "job", struct{}{}, queue.EnqueueOptions{})
			if err != nil {
				t.Fatal(err)
			}
			ids[i] = j.ID
		}
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		<-f.all
		if err := w.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			j, err := c.Job(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			list = append(list, j)
		}
	})
	return f, list
}

func countEntries(jobs []*queue.Job, outcome, reason string) int {
	n := 0
	for _, j := range jobs {
		for _, e := range j.History {
			if e.Outcome == outcome && e.Reason == reason {
				n++
			}
		}
	}
	return n
}

// A retry budget on a worker counts every job's first attempt as a request
// and holds back the retries it cannot grant yet: 20 jobs that fail once
// each all succeed, none is dead, and their retries are spread over the
// seconds the budget's floor (1 a second) takes to grant them, the worker
// claiming them as the budget refills (the retries the budget refused are
// deferred, one history entry each at most). (The budget earns nothing
// from retries that succeed here, Earn -1: with the default, every
// successful retry earns more and these retries, all successful, would
// never wait.)
func TestWorkerBudgetDefersRetries(t *testing.T) {
	var start time.Time
	var mu sync.Mutex
	var last time.Time // the last retry's start
	setup := func() queue.WorkerConfig {
		b, err := budget.New(budget.Config{Earn: -1, MinPerSecond: 1})
		if err != nil {
			t.Fatal(err)
		}
		start = time.Now()
		return queue.WorkerConfig{Policy: retry.Policy{Budget: b}, PollInterval: 100 * time.Millisecond}
	}
	f, jobs := inBubble(t, 20, setup, func(w *queue.Worker) {
		queue.Handle(w, "job", func(ctx context.Context, job *queue.Job, _ struct{}) error {
			if job.Attempt == 1 {
				return retry.Transient(errors.New("blip"))
			}
			mu.Lock()
			last = time.Now()
			mu.Unlock()
			return nil
		})
	})
	if f.succeeded != 20 || f.dead != 0 {
		t.Fatalf("%d succeeded, %d dead; want 20 and 0", f.succeeded, f.dead)
	}
	// The budget held: it starts with 5 retries and the 20 requests add 2;
	// the others waited for its floor, a second each.
	if took := last.Sub(start); took < 10*time.Second {
		t.Errorf("the last retry started %v after the first attempts, want at least 10 s: the budget hardly limited anything", took)
	}
	if n := countEntries(jobs, jobstore.OutcomeDeferred, "budget"); n == 0 {
		t.Error("no retry was deferred by the budget")
	}
	for _, j := range jobs {
		if j.Attempt != 2 || len(j.History) > 3 {
			t.Errorf("job %d made %d attempts with %d history entries, want 2 (deferrals do not count) and at most 3", j.ID, j.Attempt, len(j.History))
		}
	}
}

// An open breaker: no job runs an attempt while it is open, and none is
// claimed only to be deferred: the worker leaves them in the store, with
// no write and no history entry, until the breaker lets probes through;
// they succeed after it. Job outcomes are recorded in the breaker, whose
// probes close it.
func TestWorkerBreakerHoldsJobs(t *testing.T) {
	var ran atomic.Int64
	var openUntil time.Time
	var br *breaker.Breaker
	setup := func() queue.WorkerConfig {
		var err error
		br, err = breaker.New(breaker.Config{MinCalls: 5, Cooldown: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		// Other callers of the dependency open it.
		for range 5 {
			p, _ := br.Allow()
			p.Record(breaker.Failure)
		}
		if br.State() != breaker.Open {
			t.Fatal("breaker not open")
		}
		openUntil = time.Now().Add(5 * time.Second)
		return queue.WorkerConfig{Policy: retry.Policy{Breaker: br}, PollInterval: 100 * time.Millisecond}
	}
	f, jobs := inBubble(t, 20, setup, func(w *queue.Worker) {
		queue.Handle(w, "job", func(ctx context.Context, job *queue.Job, _ struct{}) error {
			if time.Now().Before(openUntil) {
				t.Errorf("job %d ran at %v while the breaker was open", job.ID, time.Now())
			}
			ran.Add(1)
			return nil
		})
	})
	if f.succeeded != 20 || f.dead != 0 || ran.Load() != 20 {
		t.Fatalf("%d succeeded, %d dead, %d ran; want 20, 0, 20", f.succeeded, f.dead, ran.Load())
	}
	for _, j := range jobs {
		if len(j.History) != 1 || j.Attempt != 1 {
			t.Errorf("job %d: attempt %d, history %v; want one attempt, one entry (no deferral)", j.ID, j.Attempt, j.History)
		}
	}
	// The probes' successes, recorded by the worker, closed it again.
	if st := br.State(); st != breaker.Closed {
		t.Errorf("breaker %v after the jobs succeeded, want closed: their outcomes were not recorded", st)
	}
}
