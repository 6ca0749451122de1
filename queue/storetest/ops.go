package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
)

// opsTests are the conformance tests of jobstore.JobOps and jobstore.QueueOps.
var opsTests = []struct {
	name string
	fn   func(t *testing.T, s jobstore.Store)
}{
	{"Cancel", testCancel},
	{"CancelInvalid", testCancelInvalid},
	{"CancelNotify", testCancelNotify},
	{"RunNow", testRunNow},
	{"Delete", testDelete},
	{"Prune", testPrune},
	{"Pause", testPause},
	{"ResumeNotify", testResumeNotify},
}

func opEntry(outcome, action string, at time.Time) jobstore.Attempt {
	return jobstore.Attempt{Worker: "ops", StartedAt: at, FinishedAt: at, Outcome: outcome, Action: action}
}

// retrying makes a job that failed its first attempt and waits until at.
func retrying(t *testing.T, s jobstore.Store, q string, at time.Time) *jobstore.Job {
	t.Helper()
	j := insert(t, s, "k", queue.EnqueueOptions{Queue: q})
	c := claimOne(t, s, q, t0)
	if c.ID != j.ID {
		t.Fatalf("claimed job %d, want %d", c.ID, j.ID)
	}
	e := entry(1, "transient", "retry", "transient", t0)
	e.Delay = at.Sub(t0)
	if err := s.JobTransition(ctx, jobstore.Transition{ID: c.ID, LeaseToken: c.LeaseToken, State: jobstore.StateAvailable,
		Attempt: 1, AvailableAt: at, Entry: e}); err != nil {
		t.Fatalf("JobTransition(retry): %v", err)
	}
	return get(t, s, j.ID)
}

// cancelled makes a cancelled job of queue q, cancelled at at.
func cancelled(t *testing.T, s jobstore.Store, q string, at time.Time) *jobstore.Job {
	t.Helper()
	j := insert(t, s, "k", queue.EnqueueOptions{Queue: q})
	if n, err := s.JobCancel(ctx, jobstore.OpParams{Filter: jobstore.JobFilter{IDs: []int64{j.ID}}, Now: at, Entry: opEntry(jobstore.OutcomeCancelled, jobstore.ActionCancel, at)}); err != nil || n != 1 {
		t.Fatalf("JobCancel(%d) = %d, %v; want 1", j.ID, n, err)
	}
	return get(t, s, j.ID)
}

func testCancel(t *testing.T, s jobstore.Store) {
	now := t0.Add(time.Minute)
	due := insert(t, s, "k", queue.EnqueueOptions{Queue: "a", UniqueKey: "key"})
	later := insert(t, s, "k", queue.EnqueueOptions{Queue: "b", In: time.Hour})
	retry := retrying(t, s, "c", t0.Add(time.Hour))
	insert(t, s, "k", queue.EnqueueOptions{Queue: "d"})
	run := claimOne(t, s, "d", t0)
	done := succeed(t, s, "k", "e", t0)
	dead := kill(t, s, "k", "e", "permanent", t0, "")

	// By state: only the running job.
	e := opEntry(jobstore.OutcomeCancelled, jobstore.ActionCancel, now)
	testCancelRunning(t, s, run, e, now)

	// Everything else that has not finished.
	testCancelRest(t, s, []*jobstore.Job{due, later, retry}, done, dead, e, now)
	// Cancelled jobs are never claimed, and free their unique key.
	for _, q := range []string{"a", "b", "c", "d"} {
		if jobs := claim(t, s, q, 10, now.Add(2*time.Hour)); len(jobs) != 0 {
			t.Errorf("claimed %d cancelled jobs of queue %s", len(jobs), q)
		}
	}
	if j := insert(t, s, "k", queue.EnqueueOptions{Queue: "a", UniqueKey: "key"}); j.ID == due.ID {
		t.Errorf("the cancelled job still holds its unique key")
	}
	// Listed and counted as cancelled.
	list, err := s.JobList(ctx, jobstore.JobFilter{State: jobstore.StateCancelled})
	if err != nil || !slices.Equal(ids(list), []int64{due.ID, later.ID, retry.ID, run.ID}) {
		t.Errorf("JobList(cancelled) = %v, %v", ids(list), err)
	}
	st, err := s.Stats(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	cancelledN := 0
	for _, q := range st.Queues {
		cancelledN += q.Cancelled
	}
	if cancelledN != 4 {
		t.Errorf("Stats: %d cancelled, want 4: %+v", cancelledN, st.Queues)
	}
}

// testCancelRunning checks that cancelling by state cancels only run, the
// running job, with the cancel entry e at now, and that its worker has lost
// it.
func testCancelRunning(t *testing.T, s jobstore.Store, run *jobstore.Job, e jobstore.Attempt, now time.Time) {
	t.Helper()
	n, err := s.JobCancel(ctx, jobstore.OpParams{Filter: jobstore.JobFilter{State: jobstore.StateRunning}, Now: now, Entry: e})
	if err != nil || n != 1 {
		t.Fatalf("JobCancel(running) = %d, %v; want 1", n, err)
	}
	g := get(t, s, run.ID)
	if g.State != jobstore.StateCancelled || !g.FinishedAt.Equal(now) || g.LeaseToken != "" || !g.LeaseUntil.IsZero() ||
		g.Worker != "w1" || g.Attempt != 1 || g.DeadReason != "" {
		t.Errorf("cancelled running job: %+v", g)
	}
	if len(g.History) != 1 || !slices.Equal(normalize(g.History[len(g.History)-1:]), normalize([]jobstore.Attempt{e})) {
		t.Errorf("cancelled running job's history: %+v, want the cancel entry %+v", g.History, e)
	}
	// Its worker has lost it.
	if err := s.JobLeaseExtend(ctx, jobstore.LeaseParams{ID: run.ID, LeaseToken: run.LeaseToken, LeaseUntil: now.Add(time.Minute)}); !errors.Is(err, jobstore.ErrLeaseLost) {
		t.Errorf("renew after cancel: %v, want ErrLeaseLost", err)
	}
	if err := s.JobTransition(ctx, jobstore.Transition{ID: run.ID, LeaseToken: run.LeaseToken, State: jobstore.StateSucceeded,
		Attempt: 1, FinishedAt: now, Entry: entry(1, "success", "done", "success", now)}); !errors.Is(err, jobstore.ErrLeaseLost) {
		t.Errorf("transition after cancel: %v, want ErrLeaseLost", err)
	}
	if g := get(t, s, run.ID); g.State != jobstore.StateCancelled || len(g.History) != 1 {
		t.Errorf("the late result changed the cancelled job: %+v", g)
	}
}

// testCancelRest checks that cancelling everything cancels the open jobs
// (due, later, retrying) with e at now, and leaves done and dead as they
// were.
func testCancelRest(t *testing.T, s jobstore.Store, open []*jobstore.Job, done, dead *jobstore.Job, e jobstore.Attempt, now time.Time) {
	t.Helper()
	n, err := s.JobCancel(ctx, jobstore.OpParams{Filter: jobstore.JobFilter{}, Now: now, Entry: e})
	if err != nil || n != 3 {
		t.Fatalf("JobCancel(all) = %d, %v; want 3 (due, later, retry)", n, err)
	}
	for _, j := range open {
		id := j.ID
		g := get(t, s, id)
		if g.State != jobstore.StateCancelled || !g.FinishedAt.Equal(now) || g.History[len(g.History)-1].Outcome != jobstore.OutcomeCancelled {
			t.Errorf("job %d: %+v, want cancelled at %v", id, g, now)
		}
	}
	// open[2] is the retrying job.
	if g := get(t, s, open[2].ID); len(g.History) != 2 || g.Attempt != 1 {
		t.Errorf("cancelled retrying job: attempt %d, history %+v; want 1 and the retry then the cancel", g.Attempt, g.History)
	}
	for id, want := range map[int64]jobstore.State{done.ID: jobstore.StateSucceeded, dead.ID: jobstore.StateDead} {
		if g := get(t, s, id); g.State != want || len(g.History) != 1 {
			t.Errorf("finished job %d changed by cancel: %+v", id, g)
		}
	}
	if n, err := s.JobCancel(ctx, jobstore.OpParams{Filter: jobstore.JobFilter{}, Now: now, Entry: e}); err != nil || n != 0 {
		t.Errorf("JobCancel again = %d, %v; want 0", n, err)
	}
}

func testCancelInvalid(t *testing.T, s jobstore.Store) {
	j := insert(t, s, "k", queue.EnqueueOptions{})
	e := opEntry(jobstore.OutcomeCancelled, jobstore.ActionCancel, t0)
	for _, st := range []jobstore.State{jobstore.StateSucceeded, jobstore.StateDead, jobstore.StateCancelled, "nope"} {
		if _, err := s.JobCancel(ctx, jobstore.OpParams{Filter: jobstore.JobFilter{State: st}, Now: t0, Entry: e}); !errors.Is(err, jobstore.ErrInvalid) {
			t.Errorf("JobCancel(state %s): %v, want ErrInvalid", st, err)
		}
		if _, err := s.JobRunNow(ctx, jobstore.OpParams{Filter: jobstore.JobFilter{State: st}, Now: t0, Entry: e}); !errors.Is(err, jobstore.ErrInvalid) {
			t.Errorf("JobRunNow(state %s): %v, want ErrInvalid", st, err)
		}
	}
	for _, st := range []jobstore.State{jobstore.StateAvailable, jobstore.StateRunning} {
		if _, err := s.JobDelete(ctx, jobstore.JobFilter{State: st}); !errors.Is(err, jobstore.ErrInvalid) {
			t.Errorf("JobDelete(state %s): %v, want ErrInvalid", st, err)
		}
		if _, err := s.JobPrune(ctx, jobstore.PruneParams{State: st, Before: t0, Limit: 10}); !errors.Is(err, jobstore.ErrInvalid) {
			t.Errorf("JobPrune(state %s): %v, want ErrInvalid", st, err)
		}
	}
	if _, err := s.JobPrune(ctx, jobstore.PruneParams{State: jobstore.StateSucceeded, Before: t0, Limit: 0}); !errors.Is(err, jobstore.ErrInvalid) {
		t.Errorf("JobPrune(limit 0): %v, want ErrInvalid", err)
	}
	if _, err := s.QueuePause(ctx, "", t0); !errors.Is(err, jobstore.ErrInvalid) {
		t.Errorf("QueuePause(\"\"): %v, want ErrInvalid", err)
	}
	if g := get(t, s, j.ID); g.State != jobstore.StateAvailable || len(g.History) != 0 {
		t.Errorf("invalid calls changed job: %+v", g)
	}
}

func testCancelNotify(t *testing.T, s jobstore.Store) {
	n, ok := s.(jobstore.CancelNotifier)
	if !ok {
		t.Skip("the store is not a jobstore.CancelNotifier")
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch, err := n.JobCancelNotify(cctx)
	if err != nil {
		t.Fatal(err)
	}
	insert(t, s, "k", queue.EnqueueOptions{})
	run := claimOne(t, s, queue.DefaultQueue, t0)
	if n, err := s.JobCancel(ctx, jobstore.OpParams{Filter: jobstore.JobFilter{IDs: []int64{run.ID}}, Now: t0, Entry: opEntry(jobstore.OutcomeCancelled, jobstore.ActionCancel, t0)}); err != nil || n != 1 {
		t.Fatalf("JobCancel = %d, %v", n, err)
	}
	select {
	case id := <-ch:
		if id != run.ID {
			t.Errorf("notified of job %d, want %d", id, run.ID)
		}
	case <-time.After(30 * time.Second): // a bound on failure, not a wait for success
		t.Fatal("no cancel notification within 30 s")
	}
	cancel()
	for range ch { // closed when the context ends
	}
}

func testRunNow(t *testing.T, s jobstore.Store) {
	now := t0.Add(time.Minute)
	due := insert(t, s, "k", queue.EnqueueOptions{Queue: "a"})
	later := insert(t, s, "k", queue.EnqueueOptions{Queue: "a", In: time.Hour})
	other := insert(t, s, "j", queue.EnqueueOptions{Queue: "b", In: time.Hour})
	retry := retrying(t, s, "c", t0.Add(time.Hour))
	insert(t, s, "k", queue.EnqueueOptions{Queue: "d"})
	run := claimOne(t, s, "d", t0)

	e := opEntry(jobstore.OutcomeRunNow, jobstore.ActionRunNow, now)
	// By kind first: only "j".
	if n, err := s.JobRunNow(ctx, jobstore.OpParams{Filter: jobstore.JobFilter{Kind: "j"}, Now: now, Entry: e}); err != nil || n != 1 {
		t.Fatalf("JobRunNow(kind j) = %d, %v; want 1", n, err)
	}
	if g := get(t, s, other.ID); !g.AvailableAt.Equal(now) || g.State != jobstore.StateAvailable || len(g.History) != 1 ||
		g.History[0].Outcome != jobstore.OutcomeRunNow {
		t.Errorf("run-now job: %+v", g)
	}
	n, err := s.JobRunNow(ctx, jobstore.OpParams{Filter: jobstore.JobFilter{}, Now: now, Entry: e})
	if err != nil || n != 2 {
		t.Fatalf("JobRunNow(all) = %d, %v; want 2 (later, retry)", n, err)
	}
	g := get(t, s, retry.ID)
	if !g.AvailableAt.Equal(now) || g.Attempt != 1 || !g.StartedAt.Equal(t0) || len(g.History) != 2 {
		t.Errorf("run-now retrying job: %+v; want available at %v, attempt and start kept, history 2", g, now)
	}
	if g := get(t, s, due.ID); !g.AvailableAt.Equal(t0) || len(g.History) != 0 {
		t.Errorf("a job already due changed: %+v", g)
	}
	if g := get(t, s, run.ID); g.State != jobstore.StateRunning || len(g.History) != 0 {
		t.Errorf("the running job changed: %+v", g)
	}
	if jobs := claim(t, s, "a", 10, now); !slices.Equal(ids(jobs), []int64{due.ID, later.ID}) {
		t.Errorf("claim after run now: %v, want %v", ids(jobs), []int64{due.ID, later.ID})
	}
	if n, err := s.JobRunNow(ctx, jobstore.OpParams{Filter: jobstore.JobFilter{}, Now: now, Entry: e}); err != nil || n != 0 {
		t.Errorf("JobRunNow again = %d, %v; want 0", n, err)
	}
}

func testDelete(t *testing.T, s jobstore.Store) {
	avail := insert(t, s, "k", queue.EnqueueOptions{Queue: "a"})
	insert(t, s, "k", queue.EnqueueOptions{Queue: "b"})
	run := claimOne(t, s, "b", t0)
	done := succeed(t, s, "k", "c", t0)
	dead := kill(t, s, "k", "c", "permanent", t0, "")
	gone := cancelled(t, s, "c", t0)
	done2 := succeed(t, s, "j", "c", t0)

	if n, err := s.JobDelete(ctx, jobstore.JobFilter{State: jobstore.StateDead}); err != nil || n != 1 {
		t.Fatalf("JobDelete(dead) = %d, %v; want 1", n, err)
	}
	if _, err := s.JobGet(ctx, dead.ID); !errors.Is(err, jobstore.ErrNotFound) {
		t.Errorf("dead job after delete: %v", err)
	}
	if n, err := s.JobDelete(ctx, jobstore.JobFilter{Kind: "j"}); err != nil || n != 1 {
		t.Fatalf("JobDelete(kind j) = %d, %v; want 1", n, err)
	}
	// By ID, unfinished jobs included: only the finished ones go.
	n, err := s.JobDelete(ctx, jobstore.JobFilter{IDs: []int64{avail.ID, run.ID, done.ID, gone.ID, done2.ID}})
	if err != nil || n != 2 {
		t.Fatalf("JobDelete(ids) = %d, %v; want 2", n, err)
	}
	for _, id := range []int64{done.ID, gone.ID, done2.ID} {
		if _, err := s.JobGet(ctx, id); !errors.Is(err, jobstore.ErrNotFound) {
			t.Errorf("job %d after delete: %v", id, err)
		}
	}
	for id, want := range map[int64]jobstore.State{avail.ID: jobstore.StateAvailable, run.ID: jobstore.StateRunning} {
		if g := get(t, s, id); g.State != want {
			t.Errorf("unfinished job %d: %s, want %s", id, g.State, want)
		}
	}
}

func testPrune(t *testing.T, s jobstore.Store) {
	var old []*jobstore.Job
	for i := range 5 {
		old = append(old, succeed(t, s, "k", "q", t0.Add(-time.Duration(10-i)*time.Hour)))
	}
	recent := succeed(t, s, "k", "q", t0)
	dead := kill(t, s, "k", "q", "permanent", t0.Add(-100*time.Hour), "")
	gone := cancelled(t, s, "q", t0.Add(-100*time.Hour))
	avail := insert(t, s, "k", queue.EnqueueOptions{Queue: "q"})

	// Oldest first, at most limit per call.
	if n, err := s.JobPrune(ctx, jobstore.PruneParams{State: jobstore.StateSucceeded, Before: t0.Add(-time.Hour), Limit: 2}); err != nil || n != 2 {
		t.Fatalf("JobPrune(succeeded, 2) = %d, %v; want 2", n, err)
	}
	for i, j := range old {
		_, err := s.JobGet(ctx, j.ID)
		if gone := errors.Is(err, jobstore.ErrNotFound); gone != (i < 2) {
			t.Errorf("succeeded job %d (finished %v): deleted %v, want %v", j.ID, j.FinishedAt, gone, i < 2)
		}
	}
	if n, err := s.JobPrune(ctx, jobstore.PruneParams{State: jobstore.StateSucceeded, Before: t0.Add(-time.Hour), Limit: 100}); err != nil || n != 3 {
		t.Fatalf("JobPrune(succeeded, 100) = %d, %v; want 3", n, err)
	}
	if n, err := s.JobPrune(ctx, jobstore.PruneParams{State: jobstore.StateSucceeded, Before: t0.Add(-time.Hour), Limit: 100}); err != nil || n != 0 {
		t.Fatalf("JobPrune(succeeded) again = %d, %v; want 0", n, err)
	}
	if g := get(t, s, recent.ID); g.State != jobstore.StateSucceeded {
		t.Errorf("recent job: %+v", g)
	}
	for _, st := range []jobstore.State{jobstore.StateDead, jobstore.StateCancelled} {
		if n, err := s.JobPrune(ctx, jobstore.PruneParams{State: st, Before: t0, Limit: 100}); err != nil || n != 1 {
			t.Errorf("JobPrune(%s) = %d, %v; want 1", st, n, err)
		}
	}
	for _, id := range []int64{dead.ID, gone.ID} {
		if _, err := s.JobGet(ctx, id); !errors.Is(err, jobstore.ErrNotFound) {
			t.Errorf("job %d after prune: %v", id, err)
		}
	}
	if g := get(t, s, avail.ID); g.State != jobstore.StateAvailable {
		t.Errorf("available job: %+v", g)
	}
}

func testPause(t *testing.T, s jobstore.Store) {
	a := insert(t, s, "k", queue.EnqueueOptions{Queue: "a"})
	b := insert(t, s, "k", queue.EnqueueOptions{Queue: "b"})
	if ch, err := s.QueuePause(ctx, "a", t0); err != nil || !ch {
		t.Fatalf("QueuePause(a) = %v, %v; want true", ch, err)
	}
	if ch, err := s.QueuePause(ctx, "a", t0.Add(time.Hour)); err != nil || ch {
		t.Fatalf("QueuePause(a) again = %v, %v; want false", ch, err)
	}
	if ch, err := s.QueuePause(ctx, "empty", t0.Add(time.Second)); err != nil || !ch {
		t.Fatalf("QueuePause(empty) = %v, %v; want true", ch, err)
	}
	ps, err := s.QueuesPaused(ctx)
	want := []jobstore.PausedQueue{{Queue: "a", PausedAt: t0}, {Queue: "empty", PausedAt: t0.Add(time.Second)}}
	if err != nil || !slices.EqualFunc(ps, want, func(x, y jobstore.PausedQueue) bool { return x.Queue == y.Queue && x.PausedAt.Equal(y.PausedAt) }) {
		t.Fatalf("QueuesPaused = %+v, %v; want %+v", ps, err, want)
	}
	if jobs := claim(t, s, "a", 10, t0); len(jobs) != 0 {
		t.Errorf("claimed %d jobs of the paused queue", len(jobs))
	}
	if c := claimOne(t, s, "b", t0); c.ID != b.ID {
		t.Errorf("claimed job %d of queue b, want %d", c.ID, b.ID)
	}
	// Enqueueing into a paused queue works.
	a2 := insert(t, s, "k", queue.EnqueueOptions{Queue: "a"})
	if ch, err := s.QueueResume(ctx, "a"); err != nil || !ch {
		t.Fatalf("QueueResume(a) = %v, %v; want true", ch, err)
	}
	if ch, err := s.QueueResume(ctx, "a"); err != nil || ch {
		t.Fatalf("QueueResume(a) again = %v, %v; want false", ch, err)
	}
	if ch, err := s.QueueResume(ctx, "never-paused"); err != nil || ch {
		t.Fatalf("QueueResume(never-paused) = %v, %v; want false", ch, err)
	}
	if jobs := claim(t, s, "a", 10, t0); !slices.Equal(ids(jobs), []int64{a.ID, a2.ID}) {
		t.Errorf("claim after resume: %v, want %v", ids(jobs), []int64{a.ID, a2.ID})
	}
	if ps, err := s.QueuesPaused(ctx); err != nil || len(ps) != 1 || ps[0].Queue != "empty" {
		t.Errorf("QueuesPaused after resume = %+v, %v", ps, err)
	}
	// Pause again after a resume: a new pause time.
	if ch, err := s.QueuePause(ctx, "a", t0.Add(2*time.Hour)); err != nil || !ch {
		t.Fatalf("QueuePause(a) after resume = %v, %v; want true", ch, err)
	}
	if ps, _ := s.QueuesPaused(ctx); len(ps) != 2 || !ps[0].PausedAt.Equal(t0.Add(2*time.Hour)) {
		t.Errorf("QueuesPaused after a second pause = %+v", ps)
	}
}

func testResumeNotify(t *testing.T, s jobstore.Store) {
	n, ok := s.(jobstore.Notifier)
	if !ok {
		t.Skip("the store is not a jobstore.Notifier")
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch, err := n.JobNotify(cctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.QueuePause(ctx, "sleepy", t0); err != nil {
		t.Fatal(err)
	}
	if ch, err := s.QueueResume(ctx, "sleepy"); err != nil || !ch {
		t.Fatalf("QueueResume = %v, %v", ch, err)
	}
	timeout := time.After(30 * time.Second) // a bound on failure
	for {
		select {
		case q := <-ch:
			if q == "sleepy" {
				return
			}
		case <-timeout:
			t.Fatal("no notification for the resumed queue within 30 s")
		}
	}
}
