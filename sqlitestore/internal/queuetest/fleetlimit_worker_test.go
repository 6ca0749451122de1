package queuetest

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
)

// TestWorkerGlobalLimit: two workers that may each run 5 jobs of a queue
// whose global limit is 2 run at most 2 at once between them, and claim
// again as their own jobs end (their poll is an hour: without that, the
// queue would stall at its first two jobs); a plain store (no
// HeldClaimer) holds the limit too.
func TestWorkerGlobalLimit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		plain bool
	}{{"held claims", false}, {"plain store", true}} {
		t.Run(tc.name, func(t *testing.T) {
			s := openStore(t)
			c := queue.NewClient(s, queue.ClientConfig{})
			if err := c.SetLimit(ctx, "api", queue.Limit{Concurrency: 2}); err != nil {
				t.Fatal(err)
			}
			var cur, peak atomic.Int32
			var store jobstore.Store = s
			cfg := fastConfig()
			cfg.Queues = map[string]int{"api": 5}
			if tc.plain {
				store = plainStore{s}
			} else {
				cfg.PollInterval = time.Hour
			}
			for _, id := range []string{"w1", "w2"} {
				cfg.ID = id
				w := newWorker(t, store, cfg)
				queue.Handle(w, "call", func(ctx context.Context, job *queue.Job, _ msg) error {
					v := cur.Add(1)
					for p := peak.Load(); v > p && !peak.CompareAndSwap(p, v); p = peak.Load() {
					}
					time.Sleep(5 * time.Millisecond)
					cur.Add(-1)
					return nil
				})
				start(t, w)
			}
			var ids []int64
			for range 12 {
				ids = append(ids, enqueue(t, c, "call", nil, queue.EnqueueOptions{Queue: "api"}).ID)
			}
			for _, j := range waitFinal(t, s, ids...) {
				if j.State != queue.StateSucceeded || len(j.History) != 1 {
					t.Errorf("job %d: %s, history %s", j.ID, j.State, outcomes(j))
				}
			}
			if p := peak.Load(); p > 2 || p < 1 {
				t.Errorf("peaked at %d running under a global limit of 2", p)
			}
		})
	}
}
