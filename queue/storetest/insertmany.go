package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
)

// batchInserter returns s as a jobstore.BatchInserter, or skips the test.
func batchInserter(t *testing.T, s jobstore.Store) jobstore.BatchInserter {
	t.Helper()
	b, ok := s.(jobstore.BatchInserter)
	if !ok {
		t.Skip("the store is not a jobstore.BatchInserter")
	}
	return b
}

func newInserts(t *testing.T, n int, opts func(i int) queue.EnqueueOptions) []jobstore.JobInsert {
	t.Helper()
	ins := make([]jobstore.JobInsert, n)
	for i := range ins {
		var err error
		ins[i], err = queue.NewJobInsert(fmt.Sprint("kind", i%3), json.RawMessage(fmt.Sprintf(`{"i":%d}`, i)), opts(i), t0)
		if err != nil {
			t.Fatal(err)
		}
	}
	return ins
}

// testInsertMany inserts more jobs than one statement of either store
// carries, with every field set on some, and reads each back.
func testInsertMany(t *testing.T, s jobstore.Store) { insertMany(t, s, true) }

// testInsertManyNoKeys is testInsertMany without unique keys (a store may
// take a faster way for such a batch), with arguments whose spacing must
// be kept, every job read back.
func testInsertManyNoKeys(t *testing.T, s jobstore.Store) { insertMany(t, s, false) }

func insertMany(t *testing.T, s jobstore.Store, keys bool) {
	b := batchInserter(t, s)
	n := 2345
	if !keys {
		n = 400 // every job is read back
	}
	ins := newInserts(t, n, func(i int) queue.EnqueueOptions {
		o := queue.EnqueueOptions{Queue: fmt.Sprint("q", i%2), Priority: i % 5, In: time.Duration(i) * time.Millisecond}
		if i%7 == 0 {
			o.MaxAttempts = 3
			o.Policy = jobstore.JobPolicy{TimeBudget: time.Hour}
		}
		if i%11 == 0 {
			o.MaxAttempts = -1
			o.Policy = jobstore.JobPolicy{AttemptTimeout: 1500 * time.Microsecond, Backoff: &backoff.Schedule{Kind: backoff.Constant, Base: time.Second}}
		}
		if keys && i%100 == 0 {
			o.UniqueKey = fmt.Sprint("key", i)
		}
		return o
	})
	if !keys {
		for i := range ins {
			if i%3 == 0 {
				ins[i].Args = json.RawMessage(fmt.Sprintf("{ \"i\" :\t%d, \"s\": \"\\u00e9\" }", i))
			}
		}
	}
	res, err := b.JobInsertMany(ctx, ins)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != n {
		t.Fatalf("%d results for %d jobs", len(res), n)
	}
	var last int64
	for i, r := range res {
		if !r.Inserted || r.Job == nil {
			t.Fatalf("result %d: %+v, want an inserted job", i, r)
		}
		if r.Job.ID <= last {
			t.Fatalf("result %d: ID %d not above the previous %d", i, r.Job.ID, last)
		}
		last = r.Job.ID
		in := ins[i]
		want := jobstore.Job{ID: r.Job.ID, Kind: in.Kind, Queue: in.Queue, Args: r.Job.Args, State: jobstore.StateAvailable,
			Priority: in.Priority, MaxAttempts: in.MaxAttempts, Policy: in.Policy, AvailableAt: in.AvailableAt,
			CreatedAt: t0, UniqueKey: in.UniqueKey}
		if !reflect.DeepEqual(*r.Job, want) {
			t.Fatalf("result %d:\n got %+v\nwant %+v", i, *r.Job, want)
		}
		checkJSON(t, "Args", r.Job.Args, in.Args)
		if !keys || i%250 == 0 {
			if g := get(t, s, r.Job.ID); !reflect.DeepEqual(g, r.Job) {
				t.Fatalf("JobGet(%d) = %+v, want %+v", r.Job.ID, g, r.Job)
			}
		}
	}
	jobs, err := s.JobList(ctx, jobstore.JobFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != n {
		t.Errorf("%d jobs stored, want %d", len(jobs), n)
	}
	if res, err := b.JobInsertMany(ctx, nil); err != nil || len(res) != 0 {
		t.Errorf("JobInsertMany(nil) = %v, %v; want no results, nil", res, err)
	}
}

// testInsertManyUnique: a key held by a live job, or by an earlier job of
// the batch, returns that job; a finished job's key does not block.
func testInsertManyUnique(t *testing.T, s jobstore.Store) {
	b := batchInserter(t, s)
	held := insert(t, s, "k", queue.EnqueueOptions{UniqueKey: "held"})
	done := insert(t, s, "k", queue.EnqueueOptions{UniqueKey: "done", Queue: "other"})
	c := claimOne(t, s, "other", t0)
	if err := s.JobTransition(ctx, jobstore.Transition{ID: c.ID, LeaseToken: c.LeaseToken, State: jobstore.StateSucceeded,
		Attempt: 1, FinishedAt: t0, Entry: entry(1, "success", "done", "success", t0)}); err != nil {
		t.Fatal(err)
	}
	keys := []string{"", "held", "new", "", "new", "done", "held"}
	ins := newInserts(t, len(keys), func(i int) queue.EnqueueOptions { return queue.EnqueueOptions{UniqueKey: keys[i]} })
	res, err := b.JobInsertMany(ctx, ins)
	if err != nil {
		t.Fatal(err)
	}
	wantInserted := []bool{true, false, true, true, false, true, false}
	for i, r := range res {
		if r.Inserted != wantInserted[i] {
			t.Errorf("item %d (key %q): inserted %v, want %v", i, keys[i], r.Inserted, wantInserted[i])
		}
	}
	if res[1].Job.ID != held.ID || res[6].Job.ID != held.ID {
		t.Errorf("held key: jobs %d and %d, want %d", res[1].Job.ID, res[6].Job.ID, held.ID)
	}
	if res[4].Job.ID != res[2].Job.ID {
		t.Errorf("second %q: job %d, want the batch's first %d", keys[4], res[4].Job.ID, res[2].Job.ID)
	}
	if res[5].Job.ID == done.ID {
		t.Errorf("a succeeded job's key blocked a new job")
	}
	// Concurrent batches with the same key make one job.
	var wg sync.WaitGroup
	got := make([]int64, 6)
	for i := range got {
		wg.Go(func() {
			in := newInserts(t, 3, func(j int) queue.EnqueueOptions {
				if j == 1 {
					return queue.EnqueueOptions{UniqueKey: "race"}
				}
				return queue.EnqueueOptions{}
			})
			r, err := b.JobInsertMany(ctx, in)
			if err != nil {
				t.Errorf("JobInsertMany: %v", err)
				return
			}
			got[i] = r[1].Job.ID
		})
	}
	wg.Wait()
	for _, id := range got {
		if id != got[0] {
			t.Fatalf("concurrent batches with one key made jobs %v", got)
		}
	}
}

// testInsertManyAtomic: a batch with an invalid job, or whose context
// ended, writes nothing.
func testInsertManyAtomic(t *testing.T, s jobstore.Store) {
	b := batchInserter(t, s)
	ins := newInserts(t, 1200, func(int) queue.EnqueueOptions { return queue.EnqueueOptions{} })
	ins[1100].Kind = ""
	_, err := b.JobInsertMany(ctx, ins)
	var ie *jobstore.ItemError
	if !errors.As(err, &ie) || ie.Index != 1100 || !errors.Is(err, jobstore.ErrInvalid) {
		t.Errorf("a batch with an empty kind at 1100: %v, want an ItemError for index 1100 matching ErrInvalid", err)
	}
	ins[1100].Kind = "k"
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := b.JobInsertMany(cctx, ins); !errors.Is(err, context.Canceled) {
		t.Errorf("JobInsertMany with a cancelled context: %v, want context.Canceled", err)
	}
	jobs, err := s.JobList(ctx, jobstore.JobFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 0 {
		t.Errorf("failed batches wrote %d jobs", len(jobs))
	}
}
