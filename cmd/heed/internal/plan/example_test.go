package plan_test

import (
	"fmt"
	"time"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/cmd/heed/internal/plan"
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

// Review a plan before deploying it (heed plan deadline prints this): each step's budget against its p99,
// whether its retries fit, and the time left when it starts at worst.
func ExampleCheck() {
	r, err := plan.Check(checkoutPlan)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("budgets %v of %v available, ok: %v\n", r.Total, r.Available, r.OK())
	for _, s := range r.Steps {
		fmt.Printf("%-8s %4.1f× p99, needs %v, holds: %v, left at worst: %v\n",
			s.Name, s.Multiple, s.Need, s.Holds, s.Left)
	}

	// The same plan with a 30s client timeout on payment and a stock budget
	// too small for its retry.
	bad := checkoutPlan
	bad.Steps = append([]deadline.PlanStep(nil), checkoutPlan.Steps...)
	bad.Steps[1].Budget = 250 * time.Millisecond
	bad.Steps[2].AttemptTimeout = 30 * time.Second
	r, _ = plan.Check(bad)
	for _, p := range r.Problems {
		fmt.Printf("%s: %s\n", p.Code, p.Message)
	}
	// Output:
	// budgets 1.57s of 1.9s available, ok: true
	// validate  4.0× p99, needs 5ms, holds: true, left at worst: 1.9s
	// stock     3.3× p99, needs 340ms, holds: true, left at worst: 1.88s
	// payment   2.2× p99, needs 400ms, holds: true, left at worst: 1.48s
	// save      3.8× p99, needs 90ms, holds: true, left at worst: 580ms
	// receipt   3.3× p99, needs 30ms, holds: true, left at worst: 430ms
	// retry-does-not-fit: "stock": cannot retry inside its budget: 2 attempts need 340ms at p99 with worst-case backoff, budget 250ms holds only the first
	// timeout-above-upstream: "payment": downstream timeout 30s is longer than the 900ms upstream gives it (its budget): work goes on after the caller gave up
}
