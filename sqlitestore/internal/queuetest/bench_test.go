package queuetest

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/sqlitestore"
)

// BenchmarkBurnDown drains b.N no-op jobs inserted beforehand with one
// worker (concurrency 50) over a SQLite file: jobs/s is 1e9 / ns/op.
func BenchmarkBurnDown(b *testing.B) {
	ctx := context.Background()
	s, err := sqlitestore.Open(ctx, filepath.Join(b.TempDir(), "heed.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	c := queue.NewClient(s, queue.ClientConfig{})
	for range b.N {
		if _, _, err := c.Enqueue(ctx, "noop", nil, queue.EnqueueOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	var n atomic.Int64
	done := make(chan struct{})
	w, _ := queue.NewWorker(s, queue.WorkerConfig{
		Queues:       map[string]int{queue.DefaultQueue: 50},
		PollInterval: 50 * time.Millisecond,
		Observe: func(ctx context.Context, e queue.Event) {
			if e.Kind == queue.EventSucceeded && n.Add(1) == int64(b.N) {
				close(done)
			}
		},
	})
	queue.Handle(w, "noop", func(ctx context.Context, job *queue.Job, _ struct{}) error { return nil })
	b.ReportAllocs()
	b.ResetTimer()
	if err := w.Start(ctx); err != nil {
		b.Fatal(err)
	}
	<-done
	b.StopTimer()
	if err := w.Shutdown(ctx); err != nil {
		b.Fatal(err)
	}
}
