package storetest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
	"github.com/heed-go/heed/retry"
)

// RunDrain drives a worker's drain with the zero DrainOptions over a fake
// clock (clk, not yet set past 2026-03-04T05:00:00Z) on s, an empty
// store: jobs due now run; a retry due in 30 s is waited for (it is within
// the default DrainOptions.Within, a minute) and runs once the clock reaches it; a job the
// handler declines every time, for 10 s, is not waited for, even when it
// comes due again within the wait, and is reported, as are a job scheduled
// in an hour and a paused queue's job. The drain must end with the clock
// never moved past the retry: a drain that waits for what it will not run
// never ends.
func RunDrain(t *testing.T, clk FakeClock, s jobstore.Store) {
	start := time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC)
	clk.Set(start)
	c := queue.NewClient(s, queue.ClientConfig{Clock: clk})
	events := make(chan queue.Event, 64)
	w, err := queue.NewWorker(s, queue.WorkerConfig{
		ID: "drainer", Clock: clk, Queues: map[string]int{"work": 2, "held": 1},
		Observe: func(_ context.Context, e queue.Event) { events <- e },
	})
	if err != nil {
		t.Fatal(err)
	}
	errNoTool := errors.New("no tool for this on drainer")
	queue.Handle(w, "ok", func(context.Context, *jobstore.Job, struct{}) error { return nil })
	queue.Handle(w, "flaky", func(_ context.Context, job *jobstore.Job, _ struct{}) error {
		if job.Attempt == 1 {
			return retry.After(30*time.Second, retry.Transient(errors.New("busy")))
		}
		return nil
	})
	queue.Handle(w, "refuse", func(context.Context, *jobstore.Job, struct{}) error {
		return queue.Decline(10*time.Second, errNoTool)
	})
	add := func(kind string, opts queue.EnqueueOptions) int64 {
		t.Helper()
		j, _, err := c.Enqueue(ctx, kind, nil, opts)
		if err != nil {
			t.Fatal(err)
		}
		return j.ID
	}
	ok := add("ok", queue.EnqueueOptions{Queue: "work"})
	flaky := add("flaky", queue.EnqueueOptions{Queue: "work"})
	refuse := add("refuse", queue.EnqueueOptions{Queue: "work"})
	later := add("ok", queue.EnqueueOptions{Queue: "work", In: time.Hour})
	add("ok", queue.EnqueueOptions{Queue: "held"})
	if _, err := c.Pause(ctx, "held"); err != nil {
		t.Fatal(err)
	}

	type outcome struct {
		res queue.DrainResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := w.Drain(ctx, queue.DrainOptions{})
		done <- outcome{res, err}
	}()
	var out outcome
	var retryAt time.Time
wait:
	for {
		select {
		case e := <-events:
			if e.Kind == queue.EventRetried && e.Job.ID == flaky {
				// The drain waits for this retry; time moves to it.
				retryAt = e.Decision.At
				if d := retryAt.Sub(start); d < 30*time.Second || d > time.Minute {
					t.Fatalf("the retry is due %v after the start, want 30s..1m", d)
				}
				clk.Set(retryAt)
			}
		case out = <-done:
			break wait
		case <-time.After(time.Minute):
			t.Fatalf("Drain did not return within a minute of real time (fake clock at +%v)", clk.Now().Sub(start))
		}
	}
	if out.err != nil {
		t.Fatalf("Drain: %v", out.err)
	}
	if retryAt.IsZero() {
		t.Fatal("Drain returned before the retry due within its wait")
	}
	if moved := clk.Now().Sub(retryAt); moved != 0 {
		t.Errorf("the clock moved %v past the retry", moved)
	}
	for id, want := range map[int64]jobstore.State{ok: jobstore.StateSucceeded, flaky: jobstore.StateSucceeded,
		refuse: jobstore.StateAvailable, later: jobstore.StateAvailable} {
		if j := get(t, s, id); j.State != want {
			t.Errorf("job %d (%s) is %s after Drain, want %s", id, j.Kind, j.State, want)
		}
	}
	j := get(t, s, refuse)
	if j.Attempt != 0 || len(j.History) == 0 || j.History[0].Outcome != jobstore.OutcomeSnoozed ||
		!strings.Contains(j.History[0].Error, errNoTool.Error()) {
		t.Errorf("the declined job: attempt %d, history %+v; want attempt 0, snoozed with the reason", j.Attempt, j.History)
	}
	res := out.res
	wantDeclined := []queue.DeclinedJob{{ID: refuse, Queue: "work", Kind: "refuse", Reason: errNoTool.Error()}}
	if res.Claimed < 4 || res.Scheduled != 1 || !slices.Equal(res.Paused, []string{"held"}) ||
		!slices.Equal(res.Declined, wantDeclined) || len(res.Elsewhere) != 0 {
		t.Errorf("Drain = %+v; want at least 4 claimed, 1 scheduled (the declined job not counted), held paused, declined %+v",
			res, wantDeclined)
	}
}
