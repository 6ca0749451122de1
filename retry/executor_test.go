package retry_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heed-go/heed/retry"
	"github.com/heed-go/heed/retry/executortest"
)

// doExecutor runs the conformance cases through retry.Do, in virtual time.
type doExecutor struct{}

func (doExecutor) Durable() bool { return false }

func (doExecutor) Run(t *testing.T, c executortest.Case) []retry.Decision {
	var ds []retry.Decision
	synctest.Test(t, func(t *testing.T) {
		p := c.Policy(time.Now())
		p.Observe = func(_ context.Context, e retry.Event) { ds = append(ds, e.Decision) }
		ctx := context.Background()
		if c.Deadline > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, c.Deadline)
			defer cancel()
		}
		n := 0
		retry.Do(ctx, p, func(ctx context.Context) error {
			n++
			return executortest.Err(ctx, c.Step(n))
		})
	})
	return ds
}

func TestDoConformance(t *testing.T) { executortest.Run(t, doExecutor{}) }
