package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
)

// insertUnique inserts a job of kind with args and opts at now, returning it
// and whether it was inserted.
func insertUnique(t *testing.T, s jobstore.Store, kind, args string, opts queue.EnqueueOptions, now time.Time) (*jobstore.Job, bool) {
	t.Helper()
	in, err := queue.NewJobInsert(kind, json.RawMessage(args), opts, now)
	if err != nil {
		t.Fatalf("NewJobInsert: %v", err)
	}
	j, inserted, err := s.JobInsert(ctx, in)
	if err != nil {
		t.Fatalf("JobInsert: %v", err)
	}
	return j, inserted
}

// finishJob claims the job id (alone in its queue) and moves it to state.
func finishJob(t *testing.T, s jobstore.Store, j *jobstore.Job, state jobstore.State) {
	t.Helper()
	c := claimOne(t, s, j.Queue, j.AvailableAt)
	if c.ID != j.ID {
		t.Fatalf("claimed job %d, want %d", c.ID, j.ID)
	}
	tr := jobstore.Transition{ID: c.ID, LeaseToken: c.LeaseToken, State: state, Attempt: 1, FinishedAt: c.AvailableAt,
		Entry: entry(1, "success", "done", "success", c.AvailableAt)}
	if state == jobstore.StateDead {
		tr.DeadReason, tr.Entry = "permanent", entry(1, "permanent", "give up", "permanent", c.AvailableAt)
	}
	if err := s.JobTransition(ctx, tr); err != nil {
		t.Fatal(err)
	}
}

func testUniqueByArgs(t *testing.T, s jobstore.Store) {
	by := queue.EnqueueOptions{Unique: queue.UniqueOptions{ByArgs: true}}
	a, ok := insertUnique(t, s, "email", `{"to":"a@example.com","n":[1,2]}`, by, t0)
	if !ok {
		t.Fatal("first job not inserted")
	}
	// The same arguments written another way.
	b, ok := insertUnique(t, s, "email", "{ \"n\": [1, 2],\n \"to\": \"a@example.com\" }", by, t0.Add(time.Second))
	if ok || b.ID != a.ID {
		t.Errorf("same args reordered: job %d inserted %v, want job %d not inserted", b.ID, ok, a.ID)
	}
	if _, ok := insertUnique(t, s, "email", `{"to":"b@example.com","n":[1,2]}`, by, t0); !ok {
		t.Error("other args: not inserted")
	}
	if _, ok := insertUnique(t, s, "sms", `{"to":"a@example.com","n":[1,2]}`, by, t0); !ok {
		t.Error("same args, other kind: not inserted")
	}
	other := by
	other.Queue = "other"
	if j, ok := insertUnique(t, s, "email", `{"to":"a@example.com","n":[1,2]}`, other, t0); ok || j.ID != a.ID {
		t.Errorf("same args, other queue, not ByQueue: job %d inserted %v, want job %d not inserted", j.ID, ok, a.ID)
	}
	other.Unique.ByQueue = true
	if _, ok := insertUnique(t, s, "email", `{"to":"a@example.com","n":[1,2]}`, other, t0); !ok {
		t.Error("same args, other queue, ByQueue: not inserted")
	}
	// The default states: a finished job does not block.
	finishJob(t, s, a, jobstore.StateSucceeded)
	if _, ok := insertUnique(t, s, "email", `{"to":"a@example.com","n":[1,2]}`, by, t0); !ok {
		t.Error("same args after the first succeeded: not inserted")
	}
}

func testUniqueByPeriod(t *testing.T, s jobstore.Store) {
	hour := time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC)
	by := func(at time.Time) queue.EnqueueOptions {
		return queue.EnqueueOptions{At: at, Unique: queue.UniqueOptions{ByPeriod: time.Hour}}
	}
	a, ok := insertUnique(t, s, "report", `{}`, by(hour.Add(10*time.Minute)), t0)
	if !ok {
		t.Fatal("first job not inserted")
	}
	if j, ok := insertUnique(t, s, "report", `{"other":"args"}`, by(hour.Add(59*time.Minute)), t0); ok || j.ID != a.ID {
		t.Errorf("same hour: job %d inserted %v, want job %d not inserted", j.ID, ok, a.ID)
	}
	if _, ok := insertUnique(t, s, "report", `{}`, by(hour.Add(time.Hour)), t0); !ok {
		t.Error("next hour: not inserted")
	}
	if _, ok := insertUnique(t, s, "report", `{}`, by(hour.Add(-time.Nanosecond)), t0); !ok {
		t.Error("previous hour: not inserted")
	}
}

func testUniqueByState(t *testing.T, s jobstore.Store) {
	all := []jobstore.State{jobstore.StateDead, jobstore.StateSucceeded, jobstore.StateRunning, jobstore.StateAvailable}
	keep := queue.EnqueueOptions{UniqueKey: "once", Unique: queue.UniqueOptions{ByState: all}}
	a, ok := insertUnique(t, s, "k", `{}`, keep, t0)
	if !ok {
		t.Fatal("first job not inserted")
	}
	finishJob(t, s, a, jobstore.StateSucceeded)
	if j, ok := insertUnique(t, s, "k", `{}`, keep, t0); ok || j.ID != a.ID || j.State != jobstore.StateSucceeded {
		t.Errorf("after success: job %d (%s) inserted %v, want job %d (succeeded) not inserted", j.ID, j.State, ok, a.ID)
	}
	// A job with the default states and the same key is blocked too: the
	// succeeded job holds the key.
	if j, ok := insertUnique(t, s, "k", `{}`, queue.EnqueueOptions{UniqueKey: "once"}, t0); ok || j.ID != a.ID {
		t.Errorf("default states, key held by a succeeded job: job %d inserted %v, want job %d", j.ID, ok, a.ID)
	}

	// Held while dead: a requeue of the dead job works (it holds the key
	// itself); a new job is refused while it is dead.
	dead := queue.EnqueueOptions{UniqueKey: "dead", Queue: "d",
		Unique: queue.UniqueOptions{ByState: []jobstore.State{jobstore.StateAvailable, jobstore.StateRunning, jobstore.StateDead}}}
	d, _ := insertUnique(t, s, "k", `{}`, dead, t0)
	finishJob(t, s, d, jobstore.StateDead)
	if j, ok := insertUnique(t, s, "k", `{}`, dead, t0); ok || j.ID != d.ID {
		t.Errorf("while dead: job %d inserted %v, want job %d", j.ID, ok, d.ID)
	}
	n, err := s.DeadRequeue(ctx, jobstore.OpParams{Filter: jobstore.JobFilter{IDs: []int64{d.ID}}, Now: t0,
		Entry: jobstore.Attempt{Worker: "op", StartedAt: t0, FinishedAt: t0, Outcome: jobstore.OutcomeRequeued, Action: jobstore.ActionRequeue}})
	if err != nil || n != 1 {
		t.Fatalf("DeadRequeue of the job holding its own key: %d, %v; want 1", n, err)
	}
	if j, ok := insertUnique(t, s, "k", `{}`, dead, t0); ok || j.ID != d.ID || j.State != jobstore.StateAvailable {
		t.Errorf("after requeue: job %d (%s) inserted %v, want job %d available", j.ID, j.State, ok, d.ID)
	}

	// A dead job that does not hold its key (default states) stays dead
	// when a job that does holds it.
	x, _ := insertUnique(t, s, "k", `{}`, queue.EnqueueOptions{UniqueKey: "x", Queue: "x"}, t0)
	finishJob(t, s, x, jobstore.StateDead)
	y, ok := insertUnique(t, s, "k", `{}`, queue.EnqueueOptions{UniqueKey: "x", Queue: "x2",
		Unique: queue.UniqueOptions{ByState: all}}, t0)
	if !ok {
		t.Fatal("a new job while the old one is dead (default states): not inserted")
	}
	finishJob(t, s, y, jobstore.StateSucceeded)
	if n, err := s.DeadRequeue(ctx, jobstore.OpParams{Filter: jobstore.JobFilter{IDs: []int64{x.ID}}, Now: t0,
		Entry: jobstore.Attempt{Worker: "op", StartedAt: t0, FinishedAt: t0, Outcome: jobstore.OutcomeRequeued, Action: jobstore.ActionRequeue}}); err != nil || n != 0 {
		t.Errorf("DeadRequeue of a job whose key a succeeded job holds: %d, %v; want 0", n, err)
	}
}
