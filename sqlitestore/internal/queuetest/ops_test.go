package queuetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/clock"
	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
	"github.com/heed-go/heed/retry"
)

// events returns an observer that sends every event to the channel it
// returns (never blocking the worker: the channel is large).
func events() (func(context.Context, queue.Event), chan queue.Event) {
	ch := make(chan queue.Event, 1000)
	return func(_ context.Context, e queue.Event) { ch <- e }, ch
}

// waitEvent returns the first event of kind on ch, failing after 15 s.
func waitEvent(t *testing.T, ch chan queue.Event, kind queue.EventKind) queue.Event {
	t.Helper()
	timeout := time.After(15 * time.Second) // a bound on failure
	for {
		select {
		case e := <-ch:
			if e.Kind == kind {
				return e
			}
		case <-timeout:
			t.Fatalf("no %s event within 15 s", kind)
		}
	}
}

// A running job that an operator cancels sees its context cancelled with
// ErrCancelled, its result is dropped, and it ends cancelled: at once
// through the store's notifications, or at the next lease renewal.
func TestWorkerCancelRunning(t *testing.T) {
	t.Run("notified", func(t *testing.T) { testCancelRunning(t, openStore(t), time.Hour) })
	// A lease of 2 s (renewed every 667 ms), not 300 ms: under -race at
	// load 28 a stall of the renewal let the 300 ms lease run out and the
	// rescuer take the job before the cancel, so the handler's cause was
	// the lost lease (what happened), not the cancel the test is about.
	// The cancel still reaches the handler only through a renewal.
	t.Run("renewal", func(t *testing.T) { testCancelRunning(t, plainStore{openStore(t)}, 2*time.Second) })
}

func testCancelRunning(t *testing.T, s jobstore.Store, lease time.Duration) {
	cfg := fastConfig()
	cfg.Lease = lease
	obs, evs := events()
	cfg.Observe = obs
	w := newWorker(t, s, cfg)
	started := make(chan struct{})
	cause := make(chan error, 1)
	queue.Handle(w, "long", func(ctx context.Context, job *queue.Job, _ msg) error {
		close(started)
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return ctx.Err()
	})
	c := queue.NewClient(s, queue.ClientConfig{Operator: "ada"})
	j := enqueue(t, c, "long", nil, queue.EnqueueOptions{})
	start(t, w)
	<-started
	n, err := c.Cancel(ctx, queue.JobFilter{IDs: []int64{j.ID}})
	if err != nil || n != 1 {
		t.Fatalf("Cancel = %d, %v; want 1", n, err)
	}
	e := waitEvent(t, evs, queue.EventCancelled)
	if e.Job.ID != j.ID || !errors.Is(e.Err, queue.ErrCancelled) {
		t.Errorf("cancel event: job %d, err %v", e.Job.ID, e.Err)
	}
	if want := fmt.Sprintf("queue: job %d cancelled by an operator", j.ID); e.Err != nil && e.Err.Error() != want && e.Err != queue.ErrCancelled {
		t.Errorf("cancel event: err %q, want %q (the package said once)", e.Err, want)
	}
	if err := <-cause; !errors.Is(err, queue.ErrCancelled) {
		t.Errorf("the handler's context cause: %v, want ErrCancelled", err)
	}
	g, err := c.Job(ctx, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if g.State != queue.StateCancelled || len(g.History) != 1 || g.History[0].String() != "cancelled by ada" {
		t.Errorf("cancelled job: state %s, history %v", g.State, g.History)
	}
	if n, err := c.Cancel(ctx, queue.JobFilter{IDs: []int64{j.ID}}); err != nil || n != 0 {
		t.Errorf("Cancel again = %d, %v; want 0", n, err)
	}
	if _, err := c.Cancel(ctx, queue.JobFilter{State: queue.StateDead}); !errors.Is(err, queue.ErrInvalid) {
		t.Errorf("Cancel(state dead): %v, want ErrInvalid", err)
	}
}

// A worker idle on a paused queue starts its jobs as soon as the queue is
// resumed: the resume wakes it (its poll interval here is an hour).
func TestWorkerResumeWakes(t *testing.T) {
	s := openStore(t)
	c := queue.NewClient(s, queue.ClientConfig{})
	if ch, err := c.Pause(ctx, queue.DefaultQueue); err != nil || !ch {
		t.Fatalf("Pause = %v, %v", ch, err)
	}
	cfg := fastConfig()
	cfg.PollInterval = time.Hour
	obs, evs := events()
	cfg.Observe = obs
	w := newWorker(t, s, cfg)
	queue.Handle(w, "k", func(ctx context.Context, job *queue.Job, _ msg) error { return nil })
	start(t, w)
	j := enqueue(t, c, "k", nil, queue.EnqueueOptions{}) // notifies; the claim finds the queue paused
	ps, err := c.Paused(ctx)
	if err != nil || len(ps) != 1 || ps[0].Queue != queue.DefaultQueue {
		t.Fatalf("Paused = %+v, %v", ps, err)
	}
	if ch, err := c.Resume(ctx, queue.DefaultQueue); err != nil || !ch {
		t.Fatalf("Resume = %v, %v", ch, err)
	}
	if e := waitEvent(t, evs, queue.EventSucceeded); e.Job.ID != j.ID {
		t.Errorf("succeeded job %d, want %d", e.Job.ID, j.ID)
	}
	if _, err := c.Pause(ctx, "bad\nname"); !errors.Is(err, queue.ErrInvalid) {
		t.Errorf("Pause(bad name): %v, want ErrInvalid", err)
	}
}

// A drain waits for a job that a killed worker left running once its lease
// ends within Within: the job comes back when the lease expires, and the
// drain runs it. A lease that ends later is not waited for.
func TestWorkerDrainWaitsForLeases(t *testing.T) {
	s := openStore(t)
	c := queue.NewClient(s, queue.ClientConfig{})
	j := enqueue(t, c, "ok", nil, queue.EnqueueOptions{})
	now := time.Now()
	if claimed, err := s.JobClaim(ctx, jobstore.ClaimParams{Queue: queue.DefaultQueue, Limit: 1, Now: now,
		LeaseUntil: now.Add(100 * time.Millisecond), Worker: "killed"}); err != nil || len(claimed) != 1 {
		t.Fatal(claimed, err)
	}
	w := newWorker(t, s, fastConfig())
	queue.Handle(w, "ok", func(ctx context.Context, job *queue.Job, _ msg) error { return nil })
	if res, err := w.Drain(ctx, queue.DrainOptions{Within: time.Minute}); err != nil || res.Claimed != 1 {
		t.Errorf("Drain(Within 1m) = %+v, %v; want the killed worker's job claimed", res, err)
	}
	if got, _ := c.Job(ctx, j.ID); got.State != queue.StateSucceeded {
		t.Errorf("the killed worker's job is %s after Drain, want succeeded", got.State)
	}

	// A lease ending in an hour: Drain(Within 1m) does not wait for it.
	j = enqueue(t, c, "ok", nil, queue.EnqueueOptions{})
	now = time.Now()
	if claimed, err := s.JobClaim(ctx, jobstore.ClaimParams{Queue: queue.DefaultQueue, Limit: 1, Now: now,
		LeaseUntil: now.Add(time.Hour), Worker: "busy"}); err != nil || len(claimed) != 1 {
		t.Fatal(claimed, err)
	}
	w = newWorker(t, s, fastConfig())
	queue.Handle(w, "ok", func(ctx context.Context, job *queue.Job, _ msg) error { return nil })
	if res, err := w.Drain(ctx, queue.DrainOptions{Within: time.Minute}); err != nil || res.Claimed != 0 {
		t.Errorf("Drain(Within 1m) = %+v, %v; want nothing claimed", res, err)
	}
	if got, _ := c.Job(ctx, j.ID); got.State != queue.StateRunning {
		t.Errorf("the job leased for an hour is %s after Drain, want running", got.State)
	}
}

// Drain runs what is due now in the worker's queues, including jobs that
// become due again while it runs (a snooze of 0), and reports what it
// leaves: jobs scheduled later, paused queues, and other queues' jobs.
func TestWorkerDrain(t *testing.T) {
	s := openStore(t)
	c := queue.NewClient(s, queue.ClientConfig{})
	cfg := fastConfig()
	cfg.Queues = map[string]int{"a": 2, "p": 1}
	w := newWorker(t, s, cfg)
	var snoozed atomic.Bool
	queue.Handle(w, "ok", func(ctx context.Context, job *queue.Job, _ msg) error { return nil })
	queue.Handle(w, "again", func(ctx context.Context, job *queue.Job, _ msg) error {
		if !snoozed.Swap(true) {
			return queue.Snooze(0)
		}
		return nil
	})
	var ids []int64
	for range 4 {
		ids = append(ids, enqueue(t, c, "ok", nil, queue.EnqueueOptions{Queue: "a"}).ID)
	}
	ids = append(ids, enqueue(t, c, "again", nil, queue.EnqueueOptions{Queue: "a"}).ID)
	later := enqueue(t, c, "ok", nil, queue.EnqueueOptions{Queue: "a", In: time.Hour})
	enqueue(t, c, "ok", nil, queue.EnqueueOptions{Queue: "elsewhere"})
	enqueue(t, c, "ok", nil, queue.EnqueueOptions{Queue: "p"})
	if _, err := c.Pause(ctx, "p"); err != nil {
		t.Fatal(err)
	}

	res, err := w.Drain(ctx, queue.DrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if j, _ := c.Job(ctx, id); j.State != queue.StateSucceeded {
			t.Errorf("job %d is %s after Drain, want succeeded", id, j.State)
		}
	}
	if j, _ := c.Job(ctx, later.ID); j.State != queue.StateAvailable || j.Attempt != 0 {
		t.Errorf("the job scheduled later: %+v", j)
	}
	want := queue.DrainResult{Claimed: 6, Scheduled: 1, Paused: []string{"p"},
		Elsewhere: []jobstore.QueueStats{{Queue: "elsewhere", Available: 1}}}
	if res.Claimed != want.Claimed || res.Scheduled != want.Scheduled || !slices.Equal(res.Paused, want.Paused) ||
		!slices.Equal(res.Elsewhere, want.Elsewhere) {
		t.Errorf("Drain = %+v, want %+v", res, want)
	}
	if _, err := w.Drain(ctx, queue.DrainOptions{}); !errors.Is(err, queue.ErrStopped) {
		t.Errorf("Drain of a stopped worker: %v, want ErrStopped", err)
	}

	// WaitScheduled waits for jobs due later.
	soon := enqueue(t, c, "ok", nil, queue.EnqueueOptions{Queue: "b", In: 50 * time.Millisecond})
	cfg.Queues = map[string]int{"b": 1}
	w2 := newWorker(t, s, cfg)
	queue.Handle(w2, "ok", func(ctx context.Context, job *queue.Job, _ msg) error { return nil })
	if res, err := w2.Drain(ctx, queue.DrainOptions{WaitScheduled: true}); err != nil || res.Claimed != 1 || res.Scheduled != 0 {
		t.Errorf("Drain(WaitScheduled) = %+v, %v; want 1 claimed, none scheduled", res, err)
	}
	if j, _ := c.Job(ctx, soon.ID); j.State != queue.StateSucceeded {
		t.Errorf("the job due in 50 ms is %s after Drain(WaitScheduled)", j.State)
	}

	// Within waits for what is due soon, not for what is due later.
	soon = enqueue(t, c, "ok", nil, queue.EnqueueOptions{Queue: "b", In: 50 * time.Millisecond})
	enqueue(t, c, "ok", nil, queue.EnqueueOptions{Queue: "b", In: time.Hour})
	w3 := newWorker(t, s, cfg)
	queue.Handle(w3, "ok", func(ctx context.Context, job *queue.Job, _ msg) error { return nil })
	if res, err := w3.Drain(ctx, queue.DrainOptions{Within: time.Minute}); err != nil || res.Claimed != 1 || res.Scheduled != 1 {
		t.Errorf("Drain(Within) = %+v, %v; want 1 claimed, 1 scheduled", res, err)
	}
	if j, _ := c.Job(ctx, soon.ID); j.State != queue.StateSucceeded {
		t.Errorf("the job due in 50 ms is %s after Drain(Within 1m)", j.State)
	}
	// A negative Within waits for nothing scheduled, however soon.
	enqueue(t, c, "ok", nil, queue.EnqueueOptions{Queue: "b", In: 30 * time.Second})
	w4 := newWorker(t, s, cfg)
	queue.Handle(w4, "ok", func(ctx context.Context, job *queue.Job, _ msg) error { return nil })
	if res, err := w4.Drain(ctx, queue.DrainOptions{Within: -1}); err != nil || res.Claimed != 0 || res.Scheduled != 2 {
		t.Errorf("Drain(Within -1) = %+v, %v; want none claimed, 2 scheduled", res, err)
	}
	if _, err := newWorker(t, s, cfg).WaitEmpty(ctx, queue.DrainOptions{}); !errors.Is(err, queue.ErrStopped) {
		t.Errorf("WaitEmpty on a worker not started: %v, want ErrStopped", err)
	}
}

// Drain ends with the context's error when the context ends first.
func TestWorkerDrainContext(t *testing.T) {
	s := openStore(t)
	c := queue.NewClient(s, queue.ClientConfig{})
	cfg := fastConfig()
	cfg.ShutdownGrace = 50 * time.Millisecond
	w := newWorker(t, s, cfg)
	started := make(chan struct{})
	queue.Handle(w, "block", func(ctx context.Context, job *queue.Job, _ msg) error {
		close(started)
		<-ctx.Done()
		return ctx.Err()
	})
	enqueue(t, c, "block", nil, queue.EnqueueOptions{})
	dctx, cancel := context.WithCancel(ctx)
	go func() { <-started; cancel() }()
	if _, err := w.Drain(dctx, queue.DrainOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Drain = %v, want context.Canceled", err)
	}
}

// pruneStore counts JobPrune calls and answers them from a script.
type pruneStore struct {
	jobstore.Store
	mu     sync.Mutex
	calls  []queue.State
	limits []int
	full   int           // how many calls for succeeded jobs return a full batch
	done   chan struct{} // closed at the first call for cancelled jobs
	once   sync.Once
}

func (p *pruneStore) JobPrune(ctx context.Context, pp jobstore.PruneParams) (int, error) {
	st, limit := pp.State, pp.Limit
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, st)
	p.limits = append(p.limits, limit)
	if st == queue.StateSucceeded && p.full > 0 {
		p.full--
		return limit, nil
	}
	if st == queue.StateCancelled {
		p.once.Do(func() { close(p.done) })
	}
	return 0, nil
}

// Retention deletes in batches of jobstore.RetentionBatch until a batch comes back
// short, for each finished state that is not off.
func TestWorkerRetentionBatches(t *testing.T) {
	ps := &pruneStore{Store: plainStore{openStore(t)}, full: 2, done: make(chan struct{})}
	cfg := fastConfig()
	cfg.RetentionInterval = 10 * time.Millisecond
	cfg.RetainDead = -1 // off
	w := newWorker(t, ps, cfg)
	start(t, w)
	select {
	case <-ps.done:
	case <-time.After(15 * time.Second): // a bound on failure
		t.Fatal("no prune of cancelled jobs within 15 s")
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	want := []queue.State{queue.StateSucceeded, queue.StateSucceeded, queue.StateSucceeded, queue.StateCancelled}
	if !slices.Equal(ps.calls[:4], want) {
		t.Errorf("prune calls %v, want %v first", ps.calls, want)
	}
	for _, l := range ps.limits {
		if l != jobstore.RetentionBatch {
			t.Errorf("prune limit %d, want %d", l, jobstore.RetentionBatch)
		}
	}
}

// Retention deletes succeeded jobs after a day and cancelled ones after
// RetainCancelled, and keeps dead ones (30 days) and what is off.
func TestWorkerRetention(t *testing.T) {
	s := openStore(t)
	c := queue.NewClient(s, queue.ClientConfig{})
	w := newWorker(t, s, fastConfig())
	queue.Handle(w, "ok", func(ctx context.Context, job *queue.Job, _ msg) error { return nil })
	queue.Handle(w, "bad", func(ctx context.Context, job *queue.Job, _ msg) error { return errors.New("no") })
	ok := enqueue(t, c, "ok", nil, queue.EnqueueOptions{})
	bad := enqueue(t, c, "bad", nil, queue.EnqueueOptions{})
	gone := enqueue(t, c, "ok", nil, queue.EnqueueOptions{In: time.Hour})
	if _, err := c.Cancel(ctx, queue.JobFilter{IDs: []int64{gone.ID}}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Drain(ctx, queue.DrainOptions{}); err != nil {
		t.Fatal(err)
	}

	cfg := fastConfig()
	cfg.Clock = laterClock{by: 25 * time.Hour}
	cfg.RetentionInterval = 10 * time.Millisecond
	cfg.RetainCancelled = time.Hour
	w2 := newWorker(t, s, cfg)
	start(t, w2)
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, e1 := c.Job(ctx, ok.ID)
		_, e2 := c.Job(ctx, gone.ID)
		if errors.Is(e1, queue.ErrNotFound) && errors.Is(e2, queue.ErrNotFound) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("succeeded and cancelled jobs not deleted within 15 s: %v, %v", e1, e2)
		}
		time.Sleep(5 * time.Millisecond) // polling the store's state
	}
	if j, err := c.Job(ctx, bad.ID); err != nil || j.State != queue.StateDead {
		t.Errorf("the dead job: %v, %v; want it kept", j, err)
	}
}

type emailArgs struct{ To string }

func (emailArgs) Kind() string { return "email" }

type ctxKey struct{}

type ptrArgs struct{ name string }

func (p *ptrArgs) Kind() string { return p.name }

// Typed kinds, per-kind policy and middleware.
func TestWorkerKinds(t *testing.T) {
	s := openStore(t)
	c := queue.NewClient(s, queue.ClientConfig{})
	cfg := fastConfig()
	var order []string
	var mu sync.Mutex
	mw := func(name string) queue.Middleware {
		return func(next queue.HandlerFunc) queue.HandlerFunc {
			return func(ctx context.Context, job *queue.Job) error {
				mu.Lock()
				order = append(order, name)
				mu.Unlock()
				return next(context.WithValue(ctx, ctxKey{}, name), job)
			}
		}
	}
	cfg.Middleware = []queue.Middleware{mw("outer"), mw("inner")}
	cfg.Kinds = map[string]queue.KindPolicy{
		"email": {MaxAttempts: 2},
		"any":   {Retryable: queue.RetryAll, MaxAttempts: 3},
	}
	w := newWorker(t, s, cfg)
	var seen []string
	queue.HandleArgs(w, func(ctx context.Context, job *queue.Job, a emailArgs) error {
		mu.Lock()
		seen = append(seen, a.To+" "+ctx.Value(ctxKey{}).(string))
		mu.Unlock()
		return retry.Transient(errors.New("smtp busy"))
	})
	queue.Handle(w, "any", func(ctx context.Context, job *queue.Job, _ msg) error { return errors.New("unclassified") })
	em, inserted, err := c.EnqueueArgs(ctx, emailArgs{To: "ada@example.com"}, queue.EnqueueOptions{})
	if err != nil || !inserted || em.Kind != "email" {
		t.Fatalf("EnqueueArgs = %+v, %v, %v", em, inserted, err)
	}
	an := enqueue(t, c, "any", nil, queue.EnqueueOptions{})
	own := enqueue(t, c, "any", nil, queue.EnqueueOptions{MaxAttempts: 1}) // the job's own override wins
	if _, err := w.Drain(ctx, queue.DrainOptions{WaitScheduled: true}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		id      int64
		attempt int
		reason  string
	}{{em.ID, 2, retry.ReasonAttempts.Key()}, {an.ID, 3, retry.ReasonAttempts.Key()}, {own.ID, 1, retry.ReasonAttempts.Key()}} {
		j, _ := c.Job(ctx, tc.id)
		if j.State != queue.StateDead || j.Attempt != tc.attempt || j.DeadReason != tc.reason {
			t.Errorf("job %d (%s): %s after %d attempts (%s); want dead after %d (%s)", j.ID, j.Kind, j.State, j.Attempt, j.DeadReason, tc.attempt, tc.reason)
		}
	}
	if !slices.Equal(seen, []string{"ada@example.com inner", "ada@example.com inner"}) {
		t.Errorf("the handler saw %v", seen)
	}
	if len(order) != 12 || order[0] != "outer" || order[1] != "inner" {
		t.Errorf("middleware ran %v, want outer then inner, 6 attempts", order)
	}
	func() {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "value receiver") {
				t.Errorf("HandleArgs with a pointer type: panic %v", r)
			}
		}()
		queue.HandleArgs(newWorker(t, s, cfg), func(ctx context.Context, job *queue.Job, a *ptrArgs) error { return nil })
	}()
	if _, _, err := c.EnqueueArgs(ctx, nil, queue.EnqueueOptions{}); !errors.Is(err, queue.ErrInvalid) {
		t.Errorf("EnqueueArgs(nil): %v", err)
	}
	for _, k := range []map[string]queue.KindPolicy{{"": {}}, {"x": {Policy: queue.JobPolicy{Backoff: &backoff.Schedule{Base: -1}}}}} {
		if _, err := queue.NewWorker(s, queue.WorkerConfig{Kinds: k}); !errors.Is(err, queue.ErrInvalid) {
			t.Errorf("Kinds %v: %v, want ErrInvalid", k, err)
		}
	}
}

// laterClock reads the wall clock shifted by a fixed amount.
type laterClock struct {
	clock.Real
	by time.Duration
}

func (c laterClock) Now() time.Time { return time.Now().Add(c.by) }
