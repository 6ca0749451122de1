package heedriver_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/heed-go/heed/heedriver"
	"github.com/heed-go/heed/internal/enginetest"
	"github.com/heed-go/heed/retry"
	"github.com/heed-go/heed/retry/executortest"
)

// riverExecutor runs the conformance cases as River jobs, in real time,
// each in a schema of its own.
type riverExecutor struct{}

func (riverExecutor) Durable() bool { return true }

func (riverExecutor) Run(t *testing.T, c executortest.Case) []retry.Decision {
	pool, schema := openSchema(t)
	ev := enginetest.NewEvents()
	p := c.Policy(time.Now())
	p.Observe = ev.Observe
	h, err := heedriver.New(p)
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64 // attempts the worker made: heed's attempt number
	client := newClient(t, pool, schema, h, func(ctx context.Context, job *river.Job[scriptArgs]) error {
		return executortest.Err(ctx, c.Step(int(n.Add(1))))
	}, nil)
	start(t, client)
	insert(t, client, 1)
	select {
	case <-ev.Final():
	case <-time.After(time.Minute):
		t.Fatalf("no final decision after a minute: %v", ev.Decisions())
	}
	return enginetest.HeldBack(t, c, ev.Decisions())
}

func TestConformance(t *testing.T) {
	openSchema(t) // skips without a database
	executortest.Run(t, riverExecutor{})
}
