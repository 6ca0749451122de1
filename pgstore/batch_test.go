package pgstore

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
)

// TestTransitionBatch finishes many claimed jobs from many goroutines at
// once, some with a stale token, one with a NUL byte in its dead reason
// (which PostgreSQL refuses), and some twice: every call gets its own
// result, as if it had run alone.
func TestTransitionBatch(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := t.Context()
	const n = 300
	for range n {
		if _, _, err := s.JobInsert(ctx, newInsert(t, "k", queue.EnqueueOptions{})); err != nil {
			t.Fatal(err)
		}
	}
	jobs, err := s.JobClaim(ctx, jobstore.ClaimParams{Queue: queue.DefaultQueue, Limit: n, Now: t0, LeaseUntil: t0.Add(time.Minute), Worker: "w"})
	if err != nil || len(jobs) != n {
		t.Fatalf("claimed %d, %v", len(jobs), err)
	}
	type want int
	const (
		ok want = iota
		lost
		invalid
	)
	trs := make([]jobstore.Transition, 0, n+10)
	wants := make([]want, 0, n+10)
	for i, j := range jobs {
		tr := jobstore.Transition{ID: j.ID, LeaseToken: j.LeaseToken, State: jobstore.StateSucceeded, Attempt: 1, FinishedAt: t0,
			Entry: jobstore.Attempt{Attempt: 1, Outcome: "success", Action: "done", Error: "e\x00rr"}}
		w := ok
		switch {
		case i%10 == 3:
			tr.LeaseToken = "stale"
			w = lost
		case i == 7:
			tr.State, tr.DeadReason = jobstore.StateDead, "bad\x00reason"
			w = invalid
		case i%25 == 5:
			tr.State, tr.AvailableAt, tr.FinishedAt = jobstore.StateAvailable, t0.Add(time.Hour), time.Time{}
		}
		trs, wants = append(trs, tr), append(wants, w)
	}
	// Some jobs finished twice: the second call must lose (the order
	// between the two is up to the goroutines, so only count them).
	for i := 0; i < n; i += 40 {
		if wants[i] == ok {
			trs, wants = append(trs, trs[i]), append(wants, -1)
		}
	}
	errs := make([]error, len(trs))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range trs {
		wg.Go(func() {
			<-start
			errs[i] = s.JobTransition(ctx, trs[i])
		})
	}
	close(start)
	wg.Wait()

	dupOK := map[int64]int{}
	for i, err := range errs {
		switch wants[i] {
		case ok:
			if err != nil && !(errors.Is(err, jobstore.ErrLeaseLost) && isDup(trs, i)) {
				t.Errorf("transition %d (job %d): %v", i, trs[i].ID, err)
			}
		case lost:
			if !errors.Is(err, jobstore.ErrLeaseLost) {
				t.Errorf("stale transition %d: %v, want ErrLeaseLost", i, err)
			}
		case invalid:
			if !errors.Is(err, jobstore.ErrInvalid) {
				t.Errorf("NUL transition %d: %v, want ErrInvalid", i, err)
			}
		}
		if isDup(trs, i) && err == nil {
			dupOK[trs[i].ID]++
		}
	}
	for id, c := range dupOK {
		if c != 1 {
			t.Errorf("job %d: %d of its two transitions succeeded, want 1", id, c)
		}
	}
	// The database agrees.
	for i, tr := range trs[:n] {
		j, err := s.JobGet(ctx, tr.ID)
		if err != nil {
			t.Fatal(err)
		}
		wantState := tr.State
		if wants[i] != ok {
			wantState = jobstore.StateRunning
		}
		if j.State != wantState {
			t.Errorf("job %d is %s, want %s", j.ID, j.State, wantState)
		}
		if wants[i] == ok && (len(j.History) != 1 || j.History[0].Error != "e\x00rr") {
			t.Errorf("job %d history %+v", j.ID, j.History)
		}
	}
	if s.batch.batches.Load() == 0 {
		t.Log("no multi-row batch formed (the goroutines did not overlap)")
	} else {
		t.Logf("%d transitions in %d batches", s.batch.batched.Load(), s.batch.batches.Load())
	}
}

// isDup reports whether trs[i] shares its job with another transition.
func isDup(trs []jobstore.Transition, i int) bool {
	for k := range trs {
		if k != i && trs[k].ID == trs[i].ID {
			return true
		}
	}
	return false
}

// TestTransitionClose closes the store while transitions are in flight:
// every call returns, and no goroutine is left (leakcheck checks in TestMain).
func TestTransitionClose(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := t.Context()
	const n = 100
	for range n {
		if _, _, err := s.JobInsert(ctx, newInsert(t, "k", queue.EnqueueOptions{})); err != nil {
			t.Fatal(err)
		}
	}
	jobs, err := s.JobClaim(ctx, jobstore.ClaimParams{Queue: queue.DefaultQueue, Limit: n, Now: t0, LeaseUntil: t0.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Go(func() {
			_ = s.JobTransition(ctx, jobstore.Transition{ID: j.ID, LeaseToken: j.LeaseToken, State: jobstore.StateSucceeded, Attempt: 1, FinishedAt: t0})
		})
	}
	s.Close()
	wg.Wait()
	err = s.JobTransition(ctx, jobstore.Transition{ID: jobs[0].ID, LeaseToken: "x", State: jobstore.StateSucceeded, Attempt: 1, FinishedAt: t0})
	if !errors.Is(err, ErrClosed) {
		t.Errorf("JobTransition after Close = %v, want ErrClosed", err)
	}
}

// TestJobTransitions covers what storetest does not: a value PostgreSQL
// refuses (a NUL byte) fails alone, in a batch with a job transitioned
// twice (which sees its first transition) and in one without.
func TestJobTransitions(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := t.Context()
	for range 3 {
		if _, _, err := s.JobInsert(ctx, newInsert(t, "k", queue.EnqueueOptions{})); err != nil {
			t.Fatal(err)
		}
	}
	jobs, err := s.JobClaim(ctx, jobstore.ClaimParams{Queue: queue.DefaultQueue, Limit: 3, Now: t0, LeaseUntil: t0.Add(time.Minute)})
	if err != nil || len(jobs) != 3 {
		t.Fatalf("claim: %d, %v", len(jobs), err)
	}
	done := func(j *jobstore.Job) jobstore.Transition {
		return jobstore.Transition{ID: j.ID, LeaseToken: j.LeaseToken, State: jobstore.StateSucceeded, Attempt: 1, FinishedAt: t0,
			Entry: jobstore.Attempt{Attempt: 1, Outcome: "success", Action: "done"}}
	}
	nul := done(jobs[1])
	nul.State, nul.DeadReason = jobstore.StateDead, "nul\x00"
	errs, err := s.JobTransitions(ctx, []jobstore.Transition{done(jobs[0]), nul, done(jobs[2]), done(jobs[0])})
	if err != nil {
		t.Fatal(err)
	}
	if errs[0] != nil || !errors.Is(errs[1], jobstore.ErrInvalid) || errs[2] != nil || !errors.Is(errs[3], jobstore.ErrLeaseLost) {
		t.Fatalf("errs = %v; want nil, ErrInvalid, nil, ErrLeaseLost", errs)
	}
	for i, want := range []jobstore.State{jobstore.StateSucceeded, jobstore.StateRunning, jobstore.StateSucceeded} {
		j, err := s.JobGet(ctx, jobs[i].ID)
		if err != nil || j.State != want || (want == jobstore.StateSucceeded && len(j.History) != 1) {
			t.Errorf("job %d: %+v, %v; want %s", i, j, err, want)
		}
	}
	// One transition per job goes in a statement of its own: a refused
	// value still fails alone.
	for range 3 {
		if _, _, err := s.JobInsert(ctx, newInsert(t, "k", queue.EnqueueOptions{})); err != nil {
			t.Fatal(err)
		}
	}
	more, err := s.JobClaim(ctx, jobstore.ClaimParams{Queue: queue.DefaultQueue, Limit: 3, Now: t0, LeaseUntil: t0.Add(time.Minute)})
	if err != nil || len(more) != 3 {
		t.Fatalf("claim: %d, %v", len(more), err)
	}
	nul = done(more[1])
	nul.State, nul.DeadReason = jobstore.StateDead, "nul\x00"
	errs, err = s.JobTransitions(ctx, []jobstore.Transition{done(more[0]), nul, done(more[2])})
	if err != nil {
		t.Fatal(err)
	}
	if errs[0] != nil || !errors.Is(errs[1], jobstore.ErrInvalid) || errs[2] != nil {
		t.Fatalf("errs = %v; want nil, ErrInvalid, nil", errs)
	}
	for i, want := range []jobstore.State{jobstore.StateSucceeded, jobstore.StateRunning, jobstore.StateSucceeded} {
		if j, err := s.JobGet(ctx, more[i].ID); err != nil || j.State != want {
			t.Errorf("job %d: %+v, %v; want %s", i, j, err, want)
		}
	}
	ctx2, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.JobTransitions(ctx2, []jobstore.Transition{done(jobs[1])}); !errors.Is(err, context.Canceled) {
		t.Errorf("JobTransitions with a canceled context: %v", err)
	}
}
