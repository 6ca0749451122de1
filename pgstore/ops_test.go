package pgstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
)

// A job cancelled through one Store (another process, say heed jobs
// cancel) stops at once on a worker using another Store of the same
// database: the NOTIFY reaches it, long before its lease (an hour here)
// would be renewed.
func TestCancelAcrossStores(t *testing.T) {
	ctx := context.Background()
	_, u := testSchema(t)
	open := func() *Store {
		s, err := Open(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	workerStore, opStore := open(), open()
	events := make(chan queue.Event, 100)
	w, err := queue.NewWorker(workerStore, queue.WorkerConfig{Lease: time.Hour, PollInterval: 10 * time.Millisecond,
		Observe: func(_ context.Context, e queue.Event) { events <- e }})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	queue.Handle(w, "long", func(ctx context.Context, job *jobstore.Job, _ struct{}) error {
		close(started)
		<-ctx.Done()
		return context.Cause(ctx)
	})
	c := queue.NewClient(opStore, queue.ClientConfig{Operator: "ops"})
	j, _, err := c.Enqueue(ctx, "long", nil, queue.EnqueueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Shutdown(ctx)
	<-started
	if n, err := c.Cancel(ctx, jobstore.JobFilter{IDs: []int64{j.ID}}); err != nil || n != 1 {
		t.Fatalf("Cancel = %d, %v", n, err)
	}
	timeout := time.After(30 * time.Second) // a bound on failure
	for {
		select {
		case e := <-events:
			if e.Kind != queue.EventCancelled {
				continue
			}
			if !errors.Is(e.Err, queue.ErrCancelled) {
				t.Errorf("cancel event error %v", e.Err)
			}
			g, err := c.Job(ctx, j.ID)
			if err != nil || g.State != jobstore.StateCancelled || len(g.History) != 1 {
				t.Errorf("cancelled job: %+v, %v", g, err)
			}
			return
		case <-timeout:
			t.Fatal("the worker did not stop the cancelled job within 30 s")
		}
	}
}
