package queue_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/sqlitestore"
)

// Three jobs in one transaction; the third's key is held by the first, so
// it returns that job.
func ExampleClient_EnqueueMany() {
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, ":memory:")
	if err != nil {
		panic(err)
	}
	defer st.Close()
	c := queue.NewClient(st, queue.ClientConfig{})
	res, err := c.EnqueueMany(ctx, []queue.EnqueueItem{
		{Kind: "email", Args: Greeting{Name: "Ada"}, Options: queue.EnqueueOptions{UniqueKey: "welcome-ada"}},
		{Kind: "email", Args: Greeting{Name: "Grace"}},
		{Kind: "email", Args: Greeting{Name: "Ada"}, Options: queue.EnqueueOptions{UniqueKey: "welcome-ada"}},
	})
	if err != nil {
		panic(err)
	}
	for _, r := range res {
		fmt.Println("job", r.Job.ID, string(r.Job.Args), "inserted:", r.Inserted)
	}
	_, err = c.EnqueueMany(ctx, []queue.EnqueueItem{{Kind: "email"}, {Kind: ""}})
	fmt.Println(err)
	// Output:
	// job 1 {"name":"Ada"} inserted: true
	// job 2 {"name":"Grace"} inserted: true
	// job 1 {"name":"Ada"} inserted: false
	// queue: item 1: kind is empty
}

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
