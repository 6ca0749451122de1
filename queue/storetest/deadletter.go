package storetest

// Listing, the dead-letter, deleting, stats and migrations.

import (
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
	"github.com/heed-go/heed/retry"
)

func testDeadList(t *testing.T, s jobstore.Store) {
	d1 := kill(t, s, "email", "mail", "permanent", t0.Add(-48*time.Hour), "")
	d2 := kill(t, s, "email", "mail", "attempts", t0.Add(-2*time.Hour), "")
	d3 := kill(t, s, "sms", "mail", "time_budget", t0.Add(-time.Hour), "")
	d4 := kill(t, s, "email", "other", "permanent", t0, "")
	live := insert(t, s, "email", queue.EnqueueOptions{Queue: "mail"})

	for _, tc := range []struct {
		name string
		f    jobstore.JobFilter
		want []int64
	}{
		{"all dead", jobstore.JobFilter{State: jobstore.StateDead}, []int64{d1.ID, d2.ID, d3.ID, d4.ID}},
		{"everything", jobstore.JobFilter{}, []int64{d1.ID, d2.ID, d3.ID, d4.ID, live.ID}},
		{"available", jobstore.JobFilter{State: jobstore.StateAvailable}, []int64{live.ID}},
		{"kind", jobstore.JobFilter{State: jobstore.StateDead, Kind: "email"}, []int64{d1.ID, d2.ID, d4.ID}},
		{"queue", jobstore.JobFilter{State: jobstore.StateDead, Queue: "mail"}, []int64{d1.ID, d2.ID, d3.ID}},
		{"reason", jobstore.JobFilter{State: jobstore.StateDead, DeadReason: "permanent"}, []int64{d1.ID, d4.ID}},
		{"age", jobstore.JobFilter{State: jobstore.StateDead, FinishedBefore: t0.Add(-time.Hour)}, []int64{d1.ID, d2.ID}},
		{"all filters", jobstore.JobFilter{State: jobstore.StateDead, Kind: "email", Queue: "mail", DeadReason: "attempts", FinishedBefore: t0}, []int64{d2.ID}},
		{"ids", jobstore.JobFilter{IDs: []int64{d3.ID, live.ID, 99999}}, []int64{d3.ID, live.ID}},
		{"no ids", jobstore.JobFilter{IDs: []int64{}}, nil},
		{"page", jobstore.JobFilter{State: jobstore.StateDead, AfterID: d1.ID, Limit: 2}, []int64{d2.ID, d3.ID}},
	} {
		jobs, err := s.JobList(ctx, tc.f)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := ids(jobs); !slices.Equal(got, tc.want) {
			t.Errorf("%s: JobList = %v, want %v", tc.name, got, tc.want)
		}
	}
	jobs, _ := s.JobList(ctx, jobstore.JobFilter{IDs: []int64{d1.ID}})
	if len(jobs) != 1 || !reflect.DeepEqual(jobs[0], d1) {
		t.Errorf("JobList row differs from JobGet:\n%+v\n%+v", jobs, d1)
	}
	if d1.DeadReason != "permanent" || !d1.FinishedAt.Equal(t0.Add(-48*time.Hour)) || len(d1.History) != 1 || d1.LeaseToken != "" {
		t.Errorf("dead job: %+v", d1)
	}
}

// JobList lists newest first with Newest (paging with BeforeID), tells due
// jobs from scheduled ones, and jobs waiting for a retry from new ones.
func testJobListOrderAndDue(t *testing.T, s jobstore.Store) {
	d1 := kill(t, s, "email", "mail", "permanent", t0, "")
	fresh := insert(t, s, "email", queue.EnqueueOptions{Queue: "mail"})
	later := insert(t, s, "email", queue.EnqueueOptions{Queue: "mail", In: time.Hour})
	c := claimOne(t, s, "mail", t0) // fresh, the due one
	if c.ID != fresh.ID {
		t.Fatalf("claimed job %d, want %d", c.ID, fresh.ID)
	}
	if err := s.JobTransition(ctx, jobstore.Transition{ID: c.ID, LeaseToken: c.LeaseToken, State: jobstore.StateAvailable,
		Attempt: c.Attempt, AvailableAt: t0.Add(time.Minute), Entry: entry(1, "transient", "retry", "transient", t0)}); err != nil {
		t.Fatalf("JobTransition(retry): %v", err)
	}
	retrying := fresh
	newJob := insert(t, s, "email", queue.EnqueueOptions{Queue: "mail"})
	for _, tc := range []struct {
		name string
		f    jobstore.JobFilter
		want []int64
	}{
		{"newest", jobstore.JobFilter{Newest: true}, []int64{newJob.ID, later.ID, retrying.ID, d1.ID}},
		{"newest limit", jobstore.JobFilter{Newest: true, Limit: 2}, []int64{newJob.ID, later.ID}},
		{"newest page", jobstore.JobFilter{Newest: true, BeforeID: later.ID}, []int64{retrying.ID, d1.ID}},
		{"before", jobstore.JobFilter{BeforeID: later.ID}, []int64{d1.ID, retrying.ID}},
		{"scheduled", jobstore.JobFilter{State: jobstore.StateAvailable, AvailableAfter: t0}, []int64{retrying.ID, later.ID}},
		{"due", jobstore.JobFilter{State: jobstore.StateAvailable, AvailableBy: t0}, []int64{newJob.ID}},
		{"retrying", jobstore.JobFilter{State: jobstore.StateAvailable, Retried: true}, []int64{retrying.ID}},
		{"retried", jobstore.JobFilter{Retried: true}, []int64{d1.ID, retrying.ID}},
	} {
		jobs, err := s.JobList(ctx, tc.f)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := ids(jobs); !slices.Equal(got, tc.want) {
			t.Errorf("%s: JobList = %v, want %v", tc.name, got, tc.want)
		}
	}
	if _, err := s.JobList(ctx, jobstore.JobFilter{BeforeID: -1}); err == nil {
		t.Error("JobList(BeforeID -1): no error")
	}
}

func testDeadRequeue(t *testing.T, s jobstore.Store) {
	d1 := kill(t, s, "email", "mail", "permanent", t0.Add(-time.Hour), "")
	d2 := kill(t, s, "email", "mail", "attempts", t0.Add(-time.Hour), "")
	d3 := kill(t, s, "sms", "mail", "attempts", t0.Add(-time.Hour), "")
	ok := insert(t, s, "email", queue.EnqueueOptions{Queue: "mail"})
	now := t0.Add(time.Minute)
	note := jobstore.Attempt{StartedAt: now, FinishedAt: now, Outcome: jobstore.OutcomeRequeued, Action: "requeue", Worker: "operator"}

	n, err := s.DeadRequeue(ctx, jobstore.OpParams{Filter: jobstore.JobFilter{IDs: []int64{d1.ID, ok.ID}}, Now: now, Entry: note})
	if err != nil || n != 1 {
		t.Fatalf("requeue by IDs: %d, %v; want 1 (the live job is not dead)", n, err)
	}
	g := get(t, s, d1.ID)
	wantHist := append(slices.Clone(d1.History), normalize([]jobstore.Attempt{note})...)
	if g.State != jobstore.StateAvailable || g.Attempt != 0 || g.DeadReason != "" || !g.FinishedAt.IsZero() ||
		!g.StartedAt.IsZero() || !g.AvailableAt.Equal(now) || !reflect.DeepEqual(g.History, wantHist) {
		t.Errorf("requeued job %+v\nwant history %+v", g, wantHist)
	}
	n, err = s.DeadRequeue(ctx, jobstore.OpParams{Filter: jobstore.JobFilter{Kind: "email"}, Now: now, Entry: note})
	if err != nil || n != 1 {
		t.Fatalf("requeue by kind: %d, %v; want 1", n, err)
	}
	if get(t, s, d2.ID).State != jobstore.StateAvailable || get(t, s, d3.ID).State != jobstore.StateDead {
		t.Error("requeue by kind touched the wrong jobs")
	}
	n, err = s.DeadRequeue(ctx, jobstore.OpParams{Filter: jobstore.JobFilter{}, Now: now, Entry: note})
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

func testDeadRequeueUnique(t *testing.T, s jobstore.Store) {
	d := kill(t, s, "k", "q", "permanent", t0, "key")
	live := insert(t, s, "k", queue.EnqueueOptions{Queue: "q", UniqueKey: "key"})
	if live.ID == d.ID {
		t.Fatal("a dead job blocked its unique key")
	}
	n, err := s.DeadRequeue(ctx, jobstore.OpParams{Filter: jobstore.JobFilter{}, Now: t0, Entry: jobstore.Attempt{Outcome: jobstore.OutcomeRequeued, Action: "requeue"}})
	if err != nil || n != 0 {
		t.Fatalf("requeue of a dead job whose key is live: %d, %v; want 0, nil", n, err)
	}
	if g := get(t, s, d.ID); g.State != jobstore.StateDead || len(g.History) != 1 {
		t.Errorf("skipped job changed: %+v", g)
	}
}

func testDeadDelete(t *testing.T, s jobstore.Store) {
	old := kill(t, s, "k", "q", "permanent", t0.Add(-72*time.Hour), "")
	mid := kill(t, s, "k", "q", "attempts", t0.Add(-24*time.Hour), "")
	recent := kill(t, s, "j", "q", "attempts", t0, "")
	ok := insert(t, s, "k", queue.EnqueueOptions{Queue: "q"})
	c := claimOne(t, s, "q", t0)
	if err := s.JobTransition(ctx, jobstore.Transition{ID: c.ID, LeaseToken: c.LeaseToken, State: jobstore.StateSucceeded, Attempt: 1, FinishedAt: t0.Add(-100 * time.Hour)}); err != nil {
		t.Fatal(err)
	}

	n, err := s.DeadDelete(ctx, jobstore.JobFilter{FinishedBefore: t0.Add(-48 * time.Hour)})
	if err != nil || n != 1 {
		t.Fatalf("purge older than 48h: %d, %v; want 1", n, err)
	}
	if _, err := s.JobGet(ctx, old.ID); !errors.Is(err, jobstore.ErrNotFound) {
		t.Errorf("purged job still there: %v", err)
	}
	if get(t, s, ok.ID).State != jobstore.StateSucceeded {
		t.Error("purge deleted a succeeded job")
	}
	n, err = s.DeadDelete(ctx, jobstore.JobFilter{IDs: []int64{mid.ID, ok.ID}})
	if err != nil || n != 1 {
		t.Fatalf("delete by IDs: %d, %v; want 1", n, err)
	}
	n, err = s.DeadDelete(ctx, jobstore.JobFilter{Kind: "k"})
	if err != nil || n != 0 {
		t.Fatalf("delete of nothing: %d, %v", n, err)
	}
	get(t, s, recent.ID)
	n, err = s.DeadDelete(ctx, jobstore.JobFilter{})
	if err != nil || n != 1 {
		t.Fatalf("delete all dead: %d, %v; want 1", n, err)
	}
}

// succeed makes a succeeded job of kind in queue q, finished at fin.
func succeed(t *testing.T, s jobstore.Store, kind, q string, fin time.Time) *jobstore.Job {
	t.Helper()
	j := insert(t, s, kind, queue.EnqueueOptions{Queue: q})
	c := claimOne(t, s, q, t0)
	if c.ID != j.ID {
		t.Fatalf("claimed job %d, want %d", c.ID, j.ID)
	}
	if err := s.JobTransition(ctx, jobstore.Transition{ID: c.ID, LeaseToken: c.LeaseToken, State: jobstore.StateSucceeded,
		Attempt: c.Attempt, FinishedAt: fin, Entry: entry(1, retry.OutcomeSuccess.Key(), "succeed", "", t0)}); err != nil {
		t.Fatalf("JobTransition(succeeded): %v", err)
	}
	return get(t, s, j.ID)
}

// testDeleteSucceeded: JobDelete narrowed to succeeded jobs (what heed jobs
// purge asks) touches no other state, whatever else the filter says.
func testDeleteSucceeded(t *testing.T, s jobstore.Store) {
	old := succeed(t, s, "k", "q", t0.Add(-72*time.Hour))
	mid := succeed(t, s, "k", "q", t0.Add(-24*time.Hour))
	recent := succeed(t, s, "j", "q", t0)
	dead := kill(t, s, "k", "q", "permanent", t0.Add(-100*time.Hour), "")
	avail := insert(t, s, "k", queue.EnqueueOptions{Queue: "idle"})
	running := insert(t, s, "k", queue.EnqueueOptions{Queue: "busy"})
	if c := claimOne(t, s, "busy", t0); c.ID != running.ID {
		t.Fatalf("claimed job %d, want %d", c.ID, running.ID)
	}
	others := map[int64]jobstore.State{dead.ID: jobstore.StateDead, avail.ID: jobstore.StateAvailable, running.ID: jobstore.StateRunning}
	checkOthers := func(when string) {
		t.Helper()
		for id, want := range others {
			if g := get(t, s, id); g.State != want {
				t.Errorf("%s: job %d is %s, want %s", when, id, g.State, want)
			}
		}
	}

	n, err := s.JobDelete(ctx, jobstore.JobFilter{State: jobstore.StateSucceeded, FinishedBefore: t0.Add(-48 * time.Hour)})
	if err != nil || n != 1 {
		t.Fatalf("purge older than 48h: %d, %v; want 1", n, err)
	}
	if _, err := s.JobGet(ctx, old.ID); !errors.Is(err, jobstore.ErrNotFound) {
		t.Errorf("purged job still there: %v", err)
	}
	get(t, s, mid.ID)
	checkOthers("after purge by age")

	n, err = s.JobDelete(ctx, jobstore.JobFilter{State: jobstore.StateSucceeded, IDs: []int64{mid.ID, dead.ID, avail.ID, running.ID}})
	if err != nil || n != 1 {
		t.Fatalf("delete by IDs: %d, %v; want 1", n, err)
	}
	if _, err := s.JobGet(ctx, mid.ID); !errors.Is(err, jobstore.ErrNotFound) {
		t.Errorf("deleted job still there: %v", err)
	}
	checkOthers("after delete by IDs")

	n, err = s.JobDelete(ctx, jobstore.JobFilter{State: jobstore.StateSucceeded, Kind: "k"})
	if err != nil || n != 0 {
		t.Fatalf("delete of nothing: %d, %v; want 0", n, err)
	}
	n, err = s.JobDelete(ctx, jobstore.JobFilter{State: jobstore.StateSucceeded, IDs: []int64{}})
	if err != nil || n != 0 {
		t.Fatalf("delete of no IDs: %d, %v; want 0", n, err)
	}
	if g := get(t, s, recent.ID); g.State != jobstore.StateSucceeded {
		t.Errorf("recent job is %s", g.State)
	}
	checkOthers("after deletes of nothing")

	n, err = s.JobDelete(ctx, jobstore.JobFilter{State: jobstore.StateSucceeded})
	if err != nil || n != 1 {
		t.Fatalf("delete all succeeded: %d, %v; want 1", n, err)
	}
	if _, err := s.JobGet(ctx, recent.ID); !errors.Is(err, jobstore.ErrNotFound) {
		t.Errorf("deleted job still there: %v", err)
	}
	checkOthers("after delete of all succeeded")
	if _, err := s.JobDelete(ctx, jobstore.JobFilter{State: jobstore.StateSucceeded, Limit: -1}); err == nil {
		t.Error("JobDelete(succeeded) accepted a negative Limit")
	}
}

func testStats(t *testing.T, s jobstore.Store) {
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
	if err := s.JobTransition(ctx, jobstore.Transition{ID: c.ID, LeaseToken: c.LeaseToken, State: jobstore.StateSucceeded, Attempt: 1, FinishedAt: t0}); err != nil {
		t.Fatal(err)
	}
	insert(t, s, "k", queue.EnqueueOptions{Queue: "a"})
	claimOne(t, s, "a", t0)

	st, err = s.Stats(ctx, t0)
	if err != nil {
		t.Fatal(err)
	}
	want := jobstore.Stats{
		Queues: []jobstore.QueueStats{
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

func testMigrate(t *testing.T, s jobstore.Store) {
	insert(t, s, "k", queue.EnqueueOptions{})
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate of a migrated store: %v", err)
	}
	if jobs, err := s.JobList(ctx, jobstore.JobFilter{}); err != nil || len(jobs) != 1 {
		t.Fatalf("after Migrate: %d jobs, %v", len(jobs), err)
	}
}
