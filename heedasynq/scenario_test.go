package heedasynq_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/breaker"
	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/clock"
	"github.com/heed-go/heed/clock/clocktest"
	"github.com/heed-go/heed/heedasynq"
	"github.com/heed-go/heed/internal/enginetest"
	"github.com/heed-go/heed/retry"
)

// short is a backoff that keeps the real-time tests short (asynq waits
// until the next whole second anyway).
var short = backoff.Schedule{Kind: backoff.Constant, Base: 20 * time.Millisecond, Jitter: backoff.NoJitter}

var errFlaky = errors.New("flaky: 503 service unavailable")

func newPolicy(t testing.TB, p retry.Policy, opt asynq.RedisConnOpt) *heedasynq.Policy {
	t.Helper()
	h, err := heedasynq.New(p, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// 50 tasks that each fail once, under a default retry budget: the budget
// refuses most of the retries at first, and a refused retry is deferred,
// not failed (asynq counts no retry for it), so every task succeeds.
func TestFailOnceUnderDefaultBudget(t *testing.T) {
	opt, q := openQueue(t)
	b, err := budget.New(budget.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var deferred atomic.Int64
	h := newPolicy(t, retry.Policy{Backoff: short, Budget: b, Observe: func(_ context.Context, e retry.Event) {
		if e.Action == retry.Defer {
			deferred.Add(1)
		}
	}}, opt)
	var mu sync.Mutex
	failed := map[int]bool{}
	serve(t, opt, q, h, func(ctx context.Context, task *asynq.Task) error {
		mu.Lock()
		defer mu.Unlock()
		if n := payload(task); !failed[n] {
			failed[n] = true
			return retry.Transient(errFlaky)
		}
		return nil
	}, 20)
	const n = 50
	ids := enqueue(t, opt, q, n)
	qi := waitFinal(t, opt, q, n, time.Minute)
	if qi.Completed != n {
		t.Fatalf("%d of %d completed: %+v", qi.Completed, n, qi)
	}
	for _, id := range ids {
		info, r := taskInfo(t, opt, q, id)
		if info.Retried != 1 || r["action"] != "done" {
			t.Errorf("task %s: retried %d, heed's record %v; want 1 (deferrals do not count) and done", id, info.Retried, r)
		}
	}
	t.Logf("50 tasks, each failing once: all completed; %d deferrals by the retry budget", deferred.Load())
}

// A retry the budget refuses is deferred until the budget refills: the
// handler does not run, asynq counts no retry, and the task succeeds later.
// (The conformance suite's case needs a retry within a second of the
// failure, which asynq cannot schedule; this budget earns nothing and
// allows 2 retries a second, so 10 tasks failing together must wait.)
func TestBudgetDefersRetries(t *testing.T) {
	opt, q := openQueue(t)
	b, err := budget.New(budget.Config{Window: time.Second, MinPerSecond: 2, Earn: -1})
	if err != nil {
		t.Fatal(err)
	}
	var deferred atomic.Int64
	h := newPolicy(t, retry.Policy{Backoff: short, Budget: b, Observe: func(_ context.Context, e retry.Event) {
		if e.Action == retry.Defer && e.Reason == retry.ReasonBudget {
			deferred.Add(1)
		}
	}}, opt)
	var mu sync.Mutex
	failed := map[int]bool{}
	serve(t, opt, q, h, func(ctx context.Context, task *asynq.Task) error {
		mu.Lock()
		defer mu.Unlock()
		if n := payload(task); !failed[n] {
			failed[n] = true
			return retry.Transient(errFlaky)
		}
		return nil
	}, 10)
	const n = 10
	ids := enqueue(t, opt, q, n)
	qi := waitFinal(t, opt, q, n, time.Minute)
	if qi.Completed != n {
		t.Fatalf("%d of %d completed: %+v", qi.Completed, n, qi)
	}
	if deferred.Load() == 0 {
		t.Errorf("no retry was deferred by a budget of 2 retries a second for 10 retries")
	}
	for _, id := range ids {
		if info, _ := taskInfo(t, opt, q, id); info.Retried != 1 {
			t.Errorf("task %s: retried %d, want 1: deferrals do not count", id, info.Retried)
		}
	}
	t.Logf("10 tasks failing once under 2 retries a second: all completed; %d deferrals", deferred.Load())
}

// While the breaker is open no task's handler runs, and no task is
// archived: each is put back until the breaker may admit it, without
// counting a retry, and completes once the breaker lets calls through.
func TestOpenBreakerRunsNoAttempt(t *testing.T) {
	opt, q := openQueue(t)
	br, err := breaker.New(breaker.Config{MinCalls: 1, Cooldown: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	opened := time.Now()
	permit, _ := br.AllowAt(opened)
	permit.RecordAt(opened, breaker.Failure) // another caller saw the dependency fail
	readyAt := br.ReadyAt(opened)
	h := newPolicy(t, retry.Policy{Backoff: short, Breaker: br}, opt)
	var early, runs atomic.Int64
	serve(t, opt, q, h, func(ctx context.Context, task *asynq.Task) error {
		runs.Add(1)
		if time.Now().Before(readyAt) {
			early.Add(1)
		}
		return nil
	}, 20)
	const n = 20
	ids := enqueue(t, opt, q, n)

	// While the breaker is open every task is deferred, none run and none
	// archived.
	for _, id := range ids {
		for {
			info, r := taskInfo(t, opt, q, id)
			if r["action"] == "defer" && r["reason"] == "breaker_open" {
				if info.State == asynq.TaskStateArchived || info.Retried != 0 {
					t.Errorf("task %s: %v, retried %d while the breaker was open", id, info.State, info.Retried)
				}
				break
			}
			if time.Now().After(readyAt) {
				t.Fatalf("task %s was not deferred before the breaker's cooldown ended: %v, record %v", id, info.State, r)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if r := runs.Load(); r != 0 {
		t.Fatalf("%d attempts ran while the breaker was open", r)
	}

	qi := waitFinal(t, opt, q, n, time.Minute)
	if qi.Completed != n || qi.Archived != 0 {
		t.Fatalf("%d of %d completed, %d archived", qi.Completed, n, qi.Archived)
	}
	if e := early.Load(); e != 0 {
		t.Errorf("%d attempts ran before the breaker's cooldown ended", e)
	}
	for _, id := range ids {
		if info, _ := taskInfo(t, opt, q, id); info.Retried != 0 {
			t.Errorf("task %s: retried %d, want 0: deferrals do not count", id, info.Retried)
		}
	}
}

// A permanent error, marked or not known to be transient, is not retried:
// asynq archives the task after one attempt, and heed's record says why.
func TestPermanentErrorNotRetried(t *testing.T) {
	opt, q := openQueue(t)
	h := newPolicy(t, retry.Policy{Backoff: short, Attempts: 5}, opt)
	var runs atomic.Int64
	serve(t, opt, q, h, func(ctx context.Context, task *asynq.Task) error {
		runs.Add(1)
		if payload(task) == 0 {
			return retry.Permanent(errors.New("422 unprocessable entity"))
		}
		return errors.New("invalid input: no such account") // unclassified: not known to pass
	}, 2)
	ids := enqueue(t, opt, q, 2)
	qi := waitFinal(t, opt, q, 2, 30*time.Second)
	if qi.Archived != 2 {
		t.Fatalf("%d of 2 archived: %+v", qi.Archived, qi)
	}
	time.Sleep(1500 * time.Millisecond) // a retry would be due by now
	if r := runs.Load(); r != 2 {
		t.Errorf("the handler ran %d times for 2 tasks, want 2", r)
	}
	for _, id := range ids {
		info, r := taskInfo(t, opt, q, id)
		if info.Retried != 0 || r["action"] != "give_up" || r["reason"] != "permanent" {
			t.Errorf("task %s: retried %d, heed's record %v; want 0 and give_up/permanent (last error %q)", id, info.Retried, r, info.LastErr)
		}
	}
}

// A task out of attempts is archived, before asynq's own MaxRetry, with
// heed's reason in its record.
func TestAttemptsExhaustedArchives(t *testing.T) {
	opt, q := openQueue(t)
	h := newPolicy(t, retry.Policy{Backoff: short, Attempts: 3}, opt)
	serve(t, opt, q, h, func(ctx context.Context, task *asynq.Task) error {
		return retry.Transient(errFlaky)
	}, 1)
	ids := enqueue(t, opt, q, 1)
	qi := waitFinal(t, opt, q, 1, 30*time.Second)
	if qi.Archived != 1 {
		t.Fatalf("want the task archived: %+v", qi)
	}
	info, r := taskInfo(t, opt, q, ids[0])
	if info.Retried != 2 || r["reason"] != "attempts" {
		t.Errorf("retried %d, record %v; want 2 retries (3 attempts) and reason attempts (last error %q)", info.Retried, r, info.LastErr)
	}
}

// A task with a 30 s time budget whose 8 s attempts all time out is given
// up whole attempts before the budget ends (enginetest.WholeAttempts),
// archived with reason time_budget.
//
// heed's time is fake (a clocktest.Clock as the policy's Clock; asynq has
// no time hook): the test moves it on by the attempt's 8 s once the handler
// has started, and to the retry's time once heed has decided it, while
// asynq waits the retry's delay in real time (rounded up to a whole
// second).
func TestTimeBudgetWholeAttempts(t *testing.T) {
	enginetest.WholeAttempts(t, "asynq", []uint64{1}, func(t *testing.T, p retry.Policy) ([]time.Duration, retry.Decision, func(int)) {
		opt, q := openQueue(t)
		starts, final, info, r := asynqStarts(t, opt, q, p)
		return starts, final, func(attempts int) {
			if info.State != asynq.TaskStateArchived || r["reason"] != "time_budget" || info.Retried != attempts-1 {
				t.Errorf("task %v retried %d, record %v; want archived, %d retries, reason time_budget", info.State, info.Retried, r, attempts-1)
			}
		}
	})
}

// asynqStarts runs one task of p in asynq, heed's time on a fake clock,
// every attempt running into its timeout, and returns when its attempts
// started, heed's last decision and the task as stored.
func asynqStarts(t *testing.T, opt asynq.RedisConnOpt, q string, p retry.Policy) ([]time.Duration, retry.Decision, *asynq.TaskInfo, map[string]any) {
	t0 := time.Now().UTC().Truncate(time.Second)
	clk := clocktest.New(t0)
	p.Clock = clk
	ev := enginetest.NewEvents()
	ev.Then = func(d retry.Decision) {
		if d.Action == retry.Retry {
			clk.Set(d.At) // the wait passes
		}
	}
	p.Observe = ev.Observe
	h := newPolicy(t, p, opt)
	started := make(chan time.Time)
	serve(t, opt, q, h, func(ctx context.Context, _ *asynq.Task) error {
		started <- clk.Now()
		<-ctx.Done()
		return ctx.Err()
	}, 1)
	ids := enqueue(t, opt, q, 1)
	var starts []time.Duration
	for {
		select {
		case at := <-started:
			starts = append(starts, at.Sub(t0))
			clk.BlockUntil(1)             // the attempt's timer
			clk.Advance(p.AttemptTimeout) // the attempt runs into it
			continue
		case <-ev.Final():
		case <-time.After(time.Minute):
			t.Fatalf("no final decision after a minute (real): %v", ev.Decisions())
		}
		break
	}
	ds := ev.Decisions()
	waitFinal(t, opt, q, 1, 10*time.Second)
	info, r := taskInfo(t, opt, q, ids[0])
	return starts, ds[len(ds)-1], info, r
}

// A task retried by another server resumes heed's record there: the second
// server has never seen the task, reads the record the first one wrote to
// Redis, and counts the time budget from the first attempt's start.
func TestRecordResumedByAnotherServer(t *testing.T) {
	opt, q := openQueue(t)
	start := func(h *heedasynq.Policy, work asynq.HandlerFunc) *asynq.Server {
		mux := asynq.NewServeMux()
		mux.Use(h.Middleware)
		mux.Handle(taskType, work)
		srv := asynq.NewServer(opt, asynq.Config{
			Queues: map[string]int{q: 1}, Concurrency: 1, TaskCheckInterval: 20 * time.Millisecond,
			DelayedTaskCheckInterval: 100 * time.Millisecond, Logger: quiet{}, LogLevel: asynq.FatalLevel,
			RetryDelayFunc: h.RetryDelay, IsFailure: h.IsFailure,
		})
		if err := srv.Start(mux); err != nil {
			t.Fatal(err)
		}
		return srv
	}
	// On the wall clock alone: the record keeps wall-clock instants (a
	// start read back from Redis has no monotonic reading), and with the
	// monotonic clock the first server's instants drift from them (NTP
	// slewing, parts per million: 1.5 µs over the 867 ms a busy machine
	// once put between the two servers' decisions).
	p := retry.Policy{Backoff: short, TimeBudget: time.Hour, Clock: wallClock{}}

	// The first server fails the first attempt and stops.
	first := enginetest.NewEvents()
	pa := p
	pa.Observe = first.Observe
	a := start(newPolicy(t, pa, opt), func(context.Context, *asynq.Task) error { return retry.Transient(errFlaky) })
	ids := enqueue(t, opt, q, 1)
	for len(first.Decisions()) == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	a.Shutdown() // waits for the retry to be stored
	d0 := first.Decisions()[0]
	began := d0.At.Add(-d0.Delay - d0.Elapsed) // the first attempt's start

	// The second server runs the retry.
	second := enginetest.NewEvents()
	pb := p
	pb.Observe = second.Observe
	b := start(newPolicy(t, pb, opt), func(context.Context, *asynq.Task) error { return nil })
	defer b.Shutdown()
	select {
	case <-second.Final():
	case <-time.After(30 * time.Second):
		t.Fatal("the retry did not run on the second server")
	}
	d := second.Decisions()[0]
	if d.Action != retry.Done || d.Attempt != 2 || !near(d.At.Add(-d.Elapsed), began) {
		t.Errorf("second server: %v at attempt %d, %v after a start at %v; want done at attempt 2, counted from the first attempt's start %v",
			d.Action, d.Attempt, d.Elapsed, d.At.Add(-d.Elapsed), began)
	}
	_, r := taskInfo(t, opt, q, ids[0])
	if s, _ := r["start"].(string); r["action"] != "done" || s == "" {
		t.Errorf("record %v, want done with the first attempt's start", r)
	} else if st, err := time.Parse(time.RFC3339Nano, s); err != nil || !near(st, began) {
		t.Errorf("record's start %s, want %v", s, began)
	}
}

// near reports whether a and b are the same instant on the wall clock, to
// within a microsecond.
func near(a, b time.Time) bool { return a.Round(0).Sub(b.Round(0)).Abs() < time.Microsecond }

// wallClock is the real clock, its readings without the monotonic one.
type wallClock struct{ clock.Real }

func (wallClock) Now() time.Time { return time.Now().Round(0) }

// A handler's panic is classified like any error: not transient by
// default, so the task is archived after one attempt.
func TestPanicArchived(t *testing.T) {
	opt, q := openQueue(t)
	h := newPolicy(t, retry.Policy{Backoff: short}, opt)
	serve(t, opt, q, h, func(ctx context.Context, task *asynq.Task) error { panic("nil map") }, 1)
	ids := enqueue(t, opt, q, 1)
	waitFinal(t, opt, q, 1, 30*time.Second)
	info, r := taskInfo(t, opt, q, ids[0])
	if info.State != asynq.TaskStateArchived || info.Retried != 0 || r["reason"] != "permanent" || !strings.Contains(info.LastErr, "panicked: nil map") {
		t.Errorf("task %v retried %d, record %v, last error %q; want archived at once, permanent, the panic", info.State, info.Retried, r, info.LastErr)
	}
}
