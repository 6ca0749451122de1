package storetest

// Claiming, leases and rescue.

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
	"github.com/heed-go/heed/retry"
)

func testClaimOrder(t *testing.T, s jobstore.Store) {
	// Inserted out of order: claim must go by priority, then available_at, then ID.
	mk := func(prio int, in time.Duration) int64 {
		return insert(t, s, "k", queue.EnqueueOptions{Queue: "q", Priority: prio, At: t0.Add(in)}).ID
	}
	late := mk(0, -time.Second)
	hi := mk(-5, 0)
	early := mk(0, -time.Minute)
	low := mk(3, -time.Hour)
	tie1 := mk(1, 0)
	tie2 := mk(1, 0)
	future := mk(-10, time.Minute)
	insert(t, s, "k", queue.EnqueueOptions{Queue: "other"})

	jobs := claim(t, s, "q", 4, t0)
	if got, want := ids(jobs), []int64{hi, early, late, tie1}; !slices.Equal(got, want) {
		t.Fatalf("claimed %v, want %v", got, want)
	}
	tokens := map[string]bool{}
	for _, j := range jobs {
		if j.State != jobstore.StateRunning || j.Attempt != 1 || j.Worker != "w1" || j.LeaseToken == "" ||
			!j.LeaseUntil.Equal(t0.Add(time.Minute)) || !j.AttemptedAt.Equal(t0) || !j.StartedAt.Equal(t0) {
			t.Errorf("claimed job %+v", j)
		}
		if tokens[j.LeaseToken] {
			t.Errorf("lease token %q given twice", j.LeaseToken)
		}
		tokens[j.LeaseToken] = true
		if g := get(t, s, j.ID); !reflect.DeepEqual(g, j) {
			t.Errorf("JobGet after claim\n%+v\nclaim returned\n%+v", g, j)
		}
	}
	jobs = claim(t, s, "q", 10, t0)
	if got, want := ids(jobs), []int64{tie2, low}; !slices.Equal(got, want) {
		t.Fatalf("second claim %v, want %v", got, want)
	}
	if jobs := claim(t, s, "q", 10, t0); len(jobs) != 0 {
		t.Fatalf("third claim got %v, want none (the rest is for later)", ids(jobs))
	}
	if got := ids(claim(t, s, "q", 10, t0.Add(time.Minute))); !slices.Equal(got, []int64{future}) {
		t.Fatalf("claim at its time got %v, want [%d]", got, future)
	}
	if _, err := s.JobClaim(ctx, jobstore.ClaimParams{Queue: "q", Limit: 0, Now: t0, LeaseUntil: t0.Add(time.Second)}); !errors.Is(err, jobstore.ErrInvalid) {
		t.Errorf("claim with Limit 0: %v, want ErrInvalid", err)
	}
}

func testClaimConcurrent(t *testing.T, s jobstore.Store) {
	const n = 120
	for range n {
		insert(t, s, "k", queue.EnqueueOptions{})
	}
	var (
		mu   sync.Mutex
		seen = map[int64]int{}
		wg   sync.WaitGroup
	)
	for w := range 6 {
		wg.Go(func() {
			for {
				jobs, err := s.JobClaim(ctx, jobstore.ClaimParams{Queue: queue.DefaultQueue, Limit: 3, Now: t0,
					LeaseUntil: t0.Add(time.Minute), Worker: fmt.Sprint("w", w)})
				if err != nil {
					t.Errorf("JobClaim: %v", err)
					return
				}
				if len(jobs) == 0 {
					return
				}
				mu.Lock()
				for _, j := range jobs {
					seen[j.ID]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != n {
		t.Errorf("claimed %d distinct jobs, want %d", len(seen), n)
	}
	for id, c := range seen {
		if c != 1 {
			t.Errorf("job %d claimed %d times", id, c)
		}
	}
}

func testLeaseGuard(t *testing.T, s jobstore.Store) {
	insert(t, s, "k", queue.EnqueueOptions{})
	c := claimOne(t, s, queue.DefaultQueue, t0)
	before := get(t, s, c.ID)
	stale := jobstore.Transition{ID: c.ID, LeaseToken: "not-the-token", State: jobstore.StateSucceeded, Attempt: 1,
		FinishedAt: t0, Entry: entry(1, retry.OutcomeSuccess.Key(), "done", "success", t0)}
	if err := s.JobTransition(ctx, stale); !errors.Is(err, jobstore.ErrLeaseLost) {
		t.Fatalf("transition with a stale token: %v, want ErrLeaseLost", err)
	}
	if err := s.JobLeaseExtend(ctx, jobstore.LeaseParams{ID: c.ID, LeaseToken: "not-the-token", LeaseUntil: t0.Add(time.Hour)}); !errors.Is(err, jobstore.ErrLeaseLost) {
		t.Fatalf("renew with a stale token: %v, want ErrLeaseLost", err)
	}
	if after := get(t, s, c.ID); !reflect.DeepEqual(before, after) {
		t.Fatalf("stale token changed the job:\n%+v\n%+v", before, after)
	}
	ok := stale
	ok.LeaseToken = c.LeaseToken
	if err := s.JobTransition(ctx, ok); err != nil {
		t.Fatal(err)
	}
	done := get(t, s, c.ID)
	if done.State != jobstore.StateSucceeded || done.LeaseToken != "" || !done.LeaseUntil.IsZero() || !done.FinishedAt.Equal(t0) || done.Worker != "w1" {
		t.Errorf("after success: %+v", done)
	}
	// The same token again: the job is no longer running under it.
	dead := ok
	dead.State, dead.DeadReason = jobstore.StateDead, "permanent"
	if err := s.JobTransition(ctx, dead); !errors.Is(err, jobstore.ErrLeaseLost) {
		t.Fatalf("second transition with the same token: %v, want ErrLeaseLost", err)
	}
	if err := s.JobLeaseExtend(ctx, jobstore.LeaseParams{ID: c.ID, LeaseToken: c.LeaseToken, LeaseUntil: t0.Add(time.Hour)}); !errors.Is(err, jobstore.ErrLeaseLost) {
		t.Fatalf("renew of a finished job: %v, want ErrLeaseLost", err)
	}
	if after := get(t, s, c.ID); !reflect.DeepEqual(done, after) {
		t.Fatalf("late transition changed the job:\n%+v\n%+v", done, after)
	}
	if err := s.JobTransition(ctx, jobstore.Transition{ID: 999999, LeaseToken: "x", State: jobstore.StateSucceeded, FinishedAt: t0}); !errors.Is(err, jobstore.ErrLeaseLost) {
		t.Errorf("transition of a missing job: %v, want ErrLeaseLost", err)
	}
}

func testLeaseExtend(t *testing.T, s jobstore.Store) {
	insert(t, s, "k", queue.EnqueueOptions{})
	c := claimOne(t, s, queue.DefaultQueue, t0)
	until := t0.Add(5 * time.Minute)
	if err := s.JobLeaseExtend(ctx, jobstore.LeaseParams{ID: c.ID, LeaseToken: c.LeaseToken, LeaseUntil: until}); err != nil {
		t.Fatal(err)
	}
	if g := get(t, s, c.ID); !g.LeaseUntil.Equal(until) || g.LeaseToken != c.LeaseToken || g.State != jobstore.StateRunning {
		t.Errorf("after renew: %+v", g)
	}
	// Renewed: not rescued at the old expiry.
	jobs, err := s.JobRescue(ctx, jobstore.RescueParams{Now: t0.Add(2 * time.Minute), LeaseUntil: t0.Add(3 * time.Minute), Limit: 10})
	if err != nil || len(jobs) != 0 {
		t.Errorf("rescue before the renewed lease ends: %v, %v", ids(jobs), err)
	}
}

func testRescue(t *testing.T, s jobstore.Store) {
	a := insert(t, s, "k", queue.EnqueueOptions{})
	b := insert(t, s, "k", queue.EnqueueOptions{})
	jobs := claim(t, s, queue.DefaultQueue, 2, t0) // leases end at t0+1m
	if len(jobs) != 2 {
		t.Fatalf("claimed %d", len(jobs))
	}
	if err := s.JobLeaseExtend(ctx, jobstore.LeaseParams{ID: b.ID, LeaseToken: jobs[1].LeaseToken, LeaseUntil: t0.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	got, err := s.JobRescue(ctx, jobstore.RescueParams{Now: t0.Add(time.Minute), LeaseUntil: t0.Add(2 * time.Minute), Limit: 10})
	if err != nil || len(got) != 0 {
		t.Fatalf("rescue at the lease's end (not before it): %v %v, want none", ids(got), err)
	}
	now := t0.Add(time.Minute + time.Microsecond)
	got, err = s.JobRescue(ctx, jobstore.RescueParams{Now: now, LeaseUntil: now.Add(time.Minute), Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids(got), []int64{a.ID}) {
		t.Fatalf("rescued %v, want [%d]", ids(got), a.ID)
	}
	r := got[0]
	if r.State != jobstore.StateRunning || r.LeaseToken == "" || r.LeaseToken == jobs[0].LeaseToken ||
		!r.LeaseUntil.Equal(now.Add(time.Minute)) || r.Worker != "w1" || r.Attempt != 1 || !r.AttemptedAt.Equal(t0) {
		t.Errorf("rescued job %+v", r)
	}
	if err := s.JobTransition(ctx, jobstore.Transition{ID: a.ID, LeaseToken: jobs[0].LeaseToken, State: jobstore.StateSucceeded,
		Attempt: 1, FinishedAt: now, Entry: entry(1, retry.OutcomeSuccess.Key(), "done", "success", t0)}); !errors.Is(err, jobstore.ErrLeaseLost) {
		t.Fatalf("the lost worker's late success: %v, want ErrLeaseLost", err)
	}
	again, err := s.JobRescue(ctx, jobstore.RescueParams{Now: now, LeaseUntil: now.Add(time.Minute), Limit: 10})
	if err != nil || len(again) != 0 {
		t.Fatalf("second rescue: %v %v, want none", ids(again), err)
	}
	if err := s.JobTransition(ctx, jobstore.Transition{ID: a.ID, LeaseToken: r.LeaseToken, State: jobstore.StateAvailable,
		Attempt: 1, AvailableAt: now, Entry: entry(1, jobstore.OutcomeLost, "retry", "transient", t0)}); err != nil {
		t.Fatalf("rescuer's transition: %v", err)
	}
	c := claimOne(t, s, queue.DefaultQueue, now)
	if c.ID != a.ID || c.Attempt != 2 || len(c.History) != 1 || c.History[0].Outcome != jobstore.OutcomeLost {
		t.Errorf("claimed after rescue: %+v", c)
	}
	if _, err := s.JobRescue(ctx, jobstore.RescueParams{Now: now, LeaseUntil: now, Limit: 1}); !errors.Is(err, jobstore.ErrInvalid) {
		t.Errorf("rescue with LeaseUntil = Now: %v, want ErrInvalid", err)
	}
}
