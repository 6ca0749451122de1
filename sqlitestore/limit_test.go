package sqlitestore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
	"github.com/heed-go/heed/sqlitestore"
)

// TestLimitAcrossStores: four stores open on one file (as four processes
// would be: each its own connections) with eight claimers each, claiming
// and finishing jobs of a queue limited to 3 running: the file never
// holds more than 3 running, counted by every claimer after each claim.
func TestLimitAcrossStores(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "heed.db")
	var stores []*sqlitestore.Store
	for range 4 {
		s, err := sqlitestore.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		stores = append(stores, s)
	}
	const limit, jobs = 3, 120
	for range jobs {
		in, err := queue.NewJobInsert("call", json.RawMessage(`{}`), queue.EnqueueOptions{Queue: "api"}, time.Unix(0, 0))
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := stores[0].JobInsert(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	if err := stores[1].QueueLimit(ctx, "api", jobstore.Limit{Concurrency: limit}, time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	var (
		done, most atomic.Int32
		wg         sync.WaitGroup
	)
	for i, s := range stores {
		for c := range 8 {
			wg.Go(func() {
				worker := fmt.Sprintf("s%d-c%d", i, c)
				for done.Load() < jobs {
					now := time.Now().UTC()
					got, err := s.JobClaim(ctx, jobstore.ClaimParams{Queue: "api", Limit: 2, Now: now, LeaseUntil: now.Add(time.Minute), Worker: worker})
					if err != nil {
						t.Error(err)
						return
					}
					if len(got) == 0 {
						time.Sleep(time.Millisecond)
						continue
					}
					running, err := s.JobList(ctx, jobstore.JobFilter{Queue: "api", State: jobstore.StateRunning})
					if err != nil {
						t.Error(err)
						return
					}
					for n := int32(len(running)); n > most.Load(); {
						if most.CompareAndSwap(most.Load(), n) {
							break
						}
					}
					for _, j := range got {
						if err := s.JobTransition(ctx, jobstore.Transition{ID: j.ID, LeaseToken: j.LeaseToken, State: jobstore.StateSucceeded,
							Attempt: j.Attempt, FinishedAt: now, Entry: jobstore.Attempt{Attempt: j.Attempt, Worker: worker,
								StartedAt: now, FinishedAt: now, Outcome: "success", Action: "done"}}); err != nil {
							t.Error(err)
							return
						}
						done.Add(1)
					}
				}
			})
		}
	}
	wg.Wait()
	if m := most.Load(); m > limit || m < 1 {
		t.Errorf("most running seen after a claim: %d, limit %d", m, limit)
	}
	t.Logf("%d jobs through 4 stores × 8 claimers on one file; most running after a claim: %d (limit %d)", done.Load(), most.Load(), limit)
}
