package sqlitestore_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
)

func BenchmarkInsert(b *testing.B) {
	s := open(b)
	defer s.Close()
	ctx := context.Background()
	in, err := queue.NewJobInsert("bench", json.RawMessage(`{"n":1}`), queue.EnqueueOptions{}, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := s.JobInsert(ctx, in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkClaimComplete claims jobs in batches of 10 and completes each:
// the store's work per job in a burn-down (its insert excluded).
func BenchmarkClaimComplete(b *testing.B) {
	s := open(b)
	defer s.Close()
	ctx := context.Background()
	now := time.Now()
	in, _ := queue.NewJobInsert("bench", json.RawMessage(`{"n":1}`), queue.EnqueueOptions{}, now)
	for range b.N {
		if _, _, err := s.JobInsert(ctx, in); err != nil {
			b.Fatal(err)
		}
	}
	entry := jobstore.Attempt{Attempt: 1, Worker: "w", StartedAt: now, FinishedAt: now, Outcome: "success", Action: "done", Reason: "success"}
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; {
		jobs, err := s.JobClaim(ctx, jobstore.ClaimParams{Queue: queue.DefaultQueue, Limit: 10, Now: now.Add(time.Second),
			LeaseUntil: now.Add(time.Minute), Worker: "w"})
		if err != nil {
			b.Fatal(err)
		}
		if len(jobs) == 0 {
			b.Fatalf("no jobs left after %d of %d", done, b.N)
		}
		for _, j := range jobs {
			if err := s.JobTransition(ctx, jobstore.Transition{ID: j.ID, LeaseToken: j.LeaseToken, State: jobstore.StateSucceeded,
				Attempt: j.Attempt, FinishedAt: now, Entry: entry}); err != nil {
				b.Fatal(err)
			}
			done++
		}
	}
}

// BenchmarkClaimTransitions claims jobs in batches of 10 and finishes each
// batch with one JobTransitions call, as queue.Worker does at its default
// concurrency: the store's work per job in a burn-down (its insert
// excluded).
func BenchmarkClaimTransitions(b *testing.B) {
	s := open(b)
	defer s.Close()
	ctx := context.Background()
	now := time.Now()
	in, _ := queue.NewJobInsert("bench", json.RawMessage(`{"n":1}`), queue.EnqueueOptions{}, now)
	ins := make([]jobstore.JobInsert, b.N)
	for i := range ins {
		ins[i] = in
	}
	if _, err := s.JobInsertMany(ctx, ins); err != nil {
		b.Fatal(err)
	}
	entry := jobstore.Attempt{Attempt: 1, Worker: "w", StartedAt: now, FinishedAt: now, Outcome: "success", Action: "done", Reason: "success"}
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; {
		jobs, err := s.JobClaim(ctx, jobstore.ClaimParams{Queue: queue.DefaultQueue, Limit: 10, Now: now.Add(time.Second),
			LeaseUntil: now.Add(time.Minute), Worker: "w"})
		if err != nil {
			b.Fatal(err)
		}
		if len(jobs) == 0 {
			b.Fatalf("no jobs left after %d of %d", done, b.N)
		}
		ts := make([]jobstore.Transition, len(jobs))
		for i, j := range jobs {
			ts[i] = jobstore.Transition{ID: j.ID, LeaseToken: j.LeaseToken, State: jobstore.StateSucceeded,
				Attempt: j.Attempt, FinishedAt: now, Entry: entry}
		}
		errs, err := s.JobTransitions(ctx, ts)
		if err == nil {
			err = errors.Join(errs...)
		}
		if err != nil {
			b.Fatal(err)
		}
		done += len(jobs)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}
