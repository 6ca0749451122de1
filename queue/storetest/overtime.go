package storetest

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
	"github.com/heed-go/heed/retry"
	"github.com/heed-go/heed/retry/overtimetest"
)

// OverTime returns the job queue over the stores open returns as an
// executor of the over-time conformance suite (package
// retry/overtimetest), each scenario in a testing/synctest bubble. A user
// is a job enqueued at the user's instant, served when it succeeds within
// [DurableWait]; the job goes on after it, as jobs do, and its later
// attempts count in the load. The worker runs at its defaults but for the
// dependency's default retry budget (the queue's zero policy has none, and
// a budget is what the load bounds are about).
//
// Without remote, open is called inside the bubble, and the store must
// start no goroutine that outlives its Close (see [Executor]). With
// remote, for a store that talks to a server over the network
// (PostgreSQL), open is called outside the bubble, and the worker in the
// bubble reaches the store through goroutines outside it: the bubble's
// clock stands still while a call is under way, so a store call takes no
// virtual time, as over SQLite; the store's own notifications are
// replaced by wake-ups in the bubble for the jobs inserted and made due
// through it. Each scenario gets a store of its own; it is closed when
// the scenario ends.
func OverTime(open func(t *testing.T) jobstore.Store, remote bool) overtimetest.Executor {
	return overTime{open, remote}
}

type overTime struct {
	open   func(t *testing.T) jobstore.Store
	remote bool
}

func (x overTime) Run(t *testing.T, sc overtimetest.Scenario) overtimetest.Trace {
	open := x.open
	if x.remote {
		s := x.open(t)
		r := newRemote(s)
		defer func() {
			r.stop()
			s.Close()
		}()
		open = func(*testing.T) jobstore.Store { return r.store() }
	}
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
		queue.Handle(w, "overtime", func(ctx context.Context, _ *jobstore.Job, a overTimeArgs) error {
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
	}).Run(t, sc)
}

// DurableWait is how long a user of [OverTime] waits for its job.
const DurableWait = time.Minute

type overTimeArgs struct {
	User int `json:"user"`
}

// OverTimeSlow returns, for overtimetest.Skip, the outage offsets of the
// over-time suite that a store whose outages take seconds of real time
// each leaves out, with why: all but +0s and +485ms (the executors
// without a store run all ten). The recovery runs.
func OverTimeSlow(why string) map[string]string {
	skip := map[string]string{}
	for _, s := range overtimetest.Scenarios() {
		if strings.HasPrefix(s.Name, "outage") && s.Name != "outage at +0s" && s.Name != "outage at +485ms" {
			skip[s.Name] = why + "; offsets +0s and +485ms run"
		}
	}
	return skip
}
