package deadline_test

import (
	"context"
	"fmt"
	"time"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/deadline"
)

// checkoutPlan is a checkout request's plan: 2s at the edge, 100ms kept for
// the response, and five steps with their normal p99 and their budgets.
var checkoutPlan = deadline.Plan{
	Deadline: 2 * time.Second,
	Reserve:  100 * time.Millisecond,
	Steps: []deadline.PlanStep{
		{Name: "validate", P99: 5 * time.Millisecond, Budget: 20 * time.Millisecond},
		// Two attempts with heed's default backoff: 2 × 120ms + up to 100ms.
		{Name: "stock", P99: 120 * time.Millisecond, Budget: 400 * time.Millisecond, Attempts: 2},
		{Name: "payment", P99: 400 * time.Millisecond, Budget: 900 * time.Millisecond},
		{Name: "save", P99: 40 * time.Millisecond, Budget: 150 * time.Millisecond, Attempts: 2,
			Backoff: backoff.Schedule{Kind: backoff.Constant, Base: 10 * time.Millisecond}},
		{Name: "receipt", P99: 30 * time.Millisecond, Budget: 100 * time.Millisecond},
	},
}

// Run the checkout under the plan: each step gets min(its budget, the time
// left minus the reserve), and a step that cannot fit is refused instead of
// started. The steps are simulated on a virtual clock, so the output is
// exact.
func ExamplePlan_StepAt() {
	run := func(title string, left time.Duration, took map[string]time.Duration) {
		fmt.Println(title)
		// Virtual instants an hour ahead, so that no real timer fires
		// while the example runs.
		now := time.Now().Add(time.Hour)
		req, cancel := context.WithDeadline(context.Background(), now.Add(left))
		defer cancel()
		var failed error
		for _, s := range checkoutPlan.Steps {
			if failed != nil {
				fmt.Printf("  %-8s not started: the request has failed\n", s.Name)
				continue
			}
			ctx, stepCancel, err := checkoutPlan.StepAt(req, s.Name, now)
			if err != nil {
				fmt.Printf("  %-8s %v\n", s.Name, err)
				failed = err // errors.Is(err, deadline.ErrTooClose)
				continue
			}
			dl, _ := ctx.Deadline()
			end, result := now.Add(took[s.Name]), "done"
			if end.After(dl) {
				end, result = dl, "cut off by its context"
				failed = context.DeadlineExceeded
			}
			fmt.Printf("  %-8s given %v, %s after %v\n", s.Name, dl.Sub(now), result, end.Sub(now))
			now = end
			stepCancel()
		}
	}

	healthy := map[string]time.Duration{
		"validate": 2 * time.Millisecond, "stock": 90 * time.Millisecond,
		"payment": 300 * time.Millisecond, "save": 25 * time.Millisecond, "receipt": 20 * time.Millisecond,
	}
	run("healthy, the whole 2s deadline:", checkoutPlan.Deadline, healthy)

	// The caller had already spent most of its own deadline: its
	// Timeout-Remaining header says 1050ms. Payment is slow today (850ms,
	// its p99 is 400ms), so save cannot fit and is refused, not started.
	left := 1050 * time.Millisecond
	slow := map[string]time.Duration{
		"validate": 2 * time.Millisecond, "stock": 90 * time.Millisecond,
		"payment": 850 * time.Millisecond, "save": 25 * time.Millisecond, "receipt": 20 * time.Millisecond,
	}
	run("slow payment, 1050ms left on arrival:", left, slow)

	// Payment hangs: its budget cuts it off at 900ms, so the request fails
	// in under a second instead of waiting on a 30s client default.
	slow["payment"] = time.Minute
	run("payment hangs:", checkoutPlan.Deadline, slow)
	// Output:
	// healthy, the whole 2s deadline:
	//   validate given 20ms, done after 2ms
	//   stock    given 400ms, done after 90ms
	//   payment  given 900ms, done after 300ms
	//   save     given 150ms, done after 25ms
	//   receipt  given 100ms, done after 20ms
	// slow payment, 1050ms left on arrival:
	//   validate given 20ms, done after 2ms
	//   stock    given 400ms, done after 90ms
	//   payment  given 858ms, done after 850ms
	//   save     deadline: step "save" refused: 108ms left, needs 140ms (p99 40ms + reserve 100ms)
	//   receipt  not started: the request has failed
	// payment hangs:
	//   validate given 20ms, done after 2ms
	//   stock    given 400ms, done after 90ms
	//   payment  given 900ms, cut off by its context after 900ms
	//   save     not started: the request has failed
	//   receipt  not started: the request has failed
}
