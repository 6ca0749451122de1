package heedriver_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/heed-go/heed/heedriver"
	"github.com/heed-go/heed/retry"
	"github.com/heed-go/heed/retry/executortest"
)

// riverExecutor runs the conformance cases as River jobs, in real time,
// each in a schema of its own.
type riverExecutor struct{}

func (riverExecutor) Durable() bool { return true }

func (riverExecutor) Run(t *testing.T, c executortest.Case) []retry.Decision {
	pool, schema := openSchema(t)
	ev := newEvents()
	p := c.Policy(time.Now())
	p.Observe = ev.observe
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
	case <-ev.final:
	case <-time.After(time.Minute):
		t.Fatalf("no final decision after a minute: %v", ev.decisions())
	}
	return heldBack(t, c, ev.decisions())
}

// heldBack returns ds as the suite expects them from a durable executor
// that holds a call back while its breaker is open. heed's queue leaves such
// a job unclaimed, so the case "breaker open" expects no decision before the
// probe's success; River claims every due job, so the adapter defers it
// instead, without running it. Those deferrals are checked here and left
// out of what the suite compares.
func heldBack(t *testing.T, c executortest.Case, ds []retry.Decision) []retry.Decision {
	if c.Name != "breaker open" {
		return ds
	}
	n := 0
	for n < len(ds) && ds[n].Action == retry.Defer && ds[n].Reason == retry.ReasonBreakerOpen {
		n++
	}
	if n == 0 {
		t.Errorf("decisions %v: want the open breaker to defer the job first", ds)
	}
	return ds[n:]
}

func TestConformance(t *testing.T) {
	openSchema(t) // skips without a database
	executortest.Run(t, riverExecutor{})
}
