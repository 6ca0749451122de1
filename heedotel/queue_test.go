package heedotel_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/heed-go/heed/heedotel"
	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/retry"
	"github.com/heed-go/heed/sqlitestore"
	"go.opentelemetry.io/otel/attribute"
)

// runJobs enqueues a job of kind "flaky" that fails once then succeeds, and
// one of kind "doomed" that fails permanently, runs a worker until both are
// done, and returns the store (closed at the end of the test). observe
// receives every event, the client's included.
func runJobs(t *testing.T, observe func(context.Context, queue.Event)) *sqlitestore.Store {
	t.Helper()
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })

	var (
		mu   sync.Mutex
		left = 2
		done = make(chan struct{})
	)
	w, err := queue.NewWorker(st, queue.WorkerConfig{
		Policy:       retry.Policy{Backoff: constant1ms},
		PollInterval: 5 * time.Millisecond,
		Observe: func(ctx context.Context, e queue.Event) {
			observe(ctx, e)
			if e.Kind == queue.EventSucceeded || e.Kind == queue.EventDead {
				mu.Lock()
				if left--; left == 0 {
					close(done)
				}
				mu.Unlock()
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	queue.Handle(w, "flaky", func(ctx context.Context, job *queue.Job, _ struct{}) error {
		if job.Attempt == 1 {
			return retry.Transient(errors.New("busy"))
		}
		return nil
	})
	queue.Handle(w, "doomed", func(ctx context.Context, job *queue.Job, _ struct{}) error {
		return retry.Permanent(errors.New("no such user"))
	})
	c := queue.NewClient(st, queue.ClientConfig{Observe: observe})
	for _, kind := range []string{"flaky", "doomed"} {
		if _, _, err := c.Enqueue(ctx, kind, nil, queue.EnqueueOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the jobs did not finish")
	}
	if err := w.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	return st
}

func TestQueue(t *testing.T) {
	m, r := newMetrics(t)
	st := runJobs(t, m.QueueObserver())
	reg, err := m.ObserveQueue(st)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()

	c := collect(t, r)
	q := heedotel.KeyQueue.String(queue.DefaultQueue)
	flaky, doomed := heedotel.KeyJobKind.String("flaky"), heedotel.KeyJobKind.String("doomed")
	c.wantSum("heed.queue.jobs.enqueued", 1, q, flaky)
	c.wantSum("heed.queue.jobs.enqueued", 1, q, doomed)
	c.wantSum("heed.queue.jobs.started", 2, q, flaky)
	c.wantSum("heed.queue.jobs.started", 1, q, doomed)
	c.wantSum("heed.queue.jobs.succeeded", 1, q, flaky)
	c.wantSum("heed.queue.jobs.succeeded", 1)
	c.wantSum("heed.queue.jobs.retried", 1, q, flaky, reason("transient"))
	c.wantSum("heed.queue.jobs.retried", 1)
	c.wantSum("heed.queue.jobs.dead", 1, q, doomed, reason("permanent"))
	c.wantSum("heed.queue.jobs.dead", 1)
	for _, name := range []string{"heed.queue.jobs.snoozed", "heed.queue.jobs.released", "heed.queue.jobs.lost", "heed.queue.jobs.lease_lost"} {
		c.wantSum(name, 0)
	}
	c.wantCount("heed.queue.job.wait.duration", 3, q)
	c.wantCount("heed.queue.job.wait.duration", 2, q, flaky)
	result := func(s string) attribute.KeyValue { return heedotel.KeyJobResult.String(s) }
	c.wantCount("heed.queue.job.duration", 1, q, flaky, result("retried"))
	c.wantCount("heed.queue.job.duration", 1, q, flaky, result("succeeded"))
	c.wantCount("heed.queue.job.duration", 1, q, doomed, result("dead"))

	state := func(s string) attribute.KeyValue { return heedotel.KeyJobState.String(s) }
	for s, want := range map[string]int64{"available": 0, "scheduled": 0, "running": 0, "succeeded": 1, "dead": 1} {
		if got, ok := c.gauge("heed.queue.jobs", q, state(s)); !ok || got != want {
			t.Errorf("heed.queue.jobs{%s} = %d (present %v), want %d", s, got, ok, want)
		}
	}
	age, ok := c.metric("heed.queue.dead_letter.oldest_age")
	if !ok {
		t.Fatal("no heed.queue.dead_letter.oldest_age")
	}
	if age.Unit != "s" {
		t.Errorf("heed.queue.dead_letter.oldest_age: unit %q", age.Unit)
	}
}

// TestQueueStatsEmpty: an empty store reports no queue and no dead age.
func TestQueueStatsEmpty(t *testing.T) {
	m, r := newMetrics(t)
	st, err := sqlitestore.Open(context.Background(), ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	reg, err := m.ObserveQueue(st)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()
	c := collect(t, r)
	if _, ok := c.metric("heed.queue.jobs"); ok {
		t.Error("heed.queue.jobs reported for an empty store")
	}
	if _, ok := c.metric("heed.queue.dead_letter.oldest_age"); ok {
		t.Error("heed.queue.dead_letter.oldest_age reported for an empty dead-letter")
	}
}

// TestQueueEvents feeds the observer the events that are hard to provoke
// with a real worker: snoozes, releases, lost leases, and attempts that did
// not run (no duration).
func TestQueueEvents(t *testing.T) {
	m, r := newMetrics(t)
	obs := m.QueueObserver()
	ctx := context.Background()
	job := &queue.Job{ID: 1, Kind: "k", Queue: "q", Attempt: 1}
	for _, e := range []queue.Event{
		{Kind: queue.EventSnoozed, Job: job, Duration: time.Millisecond},
		{Kind: queue.EventReleased, Job: job, Duration: time.Millisecond},
		{Kind: queue.EventLost, Job: job},
		{Kind: queue.EventRetried, Job: job, Decision: retry.Decision{Action: retry.Retry, Reason: retry.ReasonTimeout}}, // decided by the rescuer
		{Kind: queue.EventLeaseLost, Job: job, Duration: time.Millisecond},
		{Kind: queue.EventDead, Job: job, Decision: retry.Decision{Action: retry.GiveUp, Reason: retry.ReasonTimeBudget}}, // expired before starting
		{Kind: queue.EventStarted, Job: job},                                                                              // no times: no wait recorded
		{Kind: queue.EventSucceeded},                                                                                      // no job: ignored
	} {
		obs(ctx, e)
	}
	c := collect(t, r)
	base := []attribute.KeyValue{heedotel.KeyQueue.String("q"), heedotel.KeyJobKind.String("k")}
	c.wantSum("heed.queue.jobs.snoozed", 1, base...)
	c.wantSum("heed.queue.jobs.released", 1, base...)
	c.wantSum("heed.queue.jobs.lost", 1, base...)
	c.wantSum("heed.queue.jobs.lease_lost", 1, base...)
	c.wantSum("heed.queue.jobs.retried", 1, with(base, reason("timeout"))...)
	c.wantSum("heed.queue.jobs.dead", 1, with(base, reason("time_budget"))...)
	c.wantSum("heed.queue.jobs.started", 1, base...)
	c.wantSum("heed.queue.jobs.succeeded", 0)
	c.wantCount("heed.queue.job.wait.duration", 0)
	result := func(s string) attribute.KeyValue { return heedotel.KeyJobResult.String(s) }
	c.wantCount("heed.queue.job.duration", 3)
	for _, res := range []string{"snoozed", "released", "lease_lost"} {
		c.wantCount("heed.queue.job.duration", 1, with(base, result(res))...)
	}
}

// TestQueueKindCap: past MaxJobKinds, kinds are recorded as "_OTHER".
func TestQueueKindCap(t *testing.T) {
	m, r := newMetrics(t)
	obs := m.QueueObserver()
	for i := range heedotel.MaxJobKinds + 5 {
		obs(context.Background(), queue.Event{Kind: queue.EventEnqueued, Job: &queue.Job{Queue: "q", Kind: "k" + strconv.Itoa(i)}})
	}
	c := collect(t, r)
	kinds := c.attrValues("heed.queue.jobs.enqueued", heedotel.KeyJobKind)
	if len(kinds) != heedotel.MaxJobKinds+1 || !kinds["_OTHER"] {
		t.Errorf("%d kinds (with _OTHER: %v), want MaxJobKinds and _OTHER", len(kinds), kinds["_OTHER"])
	}
	c.wantSum("heed.queue.jobs.enqueued", 5, heedotel.KeyJobKind.String("_OTHER"))
}
