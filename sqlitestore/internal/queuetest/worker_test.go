// Package queuetest holds queue's tests that need a real store: the worker,
// the client's operations and the call protocol end to end, over SQLite. They
// live in sqlitestore's module because queue belongs to heed's core module,
// which requires no third-party module (not even for tests). It has only
// tests.
package queuetest

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/internal/leakcheck"
	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
	"github.com/heed-go/heed/retry"
	"github.com/heed-go/heed/sqlitestore"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

var ctx = context.Background()

func openStore(t *testing.T) *sqlitestore.Store {
	t.Helper()
	s, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "heed.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// fastConfig is a worker config with millisecond timings for tests. Its
// lease is long (a minute): the worker rescues every 20 ms, and with a
// lease of 2 s a stall of a loaded machine (-race, load 14) between a
// claim and its result's write had the job rescued as lost; the tests of
// leases set their own.
func fastConfig() queue.WorkerConfig {
	return queue.WorkerConfig{
		ID:             "test-worker",
		Policy:         retry.Policy{Backoff: backoff.Schedule{Base: time.Millisecond, Cap: 5 * time.Millisecond}},
		PollInterval:   10 * time.Millisecond,
		Lease:          time.Minute,
		RescueInterval: 20 * time.Millisecond,
	}
}

func newWorker(t *testing.T, s jobstore.Store, cfg queue.WorkerConfig) *queue.Worker {
	t.Helper()
	w, err := queue.NewWorker(s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func start(t *testing.T, w *queue.Worker) {
	t.Helper()
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		w.Shutdown(sctx)
	})
}

func enqueue(t *testing.T, c *queue.Client, kind string, args any, opts queue.EnqueueOptions) *queue.Job {
	t.Helper()
	j, _, err := c.Enqueue(ctx, kind, args, opts)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// waitFinal waits until every job in ids is succeeded or dead, and returns
// them.
func waitFinal(t *testing.T, s jobstore.Store, ids ...int64) map[int64]*queue.Job {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		out := map[int64]*queue.Job{}
		for _, id := range ids {
			j, err := s.JobGet(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if j.State == queue.StateSucceeded || j.State == queue.StateDead {
				out[id] = j
			}
		}
		if len(out) == len(ids) {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("jobs not final after 15 s: %d of %d", len(out), len(ids))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type msg struct {
	N int `json:"n"`
}

func outcomes(j *queue.Job) string {
	var b []string
	for _, e := range j.History {
		b = append(b, e.Outcome+"/"+e.Action)
	}
	return strings.Join(b, " ")
}

// plainStore hides the optional interfaces (Notifier, TransitionBatcher)
// of the store it wraps.
type plainStore struct{ jobstore.Store }

func TestWorkerLifecycle(t *testing.T) {
	t.Run("batched", func(t *testing.T) { testLifecycle(t, openStore(t)) })
	t.Run("plain", func(t *testing.T) { testLifecycle(t, plainStore{openStore(t)}) })
}

func testLifecycle(t *testing.T, s jobstore.Store) {
	c := queue.NewClient(s, queue.ClientConfig{})
	w := newWorker(t, s, fastConfig())

	var flaky, panicky, snoozy atomic.Int32
	queue.Handle(w, "ok", func(ctx context.Context, job *queue.Job, m msg) error {
		if m.N != 42 {
			return retry.Permanent(errors.New("bad args"))
		}
		return nil
	})
	queue.Handle(w, "flaky", func(ctx context.Context, job *queue.Job, _ msg) error {
		if flaky.Add(1) <= 2 {
			return retry.Transient(errors.New("connection reset"))
		}
		return nil
	})
	queue.Handle(w, "perm", func(ctx context.Context, job *queue.Job, _ msg) error {
		return retry.Permanent(errors.New("no such user"))
	})
	queue.Handle(w, "always", func(ctx context.Context, job *queue.Job, _ msg) error {
		return retry.Transient(errors.New("still down"))
	})
	queue.Handle(w, "panic", func(ctx context.Context, job *queue.Job, _ msg) error {
		if panicky.Add(1) == 1 {
			var m map[string]int
			m["x"] = 1 // nil map write
		}
		return nil
	})
	queue.Handle(w, "snooze", func(ctx context.Context, job *queue.Job, _ msg) error {
		if snoozy.Add(1) == 1 {
			return queue.Snooze(time.Millisecond)
		}
		return nil
	})
	queue.Handle(w, "typed", func(ctx context.Context, job *queue.Job, _ msg) error { return nil })

	ok := enqueue(t, c, "ok", msg{42}, queue.EnqueueOptions{})
	fl := enqueue(t, c, "flaky", nil, queue.EnqueueOptions{})
	pm := enqueue(t, c, "perm", nil, queue.EnqueueOptions{})
	al := enqueue(t, c, "always", nil, queue.EnqueueOptions{MaxAttempts: 3})
	bu := enqueue(t, c, "always", nil, queue.EnqueueOptions{Policy: queue.JobPolicy{TimeBudget: 2 * time.Second,
		Backoff: &backoff.Schedule{Kind: backoff.Constant, Base: 10 * time.Second, Jitter: backoff.NoJitter}}})
	pa := enqueue(t, c, "panic", nil, queue.EnqueueOptions{})
	sn := enqueue(t, c, "snooze", nil, queue.EnqueueOptions{})
	un := enqueue(t, c, "nobody-handles-this", nil, queue.EnqueueOptions{MaxAttempts: 2})
	ba := enqueue(t, c, "typed", []byte(`{"n":"not a number"}`), queue.EnqueueOptions{})
	start(t, w)

	got := waitFinal(t, s, ok.ID, fl.ID, pm.ID, al.ID, bu.ID, pa.ID, sn.ID, un.ID, ba.ID)
	for _, tc := range []struct {
		name     string
		id       int64
		state    queue.State
		attempt  int
		reason   string
		outcomes string
	}{
		{"ok", ok.ID, queue.StateSucceeded, 1, "", "success/done"},
		{"flaky", fl.ID, queue.StateSucceeded, 3, "", "transient/retry transient/retry success/done"},
		{"permanent", pm.ID, queue.StateDead, 1, "permanent", "permanent/give_up"},
		{"attempts", al.ID, queue.StateDead, 3, "attempts", "transient/retry transient/retry transient/give_up"},
		{"time budget", bu.ID, queue.StateDead, 1, "time_budget", "transient/give_up"},
		{"panic", pa.ID, queue.StateDead, 1, "permanent", "permanent/give_up"},
		{"snooze", sn.ID, queue.StateSucceeded, 1, "", "snoozed/snooze success/done"},
		{"unknown kind", un.ID, queue.StateDead, 1, jobstore.ReasonUnknownKind, "permanent/give_up"},
		{"bad args", ba.ID, queue.StateDead, 1, "permanent", "permanent/give_up"},
	} {
		j := got[tc.id]
		if j.State != tc.state || j.Attempt != tc.attempt || j.DeadReason != tc.reason || outcomes(j) != tc.outcomes {
			t.Errorf("%s: state %s attempt %d reason %q history %q; want %s %d %q %q",
				tc.name, j.State, j.Attempt, j.DeadReason, outcomes(j), tc.state, tc.attempt, tc.reason, tc.outcomes)
		}
		if j.LeaseToken != "" || j.FinishedAt.IsZero() {
			t.Errorf("%s: final job keeps a lease or has no FinishedAt: %+v", tc.name, j)
		}
		for _, e := range j.History {
			if e.Worker != "test-worker" || e.StartedAt.IsZero() || e.FinishedAt.Before(e.StartedAt) {
				t.Errorf("%s: entry %+v", tc.name, e)
			}
		}
	}
	if e := got[pa.ID].History[0]; !strings.Contains(e.Error, "assignment to entry in nil map") ||
		!strings.Contains(e.Panic, "worker_test.go") {
		t.Errorf("panic entry: error %q, stack %.200q", e.Error, e.Panic)
	}
	if e := got[un.ID].History[0]; !strings.Contains(e.Error, `no handler for kind "nobody-handles-this"`) {
		t.Errorf("unknown kind entry: %q", e.Error)
	}
	if e := got[fl.ID].History[0]; e.Error != "connection reset" || e.Delay <= 0 || e.Delay > 5*time.Millisecond {
		t.Errorf("flaky entry: %+v", e)
	}
}

func TestWorkerShutdownGrace(t *testing.T) {
	s := openStore(t)
	c := queue.NewClient(s, queue.ClientConfig{})
	w := newWorker(t, s, fastConfig())
	started := make(chan struct{})
	waited := make(chan error, 1)
	queue.Handle(w, "slow", func(ctx context.Context, job *queue.Job, _ msg) error {
		close(started)
		// The job runs until Shutdown has begun: WaitEmpty, which this
		// running job keeps from returning empty, returns ErrStopped then.
		_, err := w.WaitEmpty(ctx, queue.DrainOptions{})
		waited <- err
		return nil
	})
	j := enqueue(t, c, "slow", nil, queue.EnqueueOptions{})
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	<-started
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := w.Shutdown(sctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := <-waited; !errors.Is(err, queue.ErrStopped) {
		t.Errorf("the job's WaitEmpty: %v, want ErrStopped (Shutdown began while it ran)", err)
	}
	if g, _ := s.JobGet(ctx, j.ID); g.State != queue.StateSucceeded {
		t.Errorf("job after a graceful shutdown: %s", g.State)
	}
	if err := w.Shutdown(sctx); !errors.Is(err, queue.ErrStopped) {
		t.Errorf("second Shutdown: %v", err)
	}
	if err := w.Start(ctx); !errors.Is(err, queue.ErrStopped) {
		t.Errorf("Start after Shutdown: %v", err)
	}
}

func TestWorkerShutdownRelease(t *testing.T) {
	s := openStore(t)
	c := queue.NewClient(s, queue.ClientConfig{})
	w := newWorker(t, s, fastConfig())
	started := make(chan struct{})
	queue.Handle(w, "stuck", func(ctx context.Context, job *queue.Job, _ msg) error {
		close(started)
		<-ctx.Done()
		return ctx.Err()
	})
	j := enqueue(t, c, "stuck", nil, queue.EnqueueOptions{})
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	<-started
	sctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := w.Shutdown(sctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown past the grace: %v, want DeadlineExceeded", err)
	}
	g, _ := s.JobGet(ctx, j.ID)
	if g.State != queue.StateAvailable || g.Attempt != 0 || g.LeaseToken != "" || outcomes(g) != "released/release" {
		t.Errorf("released job: state %s attempt %d history %q", g.State, g.Attempt, outcomes(g))
	}
	// Another worker picks it up, from attempt 1.
	w2 := newWorker(t, s, fastConfig())
	queue.Handle(w2, "stuck", func(ctx context.Context, job *queue.Job, _ msg) error { return nil })
	start(t, w2)
	g = waitFinal(t, s, j.ID)[j.ID]
	if g.State != queue.StateSucceeded || g.Attempt != 1 {
		t.Errorf("after release: %s attempt %d", g.State, g.Attempt)
	}
}

func TestWorkerRescue(t *testing.T) {
	s := openStore(t)
	c := queue.NewClient(s, queue.ClientConfig{})
	j := enqueue(t, c, "k", nil, queue.EnqueueOptions{})
	// A worker claims the job and dies.
	now := time.Now()
	claimed, err := s.JobClaim(ctx, jobstore.ClaimParams{Queue: queue.DefaultQueue, Limit: 1, Now: now,
		LeaseUntil: now.Add(50 * time.Millisecond), Worker: "ghost"})
	if err != nil || len(claimed) != 1 {
		t.Fatal(claimed, err)
	}
	var events []string
	var mu sync.Mutex
	succeeded := make(chan struct{}, 1)
	cfg := fastConfig()
	cfg.Observe = func(ctx context.Context, e queue.Event) {
		mu.Lock()
		events = append(events, e.Kind.String())
		mu.Unlock()
		if e.Kind == queue.EventSucceeded {
			select {
			case succeeded <- struct{}{}:
			default:
			}
		}
	}
	w := newWorker(t, s, cfg)
	queue.Handle(w, "k", func(ctx context.Context, job *queue.Job, _ msg) error { return nil })
	start(t, w)
	g := waitFinal(t, s, j.ID)[j.ID]
	if g.State != queue.StateSucceeded || g.Attempt != 2 || outcomes(g) != "lost/retry success/done" {
		t.Fatalf("rescued job: %s attempt %d history %q", g.State, g.Attempt, outcomes(g))
	}
	if e := g.History[0]; e.Worker != "ghost" || !strings.Contains(e.Error, "lease expired") {
		t.Errorf("lost entry: %+v", e)
	}
	// The ghost comes back: it changes nothing.
	err = s.JobTransition(ctx, jobstore.Transition{ID: j.ID, LeaseToken: claimed[0].LeaseToken, State: queue.StateDead,
		Attempt: 1, FinishedAt: time.Now(), DeadReason: "permanent"})
	if !errors.Is(err, jobstore.ErrLeaseLost) {
		t.Errorf("late transition: %v, want ErrLeaseLost", err)
	}
	// The worker reports "succeeded" after storing it: wait for the event.
	select {
	case <-succeeded:
	case <-time.After(10 * time.Second):
		t.Error("no succeeded event 10 s after the job was stored as succeeded")
	}
	mu.Lock()
	defer mu.Unlock()
	// The rescuer reports "retried" after storing it, so the new attempt
	// may start (even end) first.
	sorted := slices.Clone(events)
	slices.Sort(sorted)
	if strings.Join(sorted, " ") != "lost retried started succeeded" || events[0] != "lost" {
		t.Errorf("events %q", events)
	}
}

func TestWorkerLeaseRenewal(t *testing.T) {
	s := openStore(t)
	c := queue.NewClient(s, queue.ClientConfig{})
	cfg := fastConfig()
	// A lease of 2 s (renewed every 667 ms): on a loaded two-core machine
	// a 600 ms lease was lost to a stall of the renewal, and the test
	// failed for that, not for a missing renewal.
	cfg.Lease = 2 * time.Second
	cfg.Queues = map[string]int{"solo": 1}
	w := newWorker(t, s, cfg)
	queue.Handle(w, "long", func(ctx context.Context, job *queue.Job, _ msg) error {
		time.Sleep(5 * time.Second) // two and a half leases
		return ctx.Err()
	})
	// A second worker rescues every 20 ms (but works another queue):
	// renewal must keep it away.
	ocfg := fastConfig()
	ocfg.Lease = 2 * time.Second
	other := newWorker(t, s, ocfg)
	j := enqueue(t, c, "long", nil, queue.EnqueueOptions{Queue: "solo"})
	start(t, w)
	start(t, other)
	g := waitFinal(t, s, j.ID)[j.ID]
	if g.State != queue.StateSucceeded || g.Attempt != 1 || outcomes(g) != "success/done" {
		t.Errorf("long job: %s attempt %d history %q", g.State, g.Attempt, outcomes(g))
	}
}

func TestWorkerLeaseLost(t *testing.T) {
	s := openStore(t)
	c := queue.NewClient(s, queue.ClientConfig{})
	cfg := fastConfig()
	cfg.Lease = 300 * time.Millisecond
	cfg.RescueInterval = time.Hour // this worker does not rescue (after its first pass)
	lostc := make(chan error, 1)
	cfg.Observe = func(ctx context.Context, e queue.Event) {
		if e.Kind == queue.EventLeaseLost {
			lostc <- e.Err
		}
	}
	w := newWorker(t, s, cfg)
	started := make(chan struct{})
	cause := make(chan error, 1)
	queue.Handle(w, "k", func(ctx context.Context, job *queue.Job, _ msg) error {
		close(started)
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return ctx.Err()
	})
	j := enqueue(t, c, "k", nil, queue.EnqueueOptions{})
	start(t, w)
	<-started
	// Someone else takes the lease (as a rescuer would after a partition).
	later := time.Now().Add(time.Hour)
	stolen, err := s.JobRescue(ctx, jobstore.RescueParams{Now: later, LeaseUntil: later.Add(time.Hour), Limit: 1})
	if err != nil || len(stolen) != 1 {
		t.Fatal(stolen, err)
	}
	select {
	case err := <-cause:
		if !errors.Is(err, jobstore.ErrLeaseLost) {
			t.Errorf("handler's context cause: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("handler not cancelled after losing its lease")
	}
	if err := <-lostc; !errors.Is(err, jobstore.ErrLeaseLost) {
		t.Errorf("EventLeaseLost error: %v", err)
	}
	g, _ := s.JobGet(ctx, j.ID)
	if g.State != queue.StateRunning || g.LeaseToken != stolen[0].LeaseToken || len(g.History) != 0 {
		t.Errorf("worker changed a job it lost: %+v", g)
	}
}

// watchedClaims is a SQLite store that calls claimed with what each claim
// asked for and returned. It embeds the store itself, so that the worker
// finds its optional interfaces (notifications, batched results, held
// claims).
type watchedClaims struct {
	*sqlitestore.Store
	claimed func(p jobstore.ClaimParams, jobs []*jobstore.Job)
}

func (s *watchedClaims) JobClaim(ctx context.Context, p jobstore.ClaimParams) ([]*jobstore.Job, error) {
	jobs, err := s.Store.JobClaim(ctx, p)
	if err == nil {
		s.claimed(p, jobs)
	}
	return jobs, err
}

func (s *watchedClaims) JobClaimHeld(ctx context.Context, p jobstore.ClaimParams) ([]*jobstore.Job, bool, error) {
	jobs, held, err := s.Store.JobClaimHeld(ctx, p)
	if err == nil {
		s.claimed(p, jobs)
	}
	return jobs, held, err
}

// TestWorkerConcurrencyLimit: a worker runs at most as many jobs of a
// queue at once as its Queues say, and that many when it has them. The
// first jobs of each queue wait until as many run as the queue allows
// (so the peak is reached however slowly the machine starts them), and
// no claim takes a job of queue a while 3 of its jobs have not returned.
func TestWorkerConcurrencyLimit(t *testing.T) {
	limits := map[string]int32{"a": 3, "b": 1}
	var claimedA, returnedA, mostA atomic.Int32 // jobs of a claimed, returned by their handler; most claimed and not returned
	s := &watchedClaims{Store: openStore(t), claimed: func(p jobstore.ClaimParams, jobs []*jobstore.Job) {
		if p.Queue != "a" {
			return
		}
		// The worker frees a job's place after its handler returned, so
		// this is at least the jobs of a that hold a place.
		out := claimedA.Add(int32(len(jobs))) - returnedA.Load()
		for m := mostA.Load(); out > m && !mostA.CompareAndSwap(m, out); m = mostA.Load() {
		}
	}}
	c := queue.NewClient(s, queue.ClientConfig{})
	cfg := fastConfig()
	cfg.Queues = map[string]int{"a": int(limits["a"]), "b": int(limits["b"])}
	w := newWorker(t, s, cfg)
	var cur, peak, curB, peakB atomic.Int32
	full := map[string]chan struct{}{"a": make(chan struct{}), "b": make(chan struct{})}
	var fullOnce sync.Map // queue -> *sync.Once
	queue.Handle(w, "k", func(ctx context.Context, job *queue.Job, _ msg) error {
		n, b := &cur, &peak
		if job.Queue == "b" {
			n, b = &curB, &peakB
		}
		v := n.Add(1)
		for {
			p := b.Load()
			if v <= p || b.CompareAndSwap(p, v) {
				break
			}
		}
		if v >= limits[job.Queue] {
			once, _ := fullOnce.LoadOrStore(job.Queue, &sync.Once{})
			once.(*sync.Once).Do(func() { close(full[job.Queue]) })
		}
		select {
		case <-full[job.Queue]:
		case <-ctx.Done():
		}
		n.Add(-1)
		if job.Queue == "a" {
			returnedA.Add(1)
		}
		return nil
	})
	var ids []int64
	for i := range 12 {
		q := "a"
		if i%3 == 0 {
			q = "b"
		}
		ids = append(ids, enqueue(t, c, "k", nil, queue.EnqueueOptions{Queue: q}).ID)
	}
	start(t, w)
	for _, q := range []string{"a", "b"} {
		select {
		case <-full[q]:
		case <-time.After(15 * time.Second):
			t.Fatalf("queue %s never ran %d jobs at once (peaks: a %d, b %d)", q, limits[q], peak.Load(), peakB.Load())
		}
	}
	waitFinal(t, s, ids...)
	if p := peak.Load(); p != 3 {
		t.Errorf("queue a peaked at %d running, want 3", p)
	}
	if p := peakB.Load(); p != 1 {
		t.Errorf("queue b peaked at %d running, want 1", p)
	}
	if m := mostA.Load(); m > 3 {
		t.Errorf("claims of queue a left %d jobs claimed and not returned, want at most 3", m)
	}
}

// heldWrites holds every result write until open is closed, announcing
// each on held.
type heldWrites struct {
	jobstore.Store // hides the store's TransitionBatcher: writes come one by one
	held           chan int64
	open           chan struct{}
	written        atomic.Int32
}

func (s *heldWrites) JobTransition(ctx context.Context, t jobstore.Transition) error {
	s.held <- t.ID
	select {
	case <-s.open:
	case <-ctx.Done():
		return ctx.Err()
	}
	err := s.Store.JobTransition(ctx, t)
	s.written.Add(1)
	return err
}

// TestWorkerSlotFreedBeforeResult: at concurrency 1, the next job runs
// while the first one's result is being written, and a third waits until
// a write lands (at most as many jobs wait for their write as may run).
func TestWorkerSlotFreedBeforeResult(t *testing.T) {
	base := openStore(t)
	s := &heldWrites{Store: base, held: make(chan int64, 3), open: make(chan struct{})}
	c := queue.NewClient(base, queue.ClientConfig{})
	cfg := fastConfig()
	cfg.Queues = map[string]int{queue.DefaultQueue: 1}
	w := newWorker(t, s, cfg)
	started := make(chan int32, 3) // writes landed when each handler started
	queue.Handle(w, "k", func(ctx context.Context, job *queue.Job, _ msg) error {
		started <- s.written.Load()
		return nil
	})
	var ids []int64
	for range 3 {
		ids = append(ids, enqueue(t, c, "k", nil, queue.EnqueueOptions{}).ID)
	}
	start(t, w)
	timeout := time.After(15 * time.Second)
	for i := range 2 {
		select {
		case <-s.held: // job i's result waits
		case <-timeout:
			t.Fatalf("%d results held, want 2", i)
		}
	}
	for i := range 2 {
		if n := <-started; n != 0 {
			t.Fatalf("handler %d started after %d writes, want 0 (its slot freed before the write)", i+1, n)
		}
	}
	close(s.open)
	select {
	case n := <-started:
		if n == 0 {
			t.Errorf("the third handler started with two results unwritten, want at most one")
		}
	case <-timeout:
		t.Fatal("the third job did not start")
	}
	waitFinal(t, base, ids...)
}

func TestWorkerAttemptTimeout(t *testing.T) {
	s := openStore(t)
	c := queue.NewClient(s, queue.ClientConfig{})
	w := newWorker(t, s, fastConfig())
	queue.Handle(w, "k", func(ctx context.Context, job *queue.Job, _ msg) error {
		<-ctx.Done()
		return ctx.Err()
	})
	j := enqueue(t, c, "k", nil, queue.EnqueueOptions{MaxAttempts: 2, Policy: queue.JobPolicy{AttemptTimeout: 20 * time.Millisecond}})
	start(t, w)
	g := waitFinal(t, s, j.ID)[j.ID]
	if g.State != queue.StateDead || g.DeadReason != "attempts" || outcomes(g) != "timeout/retry timeout/give_up" {
		t.Errorf("timed-out job: %s %q history %q", g.State, g.DeadReason, outcomes(g))
	}
}

func TestWorkerConfigInvalid(t *testing.T) {
	s := openStore(t)
	for name, cfg := range map[string]queue.WorkerConfig{
		"WorkerConfig.Queues": {Queues: map[string]int{"a": 0}},
		"WorkerConfig.Lease":  {Lease: -1},
		"WorkerConfig.Policy": {Policy: retry.Policy{MaxPushback: -time.Second}},
	} {
		_, err := queue.NewWorker(s, cfg)
		if !errors.Is(err, queue.ErrInvalid) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestClientEnqueue(t *testing.T) {
	s := openStore(t)
	var enq atomic.Int32
	c := queue.NewClient(s, queue.ClientConfig{Observe: func(ctx context.Context, e queue.Event) { enq.Add(1) }})
	for name, call := range map[string]func() error{
		"kind": func() error { _, _, err := c.Enqueue(ctx, "", nil, queue.EnqueueOptions{}); return err },
		"args": func() error {
			_, _, err := c.Enqueue(ctx, "k", json("{nope"), queue.EnqueueOptions{})
			return err
		},
		"args marshal": func() error { _, _, err := c.Enqueue(ctx, "k", make(chan int), queue.EnqueueOptions{}); return err },
		"EnqueueOptions.In": func() error {
			_, _, err := c.Enqueue(ctx, "k", nil, queue.EnqueueOptions{In: -time.Second})
			return err
		},
	} {
		if err := call(); !errors.Is(err, queue.ErrInvalid) || !strings.Contains(err.Error(), strings.Fields(name)[0]) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if jobs, _ := c.Jobs(ctx, queue.JobFilter{}); len(jobs) != 0 || enq.Load() != 0 {
		t.Fatalf("bad enqueues wrote %d jobs", len(jobs))
	}
	a, ins, err := c.Enqueue(ctx, "k", msg{1}, queue.EnqueueOptions{UniqueKey: "x", In: time.Hour, Priority: 2})
	if err != nil || !ins || string(a.Args) != `{"n":1}` || a.Priority != 2 {
		t.Fatalf("Enqueue: %+v %v %v", a, ins, err)
	}
	b, ins, err := c.Enqueue(ctx, "k", msg{2}, queue.EnqueueOptions{UniqueKey: "x"})
	if err != nil || ins || b.ID != a.ID {
		t.Fatalf("duplicate Enqueue: %+v %v %v", b, ins, err)
	}
	if enq.Load() != 1 {
		t.Errorf("%d enqueued events, want 1", enq.Load())
	}
	if _, err := c.Job(ctx, 999); !errors.Is(err, queue.ErrNotFound) {
		t.Errorf("Job(999): %v", err)
	}
}

type json string

func (j json) MarshalJSON() ([]byte, error) { return []byte(j), nil }

func TestClientDeadLetter(t *testing.T) {
	s := openStore(t)
	c := queue.NewClient(s, queue.ClientConfig{})
	w := newWorker(t, s, fastConfig())
	var fail atomic.Bool
	fail.Store(true)
	queue.Handle(w, "email", func(ctx context.Context, job *queue.Job, _ msg) error {
		if fail.Load() {
			return retry.Permanent(errors.New("mailbox gone"))
		}
		return nil
	})
	queue.Handle(w, "sms", func(ctx context.Context, job *queue.Job, _ msg) error {
		return retry.Transient(errors.New("gateway down"))
	})
	e1 := enqueue(t, c, "email", nil, queue.EnqueueOptions{})
	e2 := enqueue(t, c, "email", nil, queue.EnqueueOptions{})
	s1 := enqueue(t, c, "sms", nil, queue.EnqueueOptions{MaxAttempts: 1})
	start(t, w)
	waitFinal(t, s, e1.ID, e2.ID, s1.ID)

	dead, err := c.Dead(ctx, queue.DeadFilter{Reason: "permanent"})
	if err != nil || len(dead) != 2 || dead[0].ID != e1.ID || dead[0].History[0].Error != "mailbox gone" {
		t.Fatalf("Dead(permanent): %v %v", dead, err)
	}
	if dead, _ := c.Dead(ctx, queue.DeadFilter{Kind: "sms"}); len(dead) != 1 || dead[0].DeadReason != "attempts" {
		t.Errorf("Dead(sms): %v", dead)
	}
	if dead, _ := c.Dead(ctx, queue.DeadFilter{OlderThan: time.Hour}); len(dead) != 0 {
		t.Errorf("Dead(older than 1h): %d jobs", len(dead))
	}
	if _, err := c.Dead(ctx, queue.DeadFilter{OlderThan: -1}); !errors.Is(err, queue.ErrInvalid) {
		t.Errorf("negative OlderThan: %v", err)
	}
	st, err := c.Stats(ctx)
	if err != nil || st.Dead != 3 || st.OldestDead.IsZero() {
		t.Errorf("Stats: %+v %v", st, err)
	}

	fail.Store(false)
	n, err := c.Requeue(ctx, queue.DeadFilter{IDs: []int64{e1.ID}})
	if err != nil || n != 1 {
		t.Fatalf("Requeue: %d %v", n, err)
	}
	g := waitFinal(t, s, e1.ID)[e1.ID]
	if g.State != queue.StateSucceeded || g.Attempt != 1 || outcomes(g) != "permanent/give_up requeued/requeue success/done" {
		t.Errorf("requeued job: %s attempt %d history %q", g.State, g.Attempt, outcomes(g))
	}
	if n, err := c.DeleteDead(ctx, queue.DeadFilter{OlderThan: -time.Hour}); !errors.Is(err, queue.ErrInvalid) || n != 0 {
		t.Errorf("DeleteDead(OlderThan -1h): %d %v", n, err)
	}
	if n, err := c.DeleteDead(ctx, queue.DeadFilter{OlderThan: time.Hour}); err != nil || n != 0 {
		t.Errorf("DeleteDead(OlderThan 1h): %d %v", n, err)
	}
	if n, err := c.DeleteDead(ctx, queue.DeadFilter{Kind: "sms"}); err != nil || n != 1 {
		t.Errorf("DeleteDead(sms): %d %v", n, err)
	}
	if st, _ := c.Stats(ctx); st.Dead != 1 {
		t.Errorf("dead after delete: %d", st.Dead)
	}
	succeeded := func(age time.Duration) queue.JobFilter {
		return queue.JobFilter{State: queue.StateSucceeded, FinishedBefore: time.Now().Add(-age)}
	}
	if n, err := c.Delete(ctx, succeeded(time.Hour)); err != nil || n != 0 {
		t.Errorf("Delete(succeeded over 1h ago): %d %v", n, err)
	}
	if n, err := c.Delete(ctx, succeeded(0)); err != nil || n != 1 {
		t.Errorf("Delete(succeeded before now): %d %v; want the requeued job that succeeded", n, err)
	}
	if st, _ := c.Stats(ctx); st.Dead != 1 {
		t.Errorf("dead after purge of succeeded jobs: %d", st.Dead)
	}
}

// With a store that notifies, a job enqueued while the worker idles runs
// at once, long before the next poll.
func TestWorkerNotifyAndRun(t *testing.T) {
	idle := make(chan struct{}, 1)
	s := &watchedClaims{Store: openStore(t), claimed: func(p jobstore.ClaimParams, jobs []*jobstore.Job) {
		if len(jobs) == 0 {
			select {
			case idle <- struct{}{}:
			default:
			}
		}
	}}
	c := queue.NewClient(s, queue.ClientConfig{})
	cfg := fastConfig()
	cfg.PollInterval = time.Hour
	w := newWorker(t, s, cfg)
	ran := make(chan time.Time, 1)
	queue.Handle(w, "k", func(ctx context.Context, job *queue.Job, _ msg) error {
		ran <- time.Now()
		return nil
	})
	rctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- w.Run(rctx) }()
	// The worker subscribes to notifications before it claims: after its
	// first, empty claim it is idle, its next poll an hour away.
	select {
	case <-idle:
	case <-time.After(10 * time.Second):
		t.Fatal("the worker made no claim")
	}
	enq := time.Now()
	j := enqueue(t, c, "k", nil, queue.EnqueueOptions{})
	select {
	case at := <-ran:
		if d := at.Sub(enq); d > 2*time.Second {
			t.Errorf("job started %v after enqueue", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("job not started: notification missed")
	}
	waitFinal(t, s, j.ID)
	cancel()
	if err := <-errc; err != nil {
		t.Errorf("Run: %v", err)
	}
}

// A retry due before the next poll runs when it is due, not at the poll.
func TestWorkerWakesForItsOwnShortRetries(t *testing.T) {
	s := openStore(t)
	cfg := fastConfig()
	cfg.PollInterval = time.Hour // only the worker's own wake-up can run the retries
	cfg.Policy.Backoff = backoff.Schedule{Kind: backoff.Constant, Base: 30 * time.Millisecond, Jitter: backoff.NoJitter}
	w := newWorker(t, s, cfg)
	var calls atomic.Int64
	queue.Handle(w, "flaky", func(ctx context.Context, job *queue.Job, m msg) error {
		if calls.Add(1) < 3 {
			return retry.Transient(errors.New("not yet"))
		}
		return nil
	})
	c := queue.NewClient(s, queue.ClientConfig{})
	j := enqueue(t, c, "flaky", msg{N: 1}, queue.EnqueueOptions{})
	begin := time.Now()
	start(t, w)
	got := waitFinal(t, s, j.ID)[j.ID]
	if got.State != queue.StateSucceeded || got.Attempt != 3 {
		t.Fatalf("state %s after %d attempts", got.State, got.Attempt)
	}
	if el := time.Since(begin); el > 10*time.Second {
		t.Fatalf("took %v: the retries waited for the hourly poll", el)
	}
}
