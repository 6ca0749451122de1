package storetest

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
	"github.com/heed-go/heed/retry"
	"github.com/heed-go/heed/retry/executortest"
)

// Executor returns the job queue over the stores open returns as an
// executor for the executor conformance suite (package
// retry/executortest): one job per case, run by a queue.Worker whose
// handler follows the case's script, its decisions read from the worker's
// events. Jobs are durable calls.
//
// With bubble, each case runs in a testing/synctest bubble (open is called
// inside it, and the store must start no goroutine that outlives its Close,
// which is called when the case ends), so
// backoff, cooldowns and budget windows pass in virtual time; a store that
// talks to a server over the network runs in real time instead (bubble
// false; the suite then takes some seconds).
func Executor(open func(t *testing.T) jobstore.Store, bubble bool) executortest.Executor {
	return &jobExecutor{open: open, bubble: bubble}
}

type jobExecutor struct {
	open   func(t *testing.T) jobstore.Store
	bubble bool
}

func (*jobExecutor) Durable() bool { return true }

func (x *jobExecutor) Run(t *testing.T, c executortest.Case) []retry.Decision {
	var ds []retry.Decision
	run := func(t *testing.T) {
		ctx := context.Background()
		s := x.open(t)
		var mu sync.Mutex
		final := make(chan struct{})
		w, err := queue.NewWorker(s, queue.WorkerConfig{
			Policy:       c.Policy(time.Now()),
			PollInterval: 10 * time.Millisecond,
			Observe: func(_ context.Context, e queue.Event) {
				switch e.Kind {
				case queue.EventRetried, queue.EventDeferred, queue.EventSucceeded, queue.EventDead:
				default:
					return
				}
				mu.Lock()
				ds = append(ds, e.Decision)
				mu.Unlock()
				if e.Kind == queue.EventSucceeded || e.Kind == queue.EventDead {
					close(final)
				}
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		queue.Handle(w, "scripted", func(ctx context.Context, job *jobstore.Job, _ struct{}) error {
			return executortest.Err(ctx, c.Step(job.Attempt))
		})
		if _, _, err := queue.NewClient(s, queue.ClientConfig{}).Enqueue(ctx, "scripted", struct{}{}, queue.EnqueueOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		<-final
		if err := w.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	if x.bubble {
		synctest.Test(t, run)
	} else {
		run(t)
	}
	return ds
}
