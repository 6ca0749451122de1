package heedasynq_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/heed-go/heed/heedasynq"
	"github.com/heed-go/heed/internal/enginetest"
	"github.com/heed-go/heed/retry"
	"github.com/heed-go/heed/retry/executortest"
)

// asynqExecutor runs the conformance cases as asynq tasks, in real time,
// each on a queue of its own.
type asynqExecutor struct{}

func (asynqExecutor) Durable() bool { return true }

func (asynqExecutor) Run(t *testing.T, c executortest.Case) []retry.Decision {
	opt, q := openQueue(t)
	ev := enginetest.NewEvents()
	p := c.Policy(time.Now())
	p.Observe = ev.Observe
	h, err := heedasynq.New(p, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	var n atomic.Int64 // attempts the handler made: heed's attempt number
	serve(t, opt, q, h, func(ctx context.Context, _ *asynq.Task) error {
		return executortest.Err(ctx, c.Step(int(n.Add(1))))
	}, 1)
	enqueue(t, opt, q, 1)
	select {
	case <-ev.Final():
	case <-time.After(time.Minute):
		t.Fatalf("no final decision after a minute: %v", ev.Decisions())
	}
	return enginetest.HeldBack(t, c, ev.Decisions())
}

func TestConformance(t *testing.T) {
	openQueue(t) // skips without Redis
	executortest.Run(t, asynqExecutor{})
}
