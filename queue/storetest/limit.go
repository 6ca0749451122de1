package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
)

// limitTests are the conformance tests of queues' global limits
// (queue.Limit, QueueOps.QueueLimit): what JobClaim gives a limited queue.
var limitTests = []struct {
	name string
	fn   func(t *testing.T, s jobstore.Store)
}{
	{"LimitSettings", testLimitSettings},
	{"LimitConcurrency", testLimitConcurrency},
	{"LimitRate", testLimitRate},
	{"LimitConcurrentClaims", testLimitConcurrentClaims},
}

func setLimit(t *testing.T, s jobstore.Store, q string, l jobstore.Limit, now time.Time) {
	t.Helper()
	if err := s.QueueLimit(ctx, q, l, now); err != nil {
		t.Fatalf("QueueLimit(%s, %+v): %v", q, l, err)
	}
}

// testLimitSettings: limits are kept per queue, listed in name order,
// changed and removed; bad ones are refused.
func testLimitSettings(t *testing.T, s jobstore.Store) {
	if ls, err := s.QueuesLimited(ctx); err != nil || len(ls) != 0 {
		t.Fatalf("QueuesLimited on a new store = %+v, %v", ls, err)
	}
	for _, tc := range []struct {
		q string
		l jobstore.Limit
	}{{"", jobstore.Limit{Concurrency: 1}}, {"a", jobstore.Limit{Concurrency: -1}}, {"a", jobstore.Limit{Rate: -1}},
		{"a", jobstore.Limit{Rate: 1, RatePeriod: time.Microsecond}}} {
		if err := s.QueueLimit(ctx, tc.q, tc.l, t0); !errors.Is(err, jobstore.ErrInvalid) {
			t.Errorf("QueueLimit(%q, %+v) = %v, want ErrInvalid", tc.q, tc.l, err)
		}
	}
	setLimit(t, s, "b", jobstore.Limit{Rate: 5, RatePeriod: time.Minute}, t0)
	setLimit(t, s, "a", jobstore.Limit{Concurrency: 3}, t0)
	if _, err := s.QueuePause(ctx, "paused", t0); err != nil {
		t.Fatal(err)
	}
	setLimit(t, s, "c", jobstore.Limit{Concurrency: 2, Rate: 7}, t0)
	want := []jobstore.QueueLimit{{Queue: "a", Limit: jobstore.Limit{Concurrency: 3}},
		{Queue: "b", Limit: jobstore.Limit{Rate: 5, RatePeriod: time.Minute}},
		{Queue: "c", Limit: jobstore.Limit{Concurrency: 2, Rate: 7}}}
	if ls, err := s.QueuesLimited(ctx); err != nil || !slices.Equal(ls, want) {
		t.Fatalf("QueuesLimited = %+v, %v; want %+v", ls, err, want)
	}
	// Removing a queue's limit keeps its pause, and the other way round.
	if _, err := s.QueuePause(ctx, "c", t0); err != nil {
		t.Fatal(err)
	}
	setLimit(t, s, "a", jobstore.Limit{}, t0)
	if _, err := s.QueueResume(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if ls, err := s.QueuesLimited(ctx); err != nil || !slices.Equal(ls, want[1:]) {
		t.Fatalf("QueuesLimited after removing a's = %+v, %v; want %+v", ls, err, want[1:])
	}
	if ps, err := s.QueuesPaused(ctx); err != nil || len(ps) != 1 || ps[0].Queue != "paused" {
		t.Errorf("QueuesPaused = %+v, %v; want only the queue paused", ps, err)
	}
}

// testLimitConcurrency: a queue with a concurrency limit gives at most
// that many running jobs, whoever claims; a job held back is not written;
// a running job whose lease expired keeps its place until the rescue has
// moved it; a paused limited queue gives nothing; other queues are not
// held back.
func testLimitConcurrency(t *testing.T, s jobstore.Store) {
	var js []*jobstore.Job
	for range 5 {
		js = append(js, insert(t, s, "k", queue.EnqueueOptions{Queue: "a"}))
	}
	other := insert(t, s, "k", queue.EnqueueOptions{Queue: "b"})
	setLimit(t, s, "a", jobstore.Limit{Concurrency: 2}, t0)
	got := claim(t, s, "a", 10, t0)
	if !slices.Equal(ids(got), ids(js[:2])) {
		t.Fatalf("claim of 10 under a limit of 2: %v, want %v", ids(got), ids(js[:2]))
	}
	if more := claim(t, s, "a", 10, t0.Add(time.Second)); len(more) != 0 {
		t.Fatalf("claim at the limit: %v, want none", ids(more))
	}
	for _, j := range js[2:] {
		if g := get(t, s, j.ID); g.State != jobstore.StateAvailable || g.Attempt != 0 || len(g.History) != 0 || g.Worker != "" {
			t.Errorf("job held back by the limit was changed: %+v", g)
		}
	}
	if c := claimOne(t, s, "b", t0); c.ID != other.ID {
		t.Errorf("queue b: claimed %d, want %d", c.ID, other.ID)
	} else {
		finish(t, s, c, t0)
	}
	// One ends: one more may start.
	finish(t, s, got[0], t0.Add(time.Second))
	if more := claim(t, s, "a", 10, t0.Add(time.Second)); !slices.Equal(ids(more), []int64{js[2].ID}) {
		t.Fatalf("claim after one finished: %v, want [%d]", ids(more), js[2].ID)
	}
	// got[1] and js[2] run under leases that end at t0+1m and t0+1m1s:
	// past them, they still count until a rescue moves them.
	late := t0.Add(10 * time.Minute)
	if more := claim(t, s, "a", 10, late); len(more) != 0 {
		t.Fatalf("claim with expired leases, before the rescue: %v, want none", ids(more))
	}
	lost, err := s.JobRescue(ctx, jobstore.RescueParams{Now: late, LeaseUntil: late.Add(time.Minute), Limit: 10})
	if err != nil || len(lost) != 2 {
		t.Fatalf("JobRescue = %d jobs, %v; want 2", len(lost), err)
	}
	if more := claim(t, s, "a", 10, late); len(more) != 0 {
		t.Fatalf("claim while the rescuer holds the lost jobs: %v, want none", ids(more))
	}
	e := entry(1, jobstore.OutcomeLost, "retry", "transient", late)
	if err := s.JobTransition(ctx, jobstore.Transition{ID: lost[0].ID, LeaseToken: lost[0].LeaseToken, State: jobstore.StateAvailable,
		Attempt: lost[0].Attempt, AvailableAt: late.Add(time.Hour), Entry: e}); err != nil {
		t.Fatal(err)
	}
	next := claim(t, s, "a", 10, late)
	if !slices.Equal(ids(next), []int64{js[3].ID}) {
		t.Fatalf("claim after the rescue moved a lost job: %v, want [%d]", ids(next), js[3].ID)
	}
	// Paused, a limited queue gives nothing; resumed, it gives what the
	// limit leaves (none here: two are running).
	finish(t, s, next[0], late)
	if _, err := s.QueuePause(ctx, "a", late); err != nil {
		t.Fatal(err)
	}
	if more := claim(t, s, "a", 10, late); len(more) != 0 {
		t.Fatalf("claim of a paused limited queue: %v", ids(more))
	}
	if _, err := s.QueueResume(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	// A higher limit gives more at once; the zero Limit removes it.
	setLimit(t, s, "a", jobstore.Limit{Concurrency: 3}, late)
	if more := claim(t, s, "a", 10, late); !slices.Equal(ids(more), []int64{js[4].ID}) {
		t.Fatalf("claim under a raised limit: %v, want [%d]", ids(more), js[4].ID)
	}
	setLimit(t, s, "a", jobstore.Limit{}, late)
	extra := []*jobstore.Job{insert(t, s, "k", queue.EnqueueOptions{Queue: "a"}), insert(t, s, "k", queue.EnqueueOptions{Queue: "a"})}
	if more := claim(t, s, "a", 10, late); !slices.Equal(ids(more), ids(extra)) {
		t.Fatalf("claim without a limit: %v, want %v", ids(more), ids(extra))
	}
}

// finish makes the running job j succeed at now.
func finish(t *testing.T, s jobstore.Store, j *jobstore.Job, now time.Time) {
	t.Helper()
	if err := s.JobTransition(ctx, jobstore.Transition{ID: j.ID, LeaseToken: j.LeaseToken, State: jobstore.StateSucceeded,
		Attempt: j.Attempt, FinishedAt: now, Entry: entry(j.Attempt, "success", "done", "", now)}); err != nil {
		t.Fatalf("JobTransition(succeeded) of job %d: %v", j.ID, err)
	}
}

// testLimitRate: a queue with a rate gives at most Rate starts at once
// (the bucket starts full), then what the bucket earns, at Rate per
// RatePeriod, whole starts only; an idle queue's bucket fills to Rate and
// no more; a changed rate starts full again.
func testLimitRate(t *testing.T, s jobstore.Store) {
	for range 30 {
		insert(t, s, "k", queue.EnqueueOptions{Queue: "r"})
	}
	setLimit(t, s, "r", jobstore.Limit{Rate: 4}, t0)
	steps := []struct {
		at   time.Duration
		want int
	}{
		{0, 4},                      // a full bucket
		{0, 0},                      // empty
		{100 * time.Millisecond, 0}, // 0.4 earned
		{300 * time.Millisecond, 1}, // 1.2 earned: 1 start, 0.2 left
		{500 * time.Millisecond, 1}, // 0.2 + 0.8 = 1
		{time.Minute, 4},            // an idle minute fills it to 4, not 240
		{time.Minute, 0},
	}
	for _, st := range steps {
		if got := claim(t, s, "r", 10, t0.Add(st.at)); len(got) != st.want {
			t.Fatalf("claim at +%v: %d jobs, want %d", st.at, len(got), st.want)
		}
	}
	// A claim of fewer than the tokens takes only what it claims.
	at := t0.Add(2 * time.Minute)
	if got := claim(t, s, "r", 1, at); len(got) != 1 {
		t.Fatalf("claim of 1 with a full bucket: %d jobs", len(got))
	}
	if got := claim(t, s, "r", 10, at); len(got) != 3 {
		t.Fatalf("claim after a claim of 1: %d jobs, want 3", len(got))
	}
	// The same rate again keeps the bucket; a new rate starts full.
	setLimit(t, s, "r", jobstore.Limit{Rate: 4}, at)
	if got := claim(t, s, "r", 10, at); len(got) != 0 {
		t.Fatalf("claim after setting the same rate: %d jobs, want 0", len(got))
	}
	setLimit(t, s, "r", jobstore.Limit{Rate: 2, RatePeriod: time.Minute}, at)
	if got := claim(t, s, "r", 10, at); len(got) != 2 {
		t.Fatalf("claim after a new rate: %d jobs, want 2", len(got))
	}
	if got := claim(t, s, "r", 10, at.Add(30*time.Second)); len(got) != 1 {
		t.Fatalf("claim half a period later: %d jobs, want 1", len(got))
	}
	// Both limits: the tighter one holds.
	setLimit(t, s, "r", jobstore.Limit{Concurrency: 21, Rate: 100}, at)
	if got := claim(t, s, "r", 10, at.Add(time.Minute)); len(got) != 21-17 {
		t.Fatalf("claim under both limits with 17 running: %d jobs, want 4", len(got))
	}
}

// testLimitConcurrentClaims: many claimers at once never run more than
// the limit, on every connection of the store; what one claimer may miss
// while another holds the queue's limit, the next claim takes.
func testLimitConcurrentClaims(t *testing.T, s jobstore.Store) {
	const limit, claimers = 3, 16
	for range 40 {
		insert(t, s, "k", queue.EnqueueOptions{Queue: "c"})
	}
	setLimit(t, s, "c", jobstore.Limit{Concurrency: limit}, t0)
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		claimed []*jobstore.Job
		errs    []error
	)
	for i := range claimers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			jobs, err := s.JobClaim(ctx, jobstore.ClaimParams{Queue: "c", Limit: 1 + i%3, Now: t0,
				LeaseUntil: t0.Add(time.Minute), Worker: fmt.Sprint("w", i)})
			mu.Lock()
			defer mu.Unlock()
			claimed = append(claimed, jobs...)
			if err != nil {
				errs = append(errs, err)
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("JobClaim: %v", errs)
	}
	if len(claimed) > limit || len(claimed) == 0 {
		t.Fatalf("%d claimers claimed %d jobs under a limit of %d", claimers, len(claimed), limit)
	}
	if more := claim(t, s, "c", 10, t0); len(claimed)+len(more) != limit {
		t.Fatalf("claimed %d, then %d more: want %d in all", len(claimed), len(more), limit)
	}
	running, err := s.JobList(ctx, jobstore.JobFilter{Queue: "c", State: jobstore.StateRunning})
	if err != nil || len(running) != limit {
		t.Fatalf("running jobs: %d, %v; want %d", len(running), err, limit)
	}
}
