package pgstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
)

// TestInsertBatch inserts from many goroutines at once, a few with a NUL
// byte in their kind (which PostgreSQL refuses): each call gets its own
// job back, or its own error.
func TestInsertBatch(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := t.Context()
	const n = 300
	jobs := make([]*jobstore.Job, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			kind := fmt.Sprint("kind-", i)
			if i%100 == 42 {
				kind = "bad\x00kind"
			}
			in, err := queue.NewJobInsert(kind, json.RawMessage(fmt.Sprintf(`{"i": %d}`, i)),
				queue.EnqueueOptions{Queue: fmt.Sprint("q", i%3), Priority: i % 5}, t0)
			if err != nil {
				errs[i] = err
				return
			}
			<-start
			jobs[i], _, errs[i] = s.JobInsert(ctx, in)
		})
	}
	close(start)
	wg.Wait()
	ids := map[int64]bool{}
	for i := range n {
		if i%100 == 42 {
			if !errors.Is(errs[i], jobstore.ErrInvalid) {
				t.Errorf("insert %d (NUL): %v, want ErrInvalid", i, errs[i])
			}
			continue
		}
		j := jobs[i]
		if errs[i] != nil {
			t.Fatalf("insert %d: %v", i, errs[i])
		}
		if j.Kind != fmt.Sprint("kind-", i) || string(j.Args) != fmt.Sprintf(`{"i": %d}`, i) ||
			j.Queue != fmt.Sprint("q", i%3) || j.Priority != i%5 || ids[j.ID] {
			t.Errorf("insert %d returned %+v", i, j)
		}
		ids[j.ID] = true
		if g, err := s.JobGet(ctx, j.ID); err != nil || g.Kind != j.Kind {
			t.Errorf("JobGet(%d) = %+v, %v", j.ID, g, err)
		}
	}
	all, err := s.JobList(ctx, jobstore.JobFilter{})
	if err != nil || len(all) != n-3 {
		t.Errorf("JobList: %d jobs, %v; want %d", len(all), err, n-3)
	}
	t.Logf("%d inserts in %d multi-row batches", s.insert.batched.Load(), s.insert.batches.Load())
}
