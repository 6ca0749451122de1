package sqlitestore_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
	"github.com/heed-go/heed/sqlitestore"
)

// A job cancelled from another process (here another Store on the same
// file, which shares nothing in memory) stops its handler within a
// second, not at the next lease renewal (an hour here).
func TestCancelFromAnotherProcess(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "jobs.db")
	open := func() *sqlitestore.Store {
		s, err := sqlitestore.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	workerStore, otherStore := open(), open()
	w, err := queue.NewWorker(workerStore, queue.WorkerConfig{Lease: time.Hour, PollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	stopped := make(chan error, 1)
	queue.Handle(w, "long", func(ctx context.Context, job *jobstore.Job, _ struct{}) error {
		close(started)
		<-ctx.Done()
		stopped <- context.Cause(ctx)
		return ctx.Err()
	})
	other := queue.NewClient(otherStore, queue.ClientConfig{Operator: "ada"})
	j, _, err := other.Enqueue(ctx, "long", struct{}{}, queue.EnqueueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Shutdown(ctx)
	<-started
	at := time.Now()
	if n, err := other.Cancel(ctx, jobstore.JobFilter{IDs: []int64{j.ID}}); err != nil || n != 1 {
		t.Fatalf("Cancel = %d, %v", n, err)
	}
	select {
	case err := <-stopped:
		if !errors.Is(err, queue.ErrCancelled) {
			t.Errorf("the handler's context cause: %v, want ErrCancelled", err)
		}
		t.Logf("the handler stopped %v after the cancel in the other process", time.Since(at).Round(time.Millisecond))
	case <-time.After(10 * time.Second):
		t.Fatal("the handler did not stop within 10 s of a cancel from another process")
	}
}
