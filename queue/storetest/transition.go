package storetest

// Transitions out of running: retries, snoozes, histories, batches.

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
	"github.com/heed-go/heed/retry"
)

func testRetry(t *testing.T, s jobstore.Store) {
	insert(t, s, "k", queue.EnqueueOptions{})
	c := claimOne(t, s, queue.DefaultQueue, t0)
	at := t0.Add(90 * time.Second)
	e := entry(1, "transient", "retry", "transient", t0)
	e.Delay = 90 * time.Second
	if err := s.JobTransition(ctx, jobstore.Transition{ID: c.ID, LeaseToken: c.LeaseToken, State: jobstore.StateAvailable,
		Attempt: c.Attempt, AvailableAt: at, Entry: e}); err != nil {
		t.Fatal(err)
	}
	g := get(t, s, c.ID)
	if g.State != jobstore.StateAvailable || g.Attempt != 1 || !g.AvailableAt.Equal(at) || g.LeaseToken != "" ||
		!g.FinishedAt.IsZero() || g.DeadReason != "" || len(g.History) != 1 {
		t.Fatalf("after retry: %+v", g)
	}
	if jobs := claim(t, s, queue.DefaultQueue, 1, at.Add(-time.Microsecond)); len(jobs) != 0 {
		t.Fatal("claimed before available_at")
	}
	c2 := claimOne(t, s, queue.DefaultQueue, at)
	if c2.Attempt != 2 || !c2.StartedAt.Equal(t0) || !c2.AttemptedAt.Equal(at) || c2.LeaseToken == c.LeaseToken {
		t.Errorf("second claim: %+v", c2)
	}
}

func testSnooze(t *testing.T, s jobstore.Store) {
	insert(t, s, "k", queue.EnqueueOptions{})
	c := claimOne(t, s, queue.DefaultQueue, t0)
	e := entry(1, jobstore.OutcomeSnoozed, "snooze", "", t0)
	if err := s.JobTransition(ctx, jobstore.Transition{ID: c.ID, LeaseToken: c.LeaseToken, State: jobstore.StateAvailable,
		Attempt: c.Attempt - 1, AvailableAt: t0.Add(time.Second), Entry: e}); err != nil {
		t.Fatal(err)
	}
	c2 := claimOne(t, s, queue.DefaultQueue, t0.Add(time.Second))
	if c2.Attempt != 1 || len(c2.History) != 1 {
		t.Errorf("after snooze: attempt %d history %d, want 1 and 1", c2.Attempt, len(c2.History))
	}
}

func testTransitionInvalid(t *testing.T, s jobstore.Store) {
	insert(t, s, "k", queue.EnqueueOptions{})
	c := claimOne(t, s, queue.DefaultQueue, t0)
	before := get(t, s, c.ID)
	bad := []jobstore.Transition{
		{State: jobstore.StateRunning, FinishedAt: t0},
		{State: "weird", FinishedAt: t0},
		{State: jobstore.StateAvailable},            // no AvailableAt
		{State: jobstore.StateDead, FinishedAt: t0}, // no reason
		{State: jobstore.StateSucceeded},            // no FinishedAt
		{State: jobstore.StateSucceeded, FinishedAt: t0, Attempt: -1},
	}
	for _, tr := range bad {
		tr.ID, tr.LeaseToken = c.ID, c.LeaseToken
		if err := s.JobTransition(ctx, tr); !errors.Is(err, jobstore.ErrInvalid) {
			t.Errorf("JobTransition(%+v): %v, want ErrInvalid", tr, err)
		}
	}
	if after := get(t, s, c.ID); !reflect.DeepEqual(before, after) {
		t.Errorf("invalid transitions changed the job:\n%+v\n%+v", before, after)
	}
}

// normalize truncates the times of h to microseconds in UTC, as stores keep
// them.
func normalize(h []jobstore.Attempt) []jobstore.Attempt {
	out := slices.Clone(h)
	for i := range out {
		out[i].StartedAt = out[i].StartedAt.UTC().Truncate(time.Microsecond)
		out[i].FinishedAt = out[i].FinishedAt.UTC().Truncate(time.Microsecond)
	}
	return out
}

func testHistory(t *testing.T, s jobstore.Store) {
	insert(t, s, "k", queue.EnqueueOptions{})
	stack := strings.Repeat("goroutine 1 [running]:\n\tmain.f()\n\t\t/src/x.go:12 +0x1d\n", 300)
	h := []jobstore.Attempt{
		{Attempt: 1, Worker: "host-1/42", StartedAt: t0, FinishedAt: t0.Add(1500 * time.Microsecond), Outcome: "transient",
			Error:  "dial tcp 10.0.0.1:443: connection refused; \"quoted\" \\ back\\slash\ttab\nnewline <html>&amp;",
			Action: "retry", Reason: "transient", Delay: 1234567 * time.Microsecond},
		{Attempt: 2, Worker: "héllo wörld ✓ 日本語 🚀", StartedAt: t0.Add(time.Hour), FinishedAt: t0.Add(time.Hour + time.Second),
			Outcome: "permanent", Error: "panic: runtime error: index out of range [5] with length 3\u2028\u2029 \x01",
			Panic: stack, Action: "retry", Reason: "pushback", Delay: time.Duration(1<<62 + 1)},
		{Attempt: 3, StartedAt: t0.Add(2 * time.Hour).In(time.FixedZone("x", 3600)), FinishedAt: t0.Add(3 * time.Hour),
			Outcome: retry.OutcomeSuccess.Key(), Action: "done", Reason: "success"},
	}
	now := t0
	for i, e := range h {
		c := claimOne(t, s, queue.DefaultQueue, now)
		tr := jobstore.Transition{ID: c.ID, LeaseToken: c.LeaseToken, State: jobstore.StateAvailable, Attempt: c.Attempt, AvailableAt: now, Entry: e}
		if i == len(h)-1 {
			tr.State, tr.AvailableAt, tr.FinishedAt = jobstore.StateSucceeded, time.Time{}, now
		}
		if err := s.JobTransition(ctx, tr); err != nil {
			t.Fatal(err)
		}
		g := get(t, s, c.ID)
		got, want := normalize(g.History), normalize(h[:i+1])
		if len(got) != len(want) {
			t.Fatalf("after %d entries, history has %d", i+1, len(got))
		}
		for k := range want {
			if !reflect.DeepEqual(got[k], want[k]) {
				gs, ws := fmt.Sprintf("%#v", got[k]), fmt.Sprintf("%#v", want[k])
				n := 0
				for n < len(gs) && n < len(ws) && gs[n] == ws[n] {
					n++
				}
				t.Fatalf("after %d entries, entry %d differs at byte %d of its Go syntax:\n got ...%.200s\nwant ...%.200s", i+1, k, n, gs[n:], ws[n:])
			}
		}
	}
}

func testTransitionBatch(t *testing.T, s jobstore.Store) {
	b, ok := s.(jobstore.TransitionBatcher)
	if !ok {
		t.Skip("the store is not a jobstore.TransitionBatcher")
	}
	if errs, err := b.JobTransitions(ctx, nil); err != nil || len(errs) != 0 {
		t.Fatalf("empty batch: %v, %v", errs, err)
	}
	for range 4 {
		insert(t, s, "k", queue.EnqueueOptions{})
	}
	jobs := claim(t, s, queue.DefaultQueue, 4, t0)
	if len(jobs) != 4 {
		t.Fatalf("claimed %d", len(jobs))
	}
	ok1 := jobstore.Transition{ID: jobs[0].ID, LeaseToken: jobs[0].LeaseToken, State: jobstore.StateSucceeded, Attempt: 1,
		FinishedAt: t0, Entry: entry(1, "success", "done", "success", t0)}
	stale := jobstore.Transition{ID: jobs[1].ID, LeaseToken: "stale", State: jobstore.StateSucceeded, Attempt: 1, FinishedAt: t0}
	bad := jobstore.Transition{ID: jobs[2].ID, LeaseToken: jobs[2].LeaseToken, State: jobstore.StateRunning}
	ok2 := jobstore.Transition{ID: jobs[3].ID, LeaseToken: jobs[3].LeaseToken, State: jobstore.StateAvailable, Attempt: 1,
		AvailableAt: t0.Add(time.Minute), Entry: entry(1, "transient", "retry", "transient", t0)}
	errs, err := b.JobTransitions(ctx, []jobstore.Transition{ok1, stale, bad, ok2})
	if err != nil || len(errs) != 4 {
		t.Fatalf("JobTransitions: %v, %v", errs, err)
	}
	if errs[0] != nil || !errors.Is(errs[1], jobstore.ErrLeaseLost) || !errors.Is(errs[2], jobstore.ErrInvalid) || errs[3] != nil {
		t.Errorf("per-transition errors %v; want nil, ErrLeaseLost, ErrInvalid, nil", errs)
	}
	if g := get(t, s, jobs[0].ID); g.State != jobstore.StateSucceeded || len(g.History) != 1 {
		t.Errorf("first job: %+v", g)
	}
	if g := get(t, s, jobs[1].ID); g.State != jobstore.StateRunning || g.LeaseToken != jobs[1].LeaseToken {
		t.Errorf("stale-token job changed: %+v", g)
	}
	if g := get(t, s, jobs[2].ID); g.State != jobstore.StateRunning || len(g.History) != 0 {
		t.Errorf("invalid-transition job changed: %+v", g)
	}
	if g := get(t, s, jobs[3].ID); g.State != jobstore.StateAvailable || !g.AvailableAt.Equal(t0.Add(time.Minute)) {
		t.Errorf("retried job: %+v", g)
	}
	// Again, in a new batch: the lease is gone.
	errs, err = b.JobTransitions(ctx, []jobstore.Transition{ok1})
	if err != nil || !errors.Is(errs[0], jobstore.ErrLeaseLost) {
		t.Errorf("repeated transition: %v, %v", errs, err)
	}
}

// testHistoryCap appends many entries to one job's history, through
// JobTransition, JobTransitions (when the store has it) and DeadRequeue,
// and checks that the store keeps the first entry, a cut marker counting
// the dropped ones, and the last queue.MaxHistory, in order.
func testHistoryCap(t *testing.T, s jobstore.Store) {
	b, batcher := s.(jobstore.TransitionBatcher)
	j := insert(t, s, "k", queue.EnqueueOptions{MaxAttempts: -1})
	check := func(n int) {
		t.Helper()
		h := get(t, s, j.ID).History
		want := []int{}
		for i := 1; i <= n; i++ {
			want = append(want, i)
		}
		cut := 0
		if n > jobstore.MaxHistory+1 {
			cut = n - jobstore.MaxHistory - 1
			want = append([]int{1, 0}, want[cut+1:]...)
		}
		got := make([]int, len(h))
		for i, e := range h {
			got[i] = e.Attempt
		}
		if !slices.Equal(got, want) {
			t.Fatalf("after %d entries, the history holds attempts %v, want %v", n, got, want)
		}
		if cut > 0 {
			m := h[1]
			if m.Outcome != jobstore.OutcomeCut || m.Action != "cut" || m.Cut != cut {
				t.Fatalf("after %d entries, marker %+v, want outcome cut counting %d", n, m, cut)
			}
		}
		for i, e := range h {
			if e.Attempt == 0 {
				continue
			}
			if w := entry(e.Attempt, "transient", "retry", "transient", t0.Add(time.Duration(e.Attempt)*time.Second)); !reflect.DeepEqual(normalize([]jobstore.Attempt{e}), normalize([]jobstore.Attempt{w})) {
				t.Fatalf("after %d entries, entry %d is %+v, want %+v", n, i, e, w)
			}
		}
	}
	total := 2*jobstore.MaxHistory + 50
	for n := 1; n <= total; n++ {
		at := t0.Add(time.Duration(n) * time.Second)
		c := claimOne(t, s, queue.DefaultQueue, at)
		tr := jobstore.Transition{ID: c.ID, LeaseToken: c.LeaseToken, State: jobstore.StateAvailable, Attempt: c.Attempt,
			AvailableAt: at, Entry: entry(n, "transient", "retry", "transient", at)}
		if batcher && n%2 == 0 {
			errs, err := b.JobTransitions(ctx, []jobstore.Transition{tr})
			if err != nil || errs[0] != nil {
				t.Fatalf("JobTransitions: %v, %v", errs, err)
			}
		} else if err := s.JobTransition(ctx, tr); err != nil {
			t.Fatalf("JobTransition: %v", err)
		}
		switch n {
		case 1, jobstore.MaxHistory, jobstore.MaxHistory + 1, jobstore.MaxHistory + 2, jobstore.MaxHistory + 3, total:
			check(n)
		}
	}
	// Kill it, then requeue: the requeue entry is appended under the cap too.
	at := t0.Add(time.Duration(total+1) * time.Second)
	c := claimOne(t, s, queue.DefaultQueue, at)
	if err := s.JobTransition(ctx, jobstore.Transition{ID: c.ID, LeaseToken: c.LeaseToken, State: jobstore.StateDead, Attempt: c.Attempt,
		FinishedAt: at, DeadReason: "attempts", Entry: entry(total+1, "transient", "retry", "transient", at)}); err != nil {
		t.Fatal(err)
	}
	check(total + 1)
	if n, err := s.DeadRequeue(ctx, jobstore.OpParams{Filter: jobstore.JobFilter{IDs: []int64{j.ID}}, Now: at, Entry: jobstore.Attempt{Attempt: total + 2, Outcome: jobstore.OutcomeRequeued,
		Worker: "w1", StartedAt: at.Add(time.Second), FinishedAt: at.Add(2 * time.Second), Error: "boom", Action: "retry", Reason: "transient"}}); err != nil || n != 1 {
		t.Fatalf("DeadRequeue: %d, %v", n, err)
	}
	h := get(t, s, j.ID).History
	if len(h) != jobstore.MaxHistory+2 || h[1].Cut != total+2-jobstore.MaxHistory-1 || h[len(h)-1].Outcome != jobstore.OutcomeRequeued {
		t.Errorf("after the requeue: %d entries, marker %+v, last %+v", len(h), h[1], h[len(h)-1])
	}
}
