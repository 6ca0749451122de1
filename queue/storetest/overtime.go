package storetest

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/retry"
	"github.com/heed-go/heed/retry/overtimetest"
)

// OverTime returns the job queue over the stores open returns as an
// executor of the over-time conformance suite (package
// retry/overtimetest), each scenario in a testing/synctest bubble (open is
// called inside it; see [Executor]). A user is a job enqueued at the
// user's instant, served when it succeeds within the user's deadline; the
// job goes on after it, as jobs do, and its later attempts count in the
// load. The worker runs at its defaults but for the dependency's default
// retry budget (the queue's zero policy has none, and a budget is what the
// load bounds are about).
func OverTime(open func(t *testing.T) queue.Store) overtimetest.Executor {
	return overtimetest.Calls(func(t *testing.T, dep *overtimetest.Dependency) overtimetest.Client {
		ctx := context.Background()
		s := open(t)
		b, err := budget.New(budget.Config{})
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		waiting := map[int]chan bool{} // by user
		w, err := queue.NewWorker(s, queue.WorkerConfig{
			Policy: retry.Policy{Budget: b},
			Observe: func(_ context.Context, e queue.Event) {
				if e.Kind != queue.EventSucceeded && e.Kind != queue.EventDead {
					return
				}
				var a overTimeArgs
				if err := json.Unmarshal(e.Job.Args, &a); err != nil {
					panic(err)
				}
				mu.Lock()
				ch := waiting[a.User]
				delete(waiting, a.User)
				mu.Unlock()
				if ch != nil {
					ch <- e.Kind == queue.EventSucceeded
				}
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		queue.Handle(w, "overtime", func(ctx context.Context, _ *queue.Job, a overTimeArgs) error {
			return overtimetest.Err(ctx, dep.Attempt(ctx, a.User))
		})
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := w.Shutdown(ctx); err != nil {
				t.Error(err)
			}
			s.Close()
		})
		c := queue.NewClient(s, queue.ClientConfig{})
		return func(ctx context.Context, user int) bool {
			ch := make(chan bool, 1)
			mu.Lock()
			waiting[user] = ch
			mu.Unlock()
			if _, _, err := c.Enqueue(context.Background(), "overtime", overTimeArgs{User: user}, queue.EnqueueOptions{}); err != nil {
				t.Error(err)
				return false
			}
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), DurableWait)
			defer cancel()
			select {
			case ok := <-ch:
				return ok
			case <-ctx.Done():
				return false
			}
		}
	})
}

// DurableWait is how long a user of [OverTime] waits for its job.
const DurableWait = time.Minute

type overTimeArgs struct {
	User int `json:"user"`
}
