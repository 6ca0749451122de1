package pgstore

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
)

// TestWakeFromClosingClient: a producer that opens a store, enqueues one
// job and closes at once (heed jobs enqueue) still wakes an idle worker
// in another process: Close sends the pending NOTIFY instead of
// cancelling it. The worker polls once an hour, so a lost notification
// shows as a job that does not start.
func TestWakeFromClosingClient(t *testing.T) {
	t.Parallel()
	_, u := testSchema(t)
	ctx := t.Context()
	ws, err := Open(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	started := make(chan time.Time, 1)
	w, err := queue.NewWorker(ws, queue.WorkerConfig{PollInterval: time.Hour, RescueInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	queue.Handle(w, "wake", func(context.Context, *jobstore.Job, struct{}) error {
		started <- time.Now()
		return nil
	})
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Shutdown(context.Background())
	// (The worker's first poll, at Start, may find the first job; the
	// other 19 can only be started by their notification.)

	const n = 20
	var lat []time.Duration
	for i := range n {
		ps, err := Open(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := queue.NewClient(ps, queue.ClientConfig{}).Enqueue(ctx, "wake", struct{}{}, queue.EnqueueOptions{}); err != nil {
			t.Fatal(err)
		}
		enq := time.Now()
		ps.Close()
		select {
		case at := <-started:
			lat = append(lat, at.Sub(enq))
		case <-time.After(10 * time.Second):
			t.Fatalf("enqueue %d of %d from a client that closed at once woke no worker", i+1, n)
		}
	}
	slices.Sort(lat)
	if lat[n-1] > time.Second {
		t.Errorf("the slowest wake-up took %v, want well under a second (the worker polls hourly)", lat[n-1])
	}
	t.Logf("%d of %d enqueues woke the worker; enqueue-to-start latency: median %v, max %v",
		len(lat), n, lat[n/2], lat[n-1])
}
