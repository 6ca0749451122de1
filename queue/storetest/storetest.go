// Package storetest is the conformance suite of jobstore.Store: every store
// heed ships (sqlitestore, pgstore) runs it, and a store of your own should
// too:
//
//	func TestStore(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) jobstore.Store {
//			return openFreshStore(t)
//		})
//	}
//
// The tests use fixed instants, never the clock, so a store must take every
// time from its arguments.
package storetest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
)

// t0 is the instant the suite's tests start at (microsecond precision, so
// that stores that keep microseconds return it unchanged).
var t0 = time.Date(2026, 3, 4, 5, 6, 7, 891011000, time.UTC)

// Run runs the conformance suite, each test in its own parallel subtest
// with a fresh, empty, migrated store from open (so open must be safe to
// call from parallel tests). Run closes each store when its
// test ends (after which open's own t.Cleanup functions run, in the usual
// last-in first-out order, so they may drop files or schemas).
func Run(t *testing.T, open func(t *testing.T) jobstore.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s jobstore.Store)
	}{
		{"InsertGet", testInsertGet},
		{"InsertInvalid", testInsertInvalid},
		{"NamesInvalid", testNamesInvalid},
		{"GetNotFound", testGetNotFound},
		{"Unique", testUnique},
		{"ClaimOrder", testClaimOrder},
		{"ClaimConcurrent", testClaimConcurrent},
		{"LeaseGuard", testLeaseGuard},
		{"LeaseExtend", testLeaseExtend},
		{"Notify", testNotify},
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
		{"DeleteSucceeded", testDeleteSucceeded},
		{"Stats", testStats},
		{"Migrate", testMigrate},
		{"TransitionBatch", testTransitionBatch},
		{"InsertMany", testInsertMany},
		{"InsertManyNoKeys", testInsertManyNoKeys},
		{"InsertManyUnique", testInsertManyUnique},
		{"InsertManyAtomic", testInsertManyAtomic},
		{"UniqueByArgs", testUniqueByArgs},
		{"UniqueByPeriod", testUniqueByPeriod},
		{"UniqueByState", testUniqueByState},
		{"TickMemory", testTickMemory},
		{"ScheduleRecord", testScheduleRecord},
		{"ClaimFirstOnly", testClaimFirstOnly},
		{"HistoryReplaceLast", testHistoryReplaceLast},
		{"BreakerOutage", testBreakerOutage},
	}
	tests = append(tests, opsTests...)   // ops.go
	tests = append(tests, limitTests...) // limit.go
	for _, tt := range tests {
		runOne(t, tt.name, open, tt.fn)
	}
}

// runOne runs fn in the subtest name over a fresh store from open, and
// closes the store when the subtest ends.
func runOne(t *testing.T, name string, open func(t *testing.T) jobstore.Store, fn func(t *testing.T, s jobstore.Store)) {
	t.Run(name, func(t *testing.T) {
		t.Parallel()
		s := open(t)
		t.Cleanup(func() {
			if err := s.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
		fn(t, s)
	})
}

var ctx = context.Background()

func insert(t *testing.T, s jobstore.Store, kind string, opts queue.EnqueueOptions) *jobstore.Job {
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

func claim(t *testing.T, s jobstore.Store, q string, limit int, now time.Time) []*jobstore.Job {
	t.Helper()
	jobs, err := s.JobClaim(ctx, jobstore.ClaimParams{Queue: q, Limit: limit, Now: now, LeaseUntil: now.Add(time.Minute), Worker: "w1"})
	if err != nil {
		t.Fatalf("JobClaim: %v", err)
	}
	return jobs
}

func claimOne(t *testing.T, s jobstore.Store, q string, now time.Time) *jobstore.Job {
	t.Helper()
	jobs := claim(t, s, q, 1, now)
	if len(jobs) != 1 {
		t.Fatalf("JobClaim(%q) at %v: %d jobs, want 1", q, now, len(jobs))
	}
	return jobs[0]
}

func get(t *testing.T, s jobstore.Store, id int64) *jobstore.Job {
	t.Helper()
	j, err := s.JobGet(ctx, id)
	if err != nil {
		t.Fatalf("JobGet(%d): %v", id, err)
	}
	return j
}

func entry(attempt int, outcome, action, reason string, at time.Time) jobstore.Attempt {
	return jobstore.Attempt{Attempt: attempt, Worker: "w1", StartedAt: at, FinishedAt: at.Add(time.Second),
		Outcome: outcome, Error: "boom", Action: action, Reason: reason}
}

// kill makes a dead job of kind in queue q, finished at fin.
func kill(t *testing.T, s jobstore.Store, kind, q, reason string, fin time.Time, key string) *jobstore.Job {
	t.Helper()
	j := insert(t, s, kind, queue.EnqueueOptions{Queue: q, UniqueKey: key})
	c := claimOne(t, s, q, t0)
	if c.ID != j.ID {
		t.Fatalf("claimed job %d, want %d", c.ID, j.ID)
	}
	if err := s.JobTransition(ctx, jobstore.Transition{ID: c.ID, LeaseToken: c.LeaseToken, State: jobstore.StateDead,
		Attempt: c.Attempt, FinishedAt: fin, DeadReason: reason, Entry: entry(1, "permanent", "give_up", reason, t0)}); err != nil {
		t.Fatalf("JobTransition(dead): %v", err)
	}
	return get(t, s, j.ID)
}

func ids(jobs []*jobstore.Job) []int64 {
	out := make([]int64, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}
