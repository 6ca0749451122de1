package planreport_test

import (
	"os"
	"time"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/cmd/heed/internal/planreport"
	"github.com/heed-go/heed/retry"
)

func ExamplePlan_Write() {
	p := retry.Policy{Attempts: 3, Backoff: backoff.Schedule{Kind: backoff.Constant, Base: 100 * time.Millisecond, Jitter: backoff.NoJitter}}
	pl := planreport.Plan{Policy: p, AttemptTime: 10 * time.Millisecond}
	pl.Write(os.Stdout)
	// Output:
	// policy: 3 attempts; constant backoff of 100ms; no jitter
	//
	// ATTEMPT  DELAY  JITTER RANGE  TOTAL WAIT  ENDS BY
	// 1        0s     0s            0s          10ms
	// 2        100ms  100ms         100ms       120ms
	// 3        100ms  100ms         200ms       230ms
	//
	// ENDS BY is the worst case: the longest waits, each attempt taking 10ms (--attempt-time).
	// At worst all 3 attempts end within 230ms, 200ms of it waiting.
}
