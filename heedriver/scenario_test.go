package heedriver_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/breaker"
	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/clock/clocktest"
	"github.com/heed-go/heed/heedriver"
	"github.com/heed-go/heed/internal/enginetest"
	"github.com/heed-go/heed/retry"
)

// short is a backoff that keeps the real-time tests short.
var short = backoff.Schedule{Kind: backoff.Constant, Base: 20 * time.Millisecond, Jitter: backoff.NoJitter}

// 50 jobs that each fail once, under a default retry budget: the budget
// refuses most of the retries at first, and a refused retry is deferred,
// not failed, so every job succeeds, on its second attempt.
func TestFailOnceUnderDefaultBudget(t *testing.T) {
	pool, schema := openSchema(t)
	b, err := budget.New(budget.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var deferred atomic.Int64
	h, err := heedriver.New(retry.Policy{Backoff: short, Budget: b, Observe: func(_ context.Context, e retry.Event) {
		if e.Action == retry.Defer {
			deferred.Add(1)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	failed := map[int]bool{}
	c := newClient(t, pool, schema, h, func(ctx context.Context, job *river.Job[scriptArgs]) error {
		mu.Lock()
		defer mu.Unlock()
		if !failed[job.Args.N] {
			failed[job.Args.N] = true
			return retry.Transient(errFlaky)
		}
		return nil
	}, nil)
	start(t, c)
	const n = 50
	insert(t, c, n)
	js := waitFinal(t, c, n, time.Minute)
	if got := len(js[rivertype.JobStateCompleted]); got != n {
		t.Fatalf("%d of %d jobs completed: %s", got, n, summary(js))
	}
	for _, j := range js[rivertype.JobStateCompleted] {
		if j.Attempt != 2 || len(j.Errors) != 1 {
			t.Errorf("job %d: attempt %d with %d errors, want 2 and 1 (deferrals do not count)", j.ID, j.Attempt, len(j.Errors))
		}
		if r := record(t, j); r["action"] != "done" {
			t.Errorf("job %d: heed's record %v, want the last decision done", j.ID, r)
		}
	}
	t.Logf("50 jobs, each failing once: all completed; %d deferrals by the retry budget", deferred.Load())
}

// While the breaker is open no job's worker runs, and no job is discarded
// or cancelled: each is snoozed until the breaker may admit it, without
// using an attempt, and completes once the breaker lets calls through.
func TestOpenBreakerRunsNoAttempt(t *testing.T) {
	pool, schema := openSchema(t)
	br, err := breaker.New(breaker.Config{MinCalls: 1, Cooldown: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	opened := time.Now()
	permit, _ := br.AllowAt(opened)
	permit.RecordAt(opened, breaker.Failure) // another caller saw the dependency fail
	readyAt := br.ReadyAt(opened)
	var early, runs atomic.Int64
	h, err := heedriver.New(retry.Policy{Backoff: short, Breaker: br})
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, pool, schema, h, func(ctx context.Context, job *river.Job[scriptArgs]) error {
		runs.Add(1)
		if time.Now().Before(readyAt) {
			early.Add(1)
		}
		return nil
	}, nil)
	start(t, c)
	const n = 20
	insert(t, c, n)

	// While the breaker is open every job is deferred (snoozed), none run
	// and none given up.
	deferred := func(j *rivertype.JobRow) bool {
		r := record(t, j)
		return r["action"] == "defer" && r["reason"] == "breaker_open"
	}
	var js map[rivertype.JobState][]*rivertype.JobRow
	for all := false; !all; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(readyAt) {
			t.Fatalf("not every job was deferred before the breaker's cooldown ended: %s", summary(js))
		}
		js, all = jobs(t, c), true
		for _, l := range js {
			for _, j := range l {
				all = all && deferred(j)
			}
		}
	}
	if r := runs.Load(); r != 0 {
		t.Fatalf("%d attempts ran while the breaker was open", r)
	}
	for _, l := range js {
		for _, j := range l {
			if j.Attempt != 0 || j.FinalizedAt != nil {
				t.Errorf("job %d: %s at attempt %d while deferred, want attempt 0, not finalized", j.ID, j.State, j.Attempt)
			}
		}
	}

	js = waitFinal(t, c, n, time.Minute)
	if got := len(js[rivertype.JobStateCompleted]); got != n {
		t.Fatalf("%d of %d completed: %s", got, n, summary(js))
	}
	if e := early.Load(); e != 0 {
		t.Errorf("%d attempts ran before the breaker's cooldown ended", e)
	}
	for _, j := range js[rivertype.JobStateCompleted] {
		if j.Attempt != 1 || len(j.Errors) != 0 {
			t.Errorf("job %d: attempt %d with %d errors, want 1 and 0", j.ID, j.Attempt, len(j.Errors))
		}
	}
}

// A permanent error, marked or not known to be transient, is not retried:
// River cancels the job after one attempt, and heed's record says why.
func TestPermanentErrorNotRetried(t *testing.T) {
	pool, schema := openSchema(t)
	h, err := heedriver.New(retry.Policy{Backoff: short, Attempts: 5})
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int64
	c := newClient(t, pool, schema, h, func(ctx context.Context, job *river.Job[scriptArgs]) error {
		runs.Add(1)
		if job.Args.N == 0 {
			return retry.Permanent(errors.New("422 unprocessable entity"))
		}
		return errors.New("invalid input: no such account") // unclassified: not known to pass
	}, nil)
	start(t, c)
	insert(t, c, 2)
	js := waitFinal(t, c, 2, 30*time.Second)
	if got := len(js[rivertype.JobStateCancelled]); got != 2 {
		t.Fatalf("%d of 2 cancelled: %s", got, summary(js))
	}
	time.Sleep(100 * time.Millisecond) // a retry would be due by now
	if r := runs.Load(); r != 2 {
		t.Errorf("the worker ran %d times for 2 jobs, want 2", r)
	}
	for _, j := range js[rivertype.JobStateCancelled] {
		if r := record(t, j); j.Attempt != 1 || r["action"] != "give_up" || r["reason"] != "permanent" {
			t.Errorf("job %d: attempt %d, heed's record %v; want 1 and give_up/permanent", j.ID, j.Attempt, r)
		}
	}
}

// A job out of attempts goes to River's dead letter (discarded), before
// River's own MaxAttempts, with heed's reason in its metadata.
func TestAttemptsExhaustedDiscards(t *testing.T) {
	pool, schema := openSchema(t)
	h, err := heedriver.New(retry.Policy{Backoff: short, Attempts: 3})
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, pool, schema, h, func(ctx context.Context, job *river.Job[scriptArgs]) error {
		return retry.Transient(errFlaky)
	}, nil)
	start(t, c)
	insert(t, c, 1)
	js := waitFinal(t, c, 1, 30*time.Second)
	d := js[rivertype.JobStateDiscarded]
	if len(d) != 1 {
		t.Fatalf("want the job discarded: %s", summary(js))
	}
	if r := record(t, d[0]); d[0].Attempt != 3 || len(d[0].Errors) != 3 || r["reason"] != "attempts" {
		t.Errorf("attempt %d, %d errors, record %v; want 3, 3 and reason attempts", d[0].Attempt, len(d[0].Errors), r)
	}
}

// riverTime is River's time generator on a fake clock (River's own time
// hook, Config.Test.Time): River reads it to schedule, fetch and finish
// jobs, so River and heed share one fake time.
type riverTime struct{ c *clocktest.Clock }

func (r riverTime) Now() time.Time       { return r.c.Now() }
func (r riverTime) NowOrNil() *time.Time { t := r.c.Now(); return &t }

// A job with a 30 s time budget whose 8 s attempts all time out is given
// up whole attempts before the budget ends (enginetest.WholeAttempts),
// discarded with reason time_budget.
//
// Time is fake: heed's policy and River (Config.Test.Time) read one
// clocktest.Clock, which the test moves on by the attempt's 8 s once the
// worker has started, and to the retry's time once heed has decided it.
func TestTimeBudgetWholeAttempts(t *testing.T) {
	pool, schema := openSchema(t)
	enginetest.WholeAttempts(t, "River", []uint64{1, 7}, func(t *testing.T, p retry.Policy) ([]time.Duration, retry.Decision, func(int)) {
		starts, final, job := riverStarts(t, pool, schema, p)
		return starts, final, func(attempts int) {
			if r := record(t, job); job.State != rivertype.JobStateDiscarded || r["reason"] != "time_budget" || len(job.Errors) != attempts {
				t.Errorf("job %s with %d errors, record %v; want discarded, %d errors, reason time_budget", job.State, len(job.Errors), r, attempts)
			}
		}
	})
}

// riverStarts runs one job of p in River on a fake clock, every attempt
// running into its timeout, and returns when its attempts started, heed's
// last decision and the job as stored.
func riverStarts(t *testing.T, pool *pgxpool.Pool, schema string, p retry.Policy) ([]time.Duration, retry.Decision, *rivertype.JobRow) {
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
	h, err := heedriver.New(p)
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan time.Time)
	c := newClient(t, pool, schema, h, func(ctx context.Context, job *river.Job[scriptArgs]) error {
		started <- clk.Now()
		<-ctx.Done()
		return ctx.Err()
	}, func(cfg *river.Config) {
		cfg.Test.Time = riverTime{clk}
	})
	start(t, c)
	res, err := c.Insert(context.Background(), scriptArgs{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var starts []time.Duration
	for {
		select {
		case at := <-started:
			starts = append(starts, at.Sub(t0))
			clk.BlockUntil(1)             // the attempt's timer
			clk.Advance(p.AttemptTimeout) // the attempt runs into it
			continue
		case <-ev.Final():
		case <-time.After(30 * time.Second):
			t.Fatalf("no final decision after 30 s (real): %v", ev.Decisions())
		}
		break
	}
	ds := ev.Decisions()
	var job *rivertype.JobRow
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		job, err = c.JobGet(context.Background(), res.Job.ID)
		if err != nil {
			t.Fatal(err)
		}
		if job.State == rivertype.JobStateDiscarded || time.Now().After(deadline) {
			break
		}
	}
	return starts, ds[len(ds)-1], job
}

// A worker's panic is classified like any error: not transient by default,
// so River discards the job and keeps the panic's trace; a policy that
// retries every error retries it, at heed's time.
func TestPanic(t *testing.T) {
	for _, tc := range []struct {
		name      string
		retryable func(error) bool
		state     rivertype.JobState
		attempt   int
	}{
		{"default classifier", nil, rivertype.JobStateDiscarded, 1},
		{"retry every error", func(error) bool { return true }, rivertype.JobStateCompleted, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool, schema := openSchema(t)
			h, err := heedriver.New(retry.Policy{Backoff: short, Retryable: tc.retryable})
			if err != nil {
				t.Fatal(err)
			}
			c := newClient(t, pool, schema, h, func(ctx context.Context, job *river.Job[scriptArgs]) error {
				if job.Attempt == 1 {
					panic("nil map")
				}
				return nil
			}, nil)
			start(t, c)
			insert(t, c, 1)
			js := waitFinal(t, c, 1, 30*time.Second)
			l := js[tc.state]
			if len(l) != 1 || l[0].Attempt != tc.attempt {
				t.Fatalf("want the job %s at attempt %d: %s", tc.state, tc.attempt, summary(js))
			}
			if j := l[0]; len(j.Errors) != 1 || j.Errors[0].Trace == "" {
				t.Errorf("errors %+v, want the panic with its trace", j.Errors)
			}
		})
	}
}

// A server's pushback is a River snooze, which River does not count; heed
// counts it, so the policy's Attempts still bound a job the server keeps
// pushing back.
func TestPushbackCountsAsAttempt(t *testing.T) {
	pool, schema := openSchema(t)
	h, err := heedriver.New(retry.Policy{Backoff: short, Attempts: 2})
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int64
	c := newClient(t, pool, schema, h, func(ctx context.Context, job *river.Job[scriptArgs]) error {
		if runs.Add(1) == 1 {
			return retry.After(time.Second, errors.New("429 too many requests"))
		}
		return retry.Transient(errFlaky)
	}, nil)
	start(t, c)
	insert(t, c, 1)
	js := waitFinal(t, c, 1, 30*time.Second)
	d := js[rivertype.JobStateDiscarded]
	if len(d) != 1 {
		t.Fatalf("want the job discarded: %s", summary(js))
	}
	r := record(t, d[0])
	if runs.Load() != 2 || r["reason"] != "attempts" || r["attempt"] != 2.0 || r["pushbacks"] != 1.0 {
		t.Errorf("%d runs, record %v; want 2 runs and give_up/attempts at heed's attempt 2 with 1 pushback", runs.Load(), r)
	}
}
