// Package storetest is the conformance suite of queue.Store: every store
// heed ships (sqlitestore, pgstore) runs it, and a store of your own should
// too:
//
//	func TestStore(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) queue.Store {
//			return openFreshStore(t)
//		})
//	}
//
// The tests use fixed instants, never the clock, so a store must take every
// time from its arguments.
package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/queue"
)

// t0 is the instant the suite's tests start at (microsecond precision, so
// that stores that keep microseconds return it unchanged).
var t0 = time.Date(2026, 3, 4, 5, 6, 7, 891011000, time.UTC)

// Run runs the conformance suite, each test in its own subtest with a
// fresh, empty, migrated store from open. Run closes each store when its
// test ends (after which open's own t.Cleanup functions run, in the usual
// last-in first-out order, so they may drop files or schemas).
func Run(t *testing.T, open func(t *testing.T) queue.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s queue.Store)
	}{
		{"InsertGet", testInsertGet},
		{"InsertInvalid", testInsertInvalid},
		{"NamesInvalid", testNamesInvalid},
		{"GetNotFound", testGetNotFound},
		{"Unique", testUnique},
		{"ClaimOrder", testClaimOrder},
		{"ClaimConcurrent", testClaimConcurrent},
		{"LeaseGuard", testLeaseGuard},
		{"LeaseRenew", testLeaseRenew},
		{"Rescue", testRescue},
		{"Retry", testRetry},
		{"Snooze", testSnooze},
		{"TransitionInvalid", testTransitionInvalid},
		{"History", testHistory},
		{"HistoryCap", testHistoryCap},
		{"ArgsRoundTrip", testArgsRoundTrip},
		{"DeadList", testDeadList},
		{"JobListOrderAndDue", testJobListOrderAndDue},
		{"DeadRequeue", testDeadRequeue},
		{"DeadRequeueUnique", testDeadRequeueUnique},
		{"DeadDelete", testDeadDelete},
		{"SucceededDelete", testSucceededDelete},
		{"Stats", testStats},
		{"Migrate", testMigrate},
		{"TransitionBatch", testTransitionBatch},
		{"InsertMany", testInsertMany},
		{"InsertManyUnique", testInsertManyUnique},
		{"InsertManyAtomic", testInsertManyAtomic},
		{"UniqueByArgs", testUniqueByArgs},
		{"UniqueByPeriod", testUniqueByPeriod},
		{"UniqueByState", testUniqueByState},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() {
				if err := s.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			tt.fn(t, s)
		})
	}
}

var ctx = context.Background()

func insert(t *testing.T, s queue.Store, kind string, opts queue.EnqueueOptions) *queue.Job {
	t.Helper()
	in, err := queue.NewJobInsert(kind, json.RawMessage(`{"n":1}`), opts, t0)
	if err != nil {
		t.Fatalf("NewJobInsert: %v", err)
	}
	j, inserted, err := s.JobInsert(ctx, in)
	if err != nil {
		t.Fatalf("JobInsert: %v", err)
	}
	if !inserted && opts.UniqueKey == "" {
		t.Fatalf("JobInsert: inserted false without a unique key")
	}
	return j
}

func claim(t *testing.T, s queue.Store, q string, limit int, now time.Time) []*queue.Job {
	t.Helper()
	jobs, err := s.JobClaim(ctx, queue.ClaimParams{Queue: q, Limit: limit, Now: now, LeaseUntil: now.Add(time.Minute), Worker: "w1"})
	if err != nil {
		t.Fatalf("JobClaim: %v", err)
	}
	return jobs
}

func claimOne(t *testing.T, s queue.Store, q string, now time.Time) *queue.Job {
	t.Helper()
	jobs := claim(t, s, q, 1, now)
	if len(jobs) != 1 {
		t.Fatalf("JobClaim(%q) at %v: %d jobs, want 1", q, now, len(jobs))
	}
	return jobs[0]
}

func get(t *testing.T, s queue.Store, id int64) *queue.Job {
	t.Helper()
	j, err := s.JobGet(ctx, id)
	if err != nil {
		t.Fatalf("JobGet(%d): %v", id, err)
	}
	return j
}

func entry(attempt int, outcome, action, reason string, at time.Time) queue.Attempt {
	return queue.Attempt{Attempt: attempt, Worker: "w1", StartedAt: at, FinishedAt: at.Add(time.Second),
		Outcome: outcome, Error: "boom", Action: action, Reason: reason}
}

// kill makes a dead job of kind in queue q, finished at fin.
func kill(t *testing.T, s queue.Store, kind, q, reason string, fin time.Time, key string) *queue.Job {
	t.Helper()
	j := insert(t, s, kind, queue.EnqueueOptions{Queue: q, UniqueKey: key})
	c := claimOne(t, s, q, t0)
	if c.ID != j.ID {
		t.Fatalf("claimed job %d, want %d", c.ID, j.ID)
	}
	if err := s.JobTransition(ctx, queue.Transition{ID: c.ID, LeaseToken: c.LeaseToken, State: queue.StateDead,
		Attempt: c.Attempt, FinishedAt: fin, DeadReason: reason, Entry: entry(1, "permanent", "give_up", reason, t0)}); err != nil {
		t.Fatalf("JobTransition(dead): %v", err)
	}
	return get(t, s, j.ID)
}

func ids(jobs []*queue.Job) []int64 {
	out := make([]int64, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}

func testInsertGet(t *testing.T, s queue.Store) {
	bo := backoff.Schedule{Base: 3 * time.Second, Cap: time.Hour, Jitter: backoff.EqualJitter}
	in, err := queue.NewJobInsert("email", json.RawMessage(`{"to":"a@example.com","n":[1,2]}`), queue.EnqueueOptions{
		Queue: "mail", In: 90 * time.Second, Priority: -3, MaxAttempts: 7, UniqueKey: "k1",
		Policy: queue.JobPolicy{Backoff: &bo, TimeBudget: time.Hour, AttemptTimeout: time.Minute},
	}, t0)
	if err != nil {
		t.Fatal(err)
	}
	j, inserted, err := s.JobInsert(ctx, in)
	if err != nil || !inserted {
		t.Fatalf("JobInsert: %v, inserted %v", err, inserted)
	}
	if j.ID == 0 {
		t.Fatal("JobInsert returned ID 0")
	}
	g := get(t, s, j.ID)
	if !reflect.DeepEqual(j, g) {
		t.Errorf("JobInsert returned\n%+v\nJobGet returned\n%+v", j, g)
	}
	checkJSON(t, "Args", g.Args, in.Args)
	want := queue.Job{ID: j.ID, Kind: "email", Queue: "mail", Args: g.Args, State: queue.StateAvailable, Priority: -3,
		MaxAttempts: 7, Policy: in.Policy, AvailableAt: t0.Add(90 * time.Second), CreatedAt: t0, UniqueKey: "k1"}
	if !reflect.DeepEqual(*g, want) {
		t.Errorf("JobGet:\n got %+v\nwant %+v", *g, want)
	}
	j2 := insert(t, s, "email", queue.EnqueueOptions{})
	if j2.ID <= j.ID {
		t.Errorf("second job's ID %d is not above the first's %d", j2.ID, j.ID)
	}
	if j2.Queue != queue.DefaultQueue || j2.Policy != (queue.JobPolicy{}) || j2.UniqueKey != "" {
		t.Errorf("defaults: queue %q policy %+v key %q", j2.Queue, j2.Policy, j2.UniqueKey)
	}
}

func checkJSON(t *testing.T, what string, got, want json.RawMessage) {
	t.Helper()
	var g, w any
	dg := json.NewDecoder(bytes.NewReader(got))
	dg.UseNumber()
	dw := json.NewDecoder(bytes.NewReader(want))
	dw.UseNumber()
	if err := dg.Decode(&g); err != nil {
		t.Fatalf("%s: %s is not JSON: %v", what, got, err)
	}
	if err := dw.Decode(&w); err != nil {
		t.Fatalf("%s: %s is not JSON: %v", what, want, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s = %s, want %s", what, got, want)
	}
}

func testInsertInvalid(t *testing.T, s queue.Store) {
	good, err := queue.NewJobInsert("k", nil, queue.EnqueueOptions{}, t0)
	if err != nil {
		t.Fatal(err)
	}
	bad := map[string]func(in *queue.JobInsert){
		"empty kind":  func(in *queue.JobInsert) { in.Kind = "" },
		"empty queue": func(in *queue.JobInsert) { in.Queue = "" },
		"bad args":    func(in *queue.JobInsert) { in.Args = json.RawMessage(`{"a":`) },
		"no args":     func(in *queue.JobInsert) { in.Args = nil },
		"zero time":   func(in *queue.JobInsert) { in.AvailableAt = time.Time{} },
		"bad budget":  func(in *queue.JobInsert) { in.Policy.TimeBudget = -time.Second },
		"bad backoff": func(in *queue.JobInsert) { in.Policy.Backoff = &backoff.Schedule{Base: -1} },
	}
	for name, mutate := range bad {
		in := good
		mutate(&in)
		_, _, err := s.JobInsert(ctx, in)
		if !errors.Is(err, queue.ErrInvalid) {
			t.Errorf("%s: JobInsert error %v, want ErrInvalid", name, err)
		}
	}
	jobs, err := s.JobList(ctx, queue.JobFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 0 {
		t.Errorf("bad inserts wrote %d jobs", len(jobs))
	}
	if _, err := s.JobList(ctx, queue.JobFilter{State: "nope"}); !errors.Is(err, queue.ErrInvalid) {
		t.Errorf("JobList with a bad state: %v, want ErrInvalid", err)
	}
}

func testGetNotFound(t *testing.T, s queue.Store) {
	if _, err := s.JobGet(ctx, 12345); !errors.Is(err, queue.ErrNotFound) {
		t.Errorf("JobGet of a missing job: %v, want ErrNotFound", err)
	}
}

func testUnique(t *testing.T, s queue.Store) {
	a := insert(t, s, "k", queue.EnqueueOptions{UniqueKey: "u"})
	in, _ := queue.NewJobInsert("k", nil, queue.EnqueueOptions{UniqueKey: "u"}, t0.Add(time.Second))
	b, inserted, err := s.JobInsert(ctx, in)
	if err != nil || inserted || b.ID != a.ID {
		t.Fatalf("duplicate while available: id %d inserted %v err %v; want id %d, false", b.ID, inserted, err, a.ID)
	}
	other := insert(t, s, "k", queue.EnqueueOptions{UniqueKey: "v"})
	if other.ID == a.ID {
		t.Fatal("another key returned the same job")
	}
	c := claimOne(t, s, queue.DefaultQueue, t0)
	if c.ID != a.ID {
		t.Fatalf("claimed %d, want %d", c.ID, a.ID)
	}
	b, inserted, err = s.JobInsert(ctx, in)
	if err != nil || inserted || b.ID != a.ID || b.State != queue.StateRunning {
		t.Fatalf("duplicate while running: id %d state %s inserted %v err %v; want id %d running, false", b.ID, b.State, inserted, err, a.ID)
	}
	if err := s.JobTransition(ctx, queue.Transition{ID: c.ID, LeaseToken: c.LeaseToken, State: queue.StateSucceeded,
		Attempt: 1, FinishedAt: t0.Add(time.Second), Entry: entry(1, "ok", "done", "success", t0)}); err != nil {
		t.Fatal(err)
	}
	b, inserted, err = s.JobInsert(ctx, in)
	if err != nil || !inserted || b.ID == a.ID {
		t.Fatalf("after success: id %d inserted %v err %v; want a new job", b.ID, inserted, err)
	}
	// Concurrent duplicates make one job.
	var wg sync.WaitGroup
	got := make([]int64, 8)
	in2, _ := queue.NewJobInsert("k", nil, queue.EnqueueOptions{UniqueKey: "race"}, t0)
	for i := range got {
		wg.Go(func() {
			j, _, err := s.JobInsert(ctx, in2)
			if err != nil {
				t.Errorf("JobInsert: %v", err)
				return
			}
			got[i] = j.ID
		})
	}
	wg.Wait()
	for _, id := range got {
		if id != got[0] {
			t.Fatalf("concurrent inserts of one key made jobs %v", got)
		}
	}
}

func testClaimOrder(t *testing.T, s queue.Store) {
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
		if j.State != queue.StateRunning || j.Attempt != 1 || j.Worker != "w1" || j.LeaseToken == "" ||
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
	if _, err := s.JobClaim(ctx, queue.ClaimParams{Queue: "q", Limit: 0, Now: t0, LeaseUntil: t0.Add(time.Second)}); !errors.Is(err, queue.ErrInvalid) {
		t.Errorf("claim with Limit 0: %v, want ErrInvalid", err)
	}
}

func testClaimConcurrent(t *testing.T, s queue.Store) {
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
				jobs, err := s.JobClaim(ctx, queue.ClaimParams{Queue: queue.DefaultQueue, Limit: 3, Now: t0,
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

func testLeaseGuard(t *testing.T, s queue.Store) {
	insert(t, s, "k", queue.EnqueueOptions{})
	c := claimOne(t, s, queue.DefaultQueue, t0)
	before := get(t, s, c.ID)
	stale := queue.Transition{ID: c.ID, LeaseToken: "not-the-token", State: queue.StateSucceeded, Attempt: 1,
		FinishedAt: t0, Entry: entry(1, "ok", "done", "success", t0)}
	if err := s.JobTransition(ctx, stale); !errors.Is(err, queue.ErrLeaseLost) {
		t.Fatalf("transition with a stale token: %v, want ErrLeaseLost", err)
	}
	if err := s.JobLeaseRenew(ctx, c.ID, "not-the-token", t0.Add(time.Hour)); !errors.Is(err, queue.ErrLeaseLost) {
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
	if done.State != queue.StateSucceeded || done.LeaseToken != "" || !done.LeaseUntil.IsZero() || !done.FinishedAt.Equal(t0) || done.Worker != "w1" {
		t.Errorf("after success: %+v", done)
	}
	// The same token again: the job is no longer running under it.
	dead := ok
	dead.State, dead.DeadReason = queue.StateDead, "permanent"
	if err := s.JobTransition(ctx, dead); !errors.Is(err, queue.ErrLeaseLost) {
		t.Fatalf("second transition with the same token: %v, want ErrLeaseLost", err)
	}
	if err := s.JobLeaseRenew(ctx, c.ID, c.LeaseToken, t0.Add(time.Hour)); !errors.Is(err, queue.ErrLeaseLost) {
		t.Fatalf("renew of a finished job: %v, want ErrLeaseLost", err)
	}
	if after := get(t, s, c.ID); !reflect.DeepEqual(done, after) {
		t.Fatalf("late transition changed the job:\n%+v\n%+v", done, after)
	}
	if err := s.JobTransition(ctx, queue.Transition{ID: 999999, LeaseToken: "x", State: queue.StateSucceeded, FinishedAt: t0}); !errors.Is(err, queue.ErrLeaseLost) {
		t.Errorf("transition of a missing job: %v, want ErrLeaseLost", err)
	}
}

func testLeaseRenew(t *testing.T, s queue.Store) {
	insert(t, s, "k", queue.EnqueueOptions{})
	c := claimOne(t, s, queue.DefaultQueue, t0)
	until := t0.Add(5 * time.Minute)
	if err := s.JobLeaseRenew(ctx, c.ID, c.LeaseToken, until); err != nil {
		t.Fatal(err)
	}
	if g := get(t, s, c.ID); !g.LeaseUntil.Equal(until) || g.LeaseToken != c.LeaseToken || g.State != queue.StateRunning {
		t.Errorf("after renew: %+v", g)
	}
	// Renewed: not rescued at the old expiry.
	jobs, err := s.JobRescue(ctx, queue.RescueParams{Now: t0.Add(2 * time.Minute), LeaseUntil: t0.Add(3 * time.Minute), Limit: 10})
	if err != nil || len(jobs) != 0 {
		t.Errorf("rescue before the renewed lease ends: %v, %v", ids(jobs), err)
	}
}

func testRescue(t *testing.T, s queue.Store) {
	a := insert(t, s, "k", queue.EnqueueOptions{})
	b := insert(t, s, "k", queue.EnqueueOptions{})
	jobs := claim(t, s, queue.DefaultQueue, 2, t0) // leases end at t0+1m
	if len(jobs) != 2 {
		t.Fatalf("claimed %d", len(jobs))
	}
	if err := s.JobLeaseRenew(ctx, b.ID, jobs[1].LeaseToken, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	got, err := s.JobRescue(ctx, queue.RescueParams{Now: t0.Add(time.Minute), LeaseUntil: t0.Add(2 * time.Minute), Limit: 10})
	if err != nil || len(got) != 0 {
		t.Fatalf("rescue at the lease's end (not before it): %v %v, want none", ids(got), err)
	}
	now := t0.Add(time.Minute + time.Microsecond)
	got, err = s.JobRescue(ctx, queue.RescueParams{Now: now, LeaseUntil: now.Add(time.Minute), Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids(got), []int64{a.ID}) {
		t.Fatalf("rescued %v, want [%d]", ids(got), a.ID)
	}
	r := got[0]
	if r.State != queue.StateRunning || r.LeaseToken == "" || r.LeaseToken == jobs[0].LeaseToken ||
		!r.LeaseUntil.Equal(now.Add(time.Minute)) || r.Worker != "w1" || r.Attempt != 1 || !r.AttemptedAt.Equal(t0) {
		t.Errorf("rescued job %+v", r)
	}
	if err := s.JobTransition(ctx, queue.Transition{ID: a.ID, LeaseToken: jobs[0].LeaseToken, State: queue.StateSucceeded,
		Attempt: 1, FinishedAt: now, Entry: entry(1, "ok", "done", "success", t0)}); !errors.Is(err, queue.ErrLeaseLost) {
		t.Fatalf("the lost worker's late success: %v, want ErrLeaseLost", err)
	}
	again, err := s.JobRescue(ctx, queue.RescueParams{Now: now, LeaseUntil: now.Add(time.Minute), Limit: 10})
	if err != nil || len(again) != 0 {
		t.Fatalf("second rescue: %v %v, want none", ids(again), err)
	}
	if err := s.JobTransition(ctx, queue.Transition{ID: a.ID, LeaseToken: r.LeaseToken, State: queue.StateAvailable,
		Attempt: 1, AvailableAt: now, Entry: entry(1, queue.OutcomeLost, "retry", "transient", t0)}); err != nil {
		t.Fatalf("rescuer's transition: %v", err)
	}
	c := claimOne(t, s, queue.DefaultQueue, now)
	if c.ID != a.ID || c.Attempt != 2 || len(c.History) != 1 || c.History[0].Outcome != queue.OutcomeLost {
		t.Errorf("claimed after rescue: %+v", c)
	}
	if _, err := s.JobRescue(ctx, queue.RescueParams{Now: now, LeaseUntil: now, Limit: 1}); !errors.Is(err, queue.ErrInvalid) {
		t.Errorf("rescue with LeaseUntil = Now: %v, want ErrInvalid", err)
	}
}

func testRetry(t *testing.T, s queue.Store) {
	insert(t, s, "k", queue.EnqueueOptions{})
	c := claimOne(t, s, queue.DefaultQueue, t0)
	at := t0.Add(90 * time.Second)
	e := entry(1, "transient", "retry", "transient", t0)
	e.Delay = 90 * time.Second
	if err := s.JobTransition(ctx, queue.Transition{ID: c.ID, LeaseToken: c.LeaseToken, State: queue.StateAvailable,
		Attempt: c.Attempt, AvailableAt: at, Entry: e}); err != nil {
		t.Fatal(err)
	}
	g := get(t, s, c.ID)
	if g.State != queue.StateAvailable || g.Attempt != 1 || !g.AvailableAt.Equal(at) || g.LeaseToken != "" ||
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

func testSnooze(t *testing.T, s queue.Store) {
	insert(t, s, "k", queue.EnqueueOptions{})
	c := claimOne(t, s, queue.DefaultQueue, t0)
	e := entry(1, queue.OutcomeSnoozed, "snooze", "", t0)
	if err := s.JobTransition(ctx, queue.Transition{ID: c.ID, LeaseToken: c.LeaseToken, State: queue.StateAvailable,
		Attempt: c.Attempt - 1, AvailableAt: t0.Add(time.Second), Entry: e}); err != nil {
		t.Fatal(err)
	}
	c2 := claimOne(t, s, queue.DefaultQueue, t0.Add(time.Second))
	if c2.Attempt != 1 || len(c2.History) != 1 {
		t.Errorf("after snooze: attempt %d history %d, want 1 and 1", c2.Attempt, len(c2.History))
	}
}

func testTransitionInvalid(t *testing.T, s queue.Store) {
	insert(t, s, "k", queue.EnqueueOptions{})
	c := claimOne(t, s, queue.DefaultQueue, t0)
	before := get(t, s, c.ID)
	bad := []queue.Transition{
		{State: queue.StateRunning, FinishedAt: t0},
		{State: "weird", FinishedAt: t0},
		{State: queue.StateAvailable},            // no AvailableAt
		{State: queue.StateDead, FinishedAt: t0}, // no reason
		{State: queue.StateSucceeded},            // no FinishedAt
		{State: queue.StateSucceeded, FinishedAt: t0, Attempt: -1},
	}
	for _, tr := range bad {
		tr.ID, tr.LeaseToken = c.ID, c.LeaseToken
		if err := s.JobTransition(ctx, tr); !errors.Is(err, queue.ErrInvalid) {
			t.Errorf("JobTransition(%+v): %v, want ErrInvalid", tr, err)
		}
	}
	if after := get(t, s, c.ID); !reflect.DeepEqual(before, after) {
		t.Errorf("invalid transitions changed the job:\n%+v\n%+v", before, after)
	}
}

// normalize truncates the times of h to microseconds in UTC, as stores keep
// them.
func normalize(h []queue.Attempt) []queue.Attempt {
	out := slices.Clone(h)
	for i := range out {
		out[i].StartedAt = out[i].StartedAt.UTC().Truncate(time.Microsecond)
		out[i].FinishedAt = out[i].FinishedAt.UTC().Truncate(time.Microsecond)
	}
	return out
}

func testHistory(t *testing.T, s queue.Store) {
	insert(t, s, "k", queue.EnqueueOptions{})
	stack := strings.Repeat("goroutine 1 [running]:\n\tmain.f()\n\t\t/src/x.go:12 +0x1d\n", 300)
	h := []queue.Attempt{
		{Attempt: 1, Worker: "host-1/42", StartedAt: t0, FinishedAt: t0.Add(1500 * time.Microsecond), Outcome: "transient",
			Error:  "dial tcp 10.0.0.1:443: connection refused; \"quoted\" \\ back\\slash\ttab\nnewline <html>&amp;",
			Action: "retry", Reason: "transient", Delay: 1234567 * time.Microsecond},
		{Attempt: 2, Worker: "héllo wörld ✓ 日本語 🚀", StartedAt: t0.Add(time.Hour), FinishedAt: t0.Add(time.Hour + time.Second),
			Outcome: "permanent", Error: "panic: runtime error: index out of range [5] with length 3\u2028\u2029 \x01",
			Panic: stack, Action: "retry", Reason: "pushback", Delay: time.Duration(1<<62 + 1)},
		{Attempt: 3, StartedAt: t0.Add(2 * time.Hour).In(time.FixedZone("x", 3600)), FinishedAt: t0.Add(3 * time.Hour),
			Outcome: "ok", Action: "done", Reason: "success"},
	}
	now := t0
	for i, e := range h {
		c := claimOne(t, s, queue.DefaultQueue, now)
		tr := queue.Transition{ID: c.ID, LeaseToken: c.LeaseToken, State: queue.StateAvailable, Attempt: c.Attempt, AvailableAt: now, Entry: e}
		if i == len(h)-1 {
			tr.State, tr.AvailableAt, tr.FinishedAt = queue.StateSucceeded, time.Time{}, now
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

func testArgsRoundTrip(t *testing.T, s queue.Store) {
	for _, args := range []string{
		`{}`, `[]`, `null`, `"a string"`, `12345678901234567890`, `3.14`,
		`{"nested":{"list":[1,"two",null,true,{"x":[]}]},"unicode":"é✓🚀","esc":"a\"b\\c\n\u0001"}`,
		`{"big":[` + strings.Repeat(`"0123456789",`, 1000) + `"end"]}`,
	} {
		in, err := queue.NewJobInsert("k", json.RawMessage(args), queue.EnqueueOptions{}, t0)
		if err != nil {
			t.Fatalf("NewJobInsert(%.40s): %v", args, err)
		}
		j, _, err := s.JobInsert(ctx, in)
		if err != nil {
			t.Fatalf("JobInsert(%.40s): %v", args, err)
		}
		checkJSON(t, "Args", get(t, s, j.ID).Args, json.RawMessage(args))
		c := claimOne(t, s, queue.DefaultQueue, t0)
		checkJSON(t, "claimed Args", c.Args, json.RawMessage(args))
		if err := s.JobTransition(ctx, queue.Transition{ID: c.ID, LeaseToken: c.LeaseToken, State: queue.StateSucceeded, Attempt: 1, FinishedAt: t0}); err != nil {
			t.Fatal(err)
		}
	}
}

func testDeadList(t *testing.T, s queue.Store) {
	d1 := kill(t, s, "email", "mail", "permanent", t0.Add(-48*time.Hour), "")
	d2 := kill(t, s, "email", "mail", "attempts", t0.Add(-2*time.Hour), "")
	d3 := kill(t, s, "sms", "mail", "time_budget", t0.Add(-time.Hour), "")
	d4 := kill(t, s, "email", "other", "permanent", t0, "")
	live := insert(t, s, "email", queue.EnqueueOptions{Queue: "mail"})

	for _, tc := range []struct {
		name string
		f    queue.JobFilter
		want []int64
	}{
		{"all dead", queue.JobFilter{State: queue.StateDead}, []int64{d1.ID, d2.ID, d3.ID, d4.ID}},
		{"everything", queue.JobFilter{}, []int64{d1.ID, d2.ID, d3.ID, d4.ID, live.ID}},
		{"available", queue.JobFilter{State: queue.StateAvailable}, []int64{live.ID}},
		{"kind", queue.JobFilter{State: queue.StateDead, Kind: "email"}, []int64{d1.ID, d2.ID, d4.ID}},
		{"queue", queue.JobFilter{State: queue.StateDead, Queue: "mail"}, []int64{d1.ID, d2.ID, d3.ID}},
		{"reason", queue.JobFilter{State: queue.StateDead, DeadReason: "permanent"}, []int64{d1.ID, d4.ID}},
		{"age", queue.JobFilter{State: queue.StateDead, FinishedBefore: t0.Add(-time.Hour)}, []int64{d1.ID, d2.ID}},
		{"all filters", queue.JobFilter{State: queue.StateDead, Kind: "email", Queue: "mail", DeadReason: "attempts", FinishedBefore: t0}, []int64{d2.ID}},
		{"ids", queue.JobFilter{IDs: []int64{d3.ID, live.ID, 99999}}, []int64{d3.ID, live.ID}},
		{"no ids", queue.JobFilter{IDs: []int64{}}, nil},
		{"page", queue.JobFilter{State: queue.StateDead, AfterID: d1.ID, Limit: 2}, []int64{d2.ID, d3.ID}},
	} {
		jobs, err := s.JobList(ctx, tc.f)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := ids(jobs); !slices.Equal(got, tc.want) {
			t.Errorf("%s: JobList = %v, want %v", tc.name, got, tc.want)
		}
	}
	jobs, _ := s.JobList(ctx, queue.JobFilter{IDs: []int64{d1.ID}})
	if len(jobs) != 1 || !reflect.DeepEqual(jobs[0], d1) {
		t.Errorf("JobList row differs from JobGet:\n%+v\n%+v", jobs, d1)
	}
	if d1.DeadReason != "permanent" || !d1.FinishedAt.Equal(t0.Add(-48*time.Hour)) || len(d1.History) != 1 || d1.LeaseToken != "" {
		t.Errorf("dead job: %+v", d1)
	}
}

// JobList lists newest first with Newest (paging with BeforeID), tells due
// jobs from scheduled ones, and jobs waiting for a retry from new ones.
func testJobListOrderAndDue(t *testing.T, s queue.Store) {
	d1 := kill(t, s, "email", "mail", "permanent", t0, "")
	fresh := insert(t, s, "email", queue.EnqueueOptions{Queue: "mail"})
	later := insert(t, s, "email", queue.EnqueueOptions{Queue: "mail", In: time.Hour})
	c := claimOne(t, s, "mail", t0) // fresh, the due one
	if c.ID != fresh.ID {
		t.Fatalf("claimed job %d, want %d", c.ID, fresh.ID)
	}
	if err := s.JobTransition(ctx, queue.Transition{ID: c.ID, LeaseToken: c.LeaseToken, State: queue.StateAvailable,
		Attempt: c.Attempt, AvailableAt: t0.Add(time.Minute), Entry: entry(1, "transient", "retry", "transient", t0)}); err != nil {
		t.Fatalf("JobTransition(retry): %v", err)
	}
	retrying := fresh
	newJob := insert(t, s, "email", queue.EnqueueOptions{Queue: "mail"})
	for _, tc := range []struct {
		name string
		f    queue.JobFilter
		want []int64
	}{
		{"newest", queue.JobFilter{Newest: true}, []int64{newJob.ID, later.ID, retrying.ID, d1.ID}},
		{"newest limit", queue.JobFilter{Newest: true, Limit: 2}, []int64{newJob.ID, later.ID}},
		{"newest page", queue.JobFilter{Newest: true, BeforeID: later.ID}, []int64{retrying.ID, d1.ID}},
		{"before", queue.JobFilter{BeforeID: later.ID}, []int64{d1.ID, retrying.ID}},
		{"scheduled", queue.JobFilter{State: queue.StateAvailable, AvailableAfter: t0}, []int64{retrying.ID, later.ID}},
		{"due", queue.JobFilter{State: queue.StateAvailable, AvailableBy: t0}, []int64{newJob.ID}},
		{"retrying", queue.JobFilter{State: queue.StateAvailable, Retried: true}, []int64{retrying.ID}},
		{"retried", queue.JobFilter{Retried: true}, []int64{d1.ID, retrying.ID}},
	} {
		jobs, err := s.JobList(ctx, tc.f)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := ids(jobs); !slices.Equal(got, tc.want) {
			t.Errorf("%s: JobList = %v, want %v", tc.name, got, tc.want)
		}
	}
	if _, err := s.JobList(ctx, queue.JobFilter{BeforeID: -1}); err == nil {
		t.Error("JobList(BeforeID -1): no error")
	}
}

func testDeadRequeue(t *testing.T, s queue.Store) {
	d1 := kill(t, s, "email", "mail", "permanent", t0.Add(-time.Hour), "")
	d2 := kill(t, s, "email", "mail", "attempts", t0.Add(-time.Hour), "")
	d3 := kill(t, s, "sms", "mail", "attempts", t0.Add(-time.Hour), "")
	ok := insert(t, s, "email", queue.EnqueueOptions{Queue: "mail"})
	now := t0.Add(time.Minute)
	note := queue.Attempt{StartedAt: now, FinishedAt: now, Outcome: queue.OutcomeRequeued, Action: "requeue", Worker: "operator"}

	n, err := s.DeadRequeue(ctx, queue.JobFilter{IDs: []int64{d1.ID, ok.ID}}, now, note)
	if err != nil || n != 1 {
		t.Fatalf("requeue by IDs: %d, %v; want 1 (the live job is not dead)", n, err)
	}
	g := get(t, s, d1.ID)
	wantHist := append(slices.Clone(d1.History), normalize([]queue.Attempt{note})...)
	if g.State != queue.StateAvailable || g.Attempt != 0 || g.DeadReason != "" || !g.FinishedAt.IsZero() ||
		!g.StartedAt.IsZero() || !g.AvailableAt.Equal(now) || !reflect.DeepEqual(g.History, wantHist) {
		t.Errorf("requeued job %+v\nwant history %+v", g, wantHist)
	}
	n, err = s.DeadRequeue(ctx, queue.JobFilter{Kind: "email"}, now, note)
	if err != nil || n != 1 {
		t.Fatalf("requeue by kind: %d, %v; want 1", n, err)
	}
	if get(t, s, d2.ID).State != queue.StateAvailable || get(t, s, d3.ID).State != queue.StateDead {
		t.Error("requeue by kind touched the wrong jobs")
	}
	n, err = s.DeadRequeue(ctx, queue.JobFilter{}, now, note)
	if err != nil || n != 1 {
		t.Fatalf("requeue all: %d, %v; want 1", n, err)
	}
	// Requeued jobs run again from attempt 1.
	for _, c := range claim(t, s, "mail", 10, now) {
		if c.ID == d1.ID && (c.Attempt != 1 || !c.StartedAt.Equal(now)) {
			t.Errorf("claimed after requeue: %+v", c)
		}
	}
}

func testDeadRequeueUnique(t *testing.T, s queue.Store) {
	d := kill(t, s, "k", "q", "permanent", t0, "key")
	live := insert(t, s, "k", queue.EnqueueOptions{Queue: "q", UniqueKey: "key"})
	if live.ID == d.ID {
		t.Fatal("a dead job blocked its unique key")
	}
	n, err := s.DeadRequeue(ctx, queue.JobFilter{}, t0, queue.Attempt{Outcome: queue.OutcomeRequeued, Action: "requeue"})
	if err != nil || n != 0 {
		t.Fatalf("requeue of a dead job whose key is live: %d, %v; want 0, nil", n, err)
	}
	if g := get(t, s, d.ID); g.State != queue.StateDead || len(g.History) != 1 {
		t.Errorf("skipped job changed: %+v", g)
	}
}

func testDeadDelete(t *testing.T, s queue.Store) {
	old := kill(t, s, "k", "q", "permanent", t0.Add(-72*time.Hour), "")
	mid := kill(t, s, "k", "q", "attempts", t0.Add(-24*time.Hour), "")
	recent := kill(t, s, "j", "q", "attempts", t0, "")
	ok := insert(t, s, "k", queue.EnqueueOptions{Queue: "q"})
	c := claimOne(t, s, "q", t0)
	if err := s.JobTransition(ctx, queue.Transition{ID: c.ID, LeaseToken: c.LeaseToken, State: queue.StateSucceeded, Attempt: 1, FinishedAt: t0.Add(-100 * time.Hour)}); err != nil {
		t.Fatal(err)
	}

	n, err := s.DeadDelete(ctx, queue.JobFilter{FinishedBefore: t0.Add(-48 * time.Hour)})
	if err != nil || n != 1 {
		t.Fatalf("purge older than 48h: %d, %v; want 1", n, err)
	}
	if _, err := s.JobGet(ctx, old.ID); !errors.Is(err, queue.ErrNotFound) {
		t.Errorf("purged job still there: %v", err)
	}
	if get(t, s, ok.ID).State != queue.StateSucceeded {
		t.Error("purge deleted a succeeded job")
	}
	n, err = s.DeadDelete(ctx, queue.JobFilter{IDs: []int64{mid.ID, ok.ID}})
	if err != nil || n != 1 {
		t.Fatalf("delete by IDs: %d, %v; want 1", n, err)
	}
	n, err = s.DeadDelete(ctx, queue.JobFilter{Kind: "k"})
	if err != nil || n != 0 {
		t.Fatalf("delete of nothing: %d, %v", n, err)
	}
	get(t, s, recent.ID)
	n, err = s.DeadDelete(ctx, queue.JobFilter{})
	if err != nil || n != 1 {
		t.Fatalf("delete all dead: %d, %v; want 1", n, err)
	}
}

// succeed makes a succeeded job of kind in queue q, finished at fin.
func succeed(t *testing.T, s queue.Store, kind, q string, fin time.Time) *queue.Job {
	t.Helper()
	j := insert(t, s, kind, queue.EnqueueOptions{Queue: q})
	c := claimOne(t, s, q, t0)
	if c.ID != j.ID {
		t.Fatalf("claimed job %d, want %d", c.ID, j.ID)
	}
	if err := s.JobTransition(ctx, queue.Transition{ID: c.ID, LeaseToken: c.LeaseToken, State: queue.StateSucceeded,
		Attempt: c.Attempt, FinishedAt: fin, Entry: entry(1, "ok", "succeed", "", t0)}); err != nil {
		t.Fatalf("JobTransition(succeeded): %v", err)
	}
	return get(t, s, j.ID)
}

func testSucceededDelete(t *testing.T, s queue.Store) {
	old := succeed(t, s, "k", "q", t0.Add(-72*time.Hour))
	mid := succeed(t, s, "k", "q", t0.Add(-24*time.Hour))
	recent := succeed(t, s, "j", "q", t0)
	dead := kill(t, s, "k", "q", "permanent", t0.Add(-100*time.Hour), "")
	avail := insert(t, s, "k", queue.EnqueueOptions{Queue: "idle"})
	running := insert(t, s, "k", queue.EnqueueOptions{Queue: "busy"})
	if c := claimOne(t, s, "busy", t0); c.ID != running.ID {
		t.Fatalf("claimed job %d, want %d", c.ID, running.ID)
	}
	others := map[int64]queue.State{dead.ID: queue.StateDead, avail.ID: queue.StateAvailable, running.ID: queue.StateRunning}
	checkOthers := func(when string) {
		t.Helper()
		for id, want := range others {
			if g := get(t, s, id); g.State != want {
				t.Errorf("%s: job %d is %s, want %s", when, id, g.State, want)
			}
		}
	}

	n, err := s.SucceededDelete(ctx, queue.JobFilter{FinishedBefore: t0.Add(-48 * time.Hour)})
	if err != nil || n != 1 {
		t.Fatalf("purge older than 48h: %d, %v; want 1", n, err)
	}
	if _, err := s.JobGet(ctx, old.ID); !errors.Is(err, queue.ErrNotFound) {
		t.Errorf("purged job still there: %v", err)
	}
	get(t, s, mid.ID)
	checkOthers("after purge by age")

	n, err = s.SucceededDelete(ctx, queue.JobFilter{IDs: []int64{mid.ID, dead.ID, avail.ID, running.ID}})
	if err != nil || n != 1 {
		t.Fatalf("delete by IDs: %d, %v; want 1", n, err)
	}
	if _, err := s.JobGet(ctx, mid.ID); !errors.Is(err, queue.ErrNotFound) {
		t.Errorf("deleted job still there: %v", err)
	}
	checkOthers("after delete by IDs")

	n, err = s.SucceededDelete(ctx, queue.JobFilter{Kind: "k"})
	if err != nil || n != 0 {
		t.Fatalf("delete of nothing: %d, %v; want 0", n, err)
	}
	n, err = s.SucceededDelete(ctx, queue.JobFilter{IDs: []int64{}})
	if err != nil || n != 0 {
		t.Fatalf("delete of no IDs: %d, %v; want 0", n, err)
	}
	if g := get(t, s, recent.ID); g.State != queue.StateSucceeded {
		t.Errorf("recent job is %s", g.State)
	}
	checkOthers("after deletes of nothing")

	n, err = s.SucceededDelete(ctx, queue.JobFilter{})
	if err != nil || n != 1 {
		t.Fatalf("delete all succeeded: %d, %v; want 1", n, err)
	}
	if _, err := s.JobGet(ctx, recent.ID); !errors.Is(err, queue.ErrNotFound) {
		t.Errorf("deleted job still there: %v", err)
	}
	checkOthers("after delete of all succeeded")
	if _, err := s.SucceededDelete(ctx, queue.JobFilter{Limit: -1}); err == nil {
		t.Error("SucceededDelete accepted a negative Limit")
	}
}

func testStats(t *testing.T, s queue.Store) {
	st, err := s.Stats(ctx, t0)
	if err != nil || len(st.Queues) != 0 || st.Dead != 0 || !st.OldestDead.IsZero() {
		t.Fatalf("empty stats: %+v, %v", st, err)
	}
	kill(t, s, "k", "b", "permanent", t0.Add(-3*time.Hour), "")
	kill(t, s, "k", "b", "permanent", t0.Add(-time.Hour), "")
	kill(t, s, "k", "a", "attempts", t0.Add(-2*time.Hour), "")
	insert(t, s, "k", queue.EnqueueOptions{Queue: "a"})
	insert(t, s, "k", queue.EnqueueOptions{Queue: "a"})
	insert(t, s, "k", queue.EnqueueOptions{Queue: "a", In: time.Hour})
	c := claimOne(t, s, "a", t0)
	if err := s.JobTransition(ctx, queue.Transition{ID: c.ID, LeaseToken: c.LeaseToken, State: queue.StateSucceeded, Attempt: 1, FinishedAt: t0}); err != nil {
		t.Fatal(err)
	}
	insert(t, s, "k", queue.EnqueueOptions{Queue: "a"})
	claimOne(t, s, "a", t0)

	st, err = s.Stats(ctx, t0)
	if err != nil {
		t.Fatal(err)
	}
	want := queue.Stats{
		Queues: []queue.QueueStats{
			{Queue: "a", Available: 1, Scheduled: 1, Running: 1, Succeeded: 1, Dead: 1},
			{Queue: "b", Dead: 2},
		},
		Dead:       3,
		OldestDead: t0.Add(-3 * time.Hour),
	}
	if !reflect.DeepEqual(st, want) {
		t.Errorf("Stats =\n%+v\nwant\n%+v", st, want)
	}
	st, _ = s.Stats(ctx, t0.Add(2*time.Hour))
	if st.Queues[0].Available != 2 || st.Queues[0].Scheduled != 0 {
		t.Errorf("Stats later: %+v, want the scheduled job available", st.Queues[0])
	}
}

func testMigrate(t *testing.T, s queue.Store) {
	insert(t, s, "k", queue.EnqueueOptions{})
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate of a migrated store: %v", err)
	}
	if jobs, err := s.JobList(ctx, queue.JobFilter{}); err != nil || len(jobs) != 1 {
		t.Fatalf("after Migrate: %d jobs, %v", len(jobs), err)
	}
}

func testTransitionBatch(t *testing.T, s queue.Store) {
	b, ok := s.(queue.TransitionBatcher)
	if !ok {
		t.Skip("the store is not a queue.TransitionBatcher")
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
	ok1 := queue.Transition{ID: jobs[0].ID, LeaseToken: jobs[0].LeaseToken, State: queue.StateSucceeded, Attempt: 1,
		FinishedAt: t0, Entry: entry(1, "ok", "done", "success", t0)}
	stale := queue.Transition{ID: jobs[1].ID, LeaseToken: "stale", State: queue.StateSucceeded, Attempt: 1, FinishedAt: t0}
	bad := queue.Transition{ID: jobs[2].ID, LeaseToken: jobs[2].LeaseToken, State: queue.StateRunning}
	ok2 := queue.Transition{ID: jobs[3].ID, LeaseToken: jobs[3].LeaseToken, State: queue.StateAvailable, Attempt: 1,
		AvailableAt: t0.Add(time.Minute), Entry: entry(1, "transient", "retry", "transient", t0)}
	errs, err := b.JobTransitions(ctx, []queue.Transition{ok1, stale, bad, ok2})
	if err != nil || len(errs) != 4 {
		t.Fatalf("JobTransitions: %v, %v", errs, err)
	}
	if errs[0] != nil || !errors.Is(errs[1], queue.ErrLeaseLost) || !errors.Is(errs[2], queue.ErrInvalid) || errs[3] != nil {
		t.Errorf("per-transition errors %v; want nil, ErrLeaseLost, ErrInvalid, nil", errs)
	}
	if g := get(t, s, jobs[0].ID); g.State != queue.StateSucceeded || len(g.History) != 1 {
		t.Errorf("first job: %+v", g)
	}
	if g := get(t, s, jobs[1].ID); g.State != queue.StateRunning || g.LeaseToken != jobs[1].LeaseToken {
		t.Errorf("stale-token job changed: %+v", g)
	}
	if g := get(t, s, jobs[2].ID); g.State != queue.StateRunning || len(g.History) != 0 {
		t.Errorf("invalid-transition job changed: %+v", g)
	}
	if g := get(t, s, jobs[3].ID); g.State != queue.StateAvailable || !g.AvailableAt.Equal(t0.Add(time.Minute)) {
		t.Errorf("retried job: %+v", g)
	}
	// Again, in a new batch: the lease is gone.
	errs, err = b.JobTransitions(ctx, []queue.Transition{ok1})
	if err != nil || !errors.Is(errs[0], queue.ErrLeaseLost) {
		t.Errorf("repeated transition: %v, %v", errs, err)
	}
}

// testHistoryCap appends many entries to one job's history, through
// JobTransition, JobTransitions (when the store has it) and DeadRequeue,
// and checks that the store keeps the first entry, a cut marker counting
// the dropped ones, and the last queue.MaxHistory, in order.
func testHistoryCap(t *testing.T, s queue.Store) {
	b, batcher := s.(queue.TransitionBatcher)
	j := insert(t, s, "k", queue.EnqueueOptions{MaxAttempts: -1})
	check := func(n int) {
		t.Helper()
		h := get(t, s, j.ID).History
		want := []int{}
		for i := 1; i <= n; i++ {
			want = append(want, i)
		}
		cut := 0
		if n > queue.MaxHistory+1 {
			cut = n - queue.MaxHistory - 1
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
			if m.Outcome != queue.OutcomeCut || m.Action != "cut" || m.Cut != cut {
				t.Fatalf("after %d entries, marker %+v, want outcome cut counting %d", n, m, cut)
			}
		}
		for i, e := range h {
			if e.Attempt == 0 {
				continue
			}
			if w := entry(e.Attempt, "transient", "retry", "transient", t0.Add(time.Duration(e.Attempt)*time.Second)); !reflect.DeepEqual(normalize([]queue.Attempt{e}), normalize([]queue.Attempt{w})) {
				t.Fatalf("after %d entries, entry %d is %+v, want %+v", n, i, e, w)
			}
		}
	}
	total := 2*queue.MaxHistory + 50
	for n := 1; n <= total; n++ {
		at := t0.Add(time.Duration(n) * time.Second)
		c := claimOne(t, s, queue.DefaultQueue, at)
		tr := queue.Transition{ID: c.ID, LeaseToken: c.LeaseToken, State: queue.StateAvailable, Attempt: c.Attempt,
			AvailableAt: at, Entry: entry(n, "transient", "retry", "transient", at)}
		if batcher && n%2 == 0 {
			errs, err := b.JobTransitions(ctx, []queue.Transition{tr})
			if err != nil || errs[0] != nil {
				t.Fatalf("JobTransitions: %v, %v", errs, err)
			}
		} else if err := s.JobTransition(ctx, tr); err != nil {
			t.Fatalf("JobTransition: %v", err)
		}
		switch n {
		case 1, queue.MaxHistory, queue.MaxHistory + 1, queue.MaxHistory + 2, queue.MaxHistory + 3, total:
			check(n)
		}
	}
	// Kill it, then requeue: the requeue entry is appended under the cap too.
	at := t0.Add(time.Duration(total+1) * time.Second)
	c := claimOne(t, s, queue.DefaultQueue, at)
	if err := s.JobTransition(ctx, queue.Transition{ID: c.ID, LeaseToken: c.LeaseToken, State: queue.StateDead, Attempt: c.Attempt,
		FinishedAt: at, DeadReason: "attempts", Entry: entry(total+1, "transient", "retry", "transient", at)}); err != nil {
		t.Fatal(err)
	}
	check(total + 1)
	if n, err := s.DeadRequeue(ctx, queue.JobFilter{IDs: []int64{j.ID}}, at, queue.Attempt{Attempt: total + 2, Outcome: queue.OutcomeRequeued,
		Worker: "w1", StartedAt: at.Add(time.Second), FinishedAt: at.Add(2 * time.Second), Error: "boom", Action: "retry", Reason: "transient"}); err != nil || n != 1 {
		t.Fatalf("DeadRequeue: %d, %v", n, err)
	}
	h := get(t, s, j.ID).History
	if len(h) != queue.MaxHistory+2 || h[1].Cut != total+2-queue.MaxHistory-1 || h[len(h)-1].Outcome != queue.OutcomeRequeued {
		t.Errorf("after the requeue: %d entries, marker %+v, last %+v", len(h), h[1], h[len(h)-1])
	}
}

// testNamesInvalid checks that names no store could keep faithfully (a
// NUL byte, invalid UTF-8, control characters, too long) are refused by
// validation, with the same error on every store, before any SQL runs.
func testNamesInvalid(t *testing.T, s queue.Store) {
	good, err := queue.NewJobInsert("k", nil, queue.EnqueueOptions{}, t0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		mutate func(in *queue.JobInsert)
		want   string
	}{
		{func(in *queue.JobInsert) { in.Kind = "a\x00b" }, `queue: JobInsert.Kind has the control character U+0000: "a\x00b"`},
		{func(in *queue.JobInsert) { in.Queue = "q\xff" }, `queue: JobInsert.Queue is not valid UTF-8: "q\xff"`},
		{func(in *queue.JobInsert) { in.Queue = "two\nlines" }, `queue: JobInsert.Queue has the control character U+000A: "two\nlines"`},
		{func(in *queue.JobInsert) { in.Kind = strings.Repeat("k", queue.MaxName+1) }, `queue: JobInsert.Kind is 256 bytes long, at most 255`},
		{func(in *queue.JobInsert) { in.UniqueKey = "u\x00" }, `queue: JobInsert.UniqueKey has the control character U+0000: "u\x00"`},
	} {
		in := good
		tt.mutate(&in)
		_, _, err := s.JobInsert(ctx, in)
		if !errors.Is(err, queue.ErrInvalid) || err.Error() != tt.want {
			t.Errorf("JobInsert: error %v, want %s", err, tt.want)
		}
	}
	if _, err := s.JobList(ctx, queue.JobFilter{Kind: "a\x00"}); !errors.Is(err, queue.ErrInvalid) ||
		err.Error() != `queue: JobFilter.Kind has the control character U+0000: "a\x00"` {
		t.Errorf("JobList: %v", err)
	}
	if _, err := s.JobClaim(ctx, queue.ClaimParams{Queue: "\xc3", Limit: 1, Now: t0, LeaseUntil: t0.Add(time.Minute)}); !errors.Is(err, queue.ErrInvalid) ||
		err.Error() != `queue: ClaimParams.Queue is not valid UTF-8: "\xc3"` {
		t.Errorf("JobClaim: %v", err)
	}
	if jobs, err := s.JobList(ctx, queue.JobFilter{}); err != nil || len(jobs) != 0 {
		t.Errorf("invalid inserts wrote %d jobs (%v)", len(jobs), err)
	}
}
