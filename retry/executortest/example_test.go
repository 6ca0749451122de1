package executortest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/heed-go/heed/retry"
	"github.com/heed-go/heed/retry/executortest"
)

// The cases every executor of a retry.Policy must pass, and what an
// attempt of a step returns for executors whose attempts are functions.
func ExampleCases() {
	for _, c := range executortest.Cases() {
		fmt.Println(c.Name)
	}
	fmt.Println(executortest.Err(context.Background(), executortest.Step{Kind: executortest.Permanent}))
	// Output:
	// success
	// transient twice
	// transient until attempts run out
	// permanent
	// timeout
	// pushback below the cap
	// pushback above the cap
	// breaker open
	// budget empty
	// time budget too close
	// deadline too close
	// scripted: 400 bad request
}

// myExecutor would run each case's call in its own terms; see retry's,
// retryhttp's, queue/storetest's and sim's conformance tests for real ones.
type myExecutor struct{}

func (myExecutor) Durable() bool { return false }

func (myExecutor) Run(t *testing.T, c executortest.Case) []retry.Decision {
	var ds []retry.Decision
	p := c.Policy(time.Now())
	p.Observe = func(_ context.Context, e retry.Event) { ds = append(ds, e.Decision) }
	// ... make the call, attempt n doing c.Step(n) ...
	return ds
}

// A new executor passes the suite in its own test, as
//
//	func TestConformance(t *testing.T) { executortest.Run(t, myExecutor{}) }
//
// (compiled, not run: it needs a *testing.T).
func ExampleRun() {
	var ex executortest.Executor = myExecutor{}
	_ = ex
}
