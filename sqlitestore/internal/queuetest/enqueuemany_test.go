package queuetest

import (
	"context"
	"errors"
	"testing"

	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/sqlitestore"
)

// With a store that is not a BatchInserter (plainStore hides it),
// EnqueueMany inserts one job at a time.
func TestEnqueueManyFallback(t *testing.T) {
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var events int
	c := queue.NewClient(plainStore{st}, queue.ClientConfig{Observe: func(ctx context.Context, e queue.Event) { events++ }})
	res, err := c.EnqueueMany(ctx, []queue.EnqueueItem{
		{Kind: "a", Options: queue.EnqueueOptions{UniqueKey: "u"}},
		{Kind: "b", Args: []int{1}},
		{Kind: "a", Options: queue.EnqueueOptions{UniqueKey: "u"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 || !res[0].Inserted || !res[1].Inserted || res[2].Inserted || res[2].Job.ID != res[0].Job.ID {
		t.Fatalf("results %+v", res)
	}
	if events != 2 {
		t.Errorf("%d enqueued events, want 2", events)
	}
	_, err = c.EnqueueMany(ctx, []queue.EnqueueItem{{Kind: "a"}, {Kind: "a", Args: make(chan int)}})
	var ie *queue.ItemError
	if !errors.As(err, &ie) || ie.Index != 1 || !errors.Is(err, queue.ErrInvalid) {
		t.Errorf("args that do not marshal: %v, want an ItemError for index 1 matching ErrInvalid", err)
	}
	if jobs, _ := c.Jobs(ctx, queue.JobFilter{}); len(jobs) != 2 {
		t.Errorf("%d jobs stored, want 2 (the invalid batch wrote nothing)", len(jobs))
	}
}
