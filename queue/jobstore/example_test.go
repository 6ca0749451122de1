package jobstore_test

import (
	"fmt"
	"time"

	"github.com/heed-go/heed/queue/jobstore"
	"github.com/heed-go/heed/retry"
)

// A history written one entry per deferral (by a worker before counts)
// read as workers now write it: the run as one entry with its count.
func ExampleCompactHistory() {
	at := time.Date(2026, 5, 4, 3, 2, 0, 0, time.UTC)
	deferral := func(s int) jobstore.Attempt {
		return jobstore.Attempt{Attempt: 2, StartedAt: at.Add(time.Duration(s) * time.Second), FinishedAt: at.Add(time.Duration(s) * time.Second),
			Outcome: jobstore.OutcomeDeferred, Action: retry.Defer.Key(), Reason: retry.ReasonBreakerOpen.Key(), Delay: 5 * time.Second}
	}
	h := []jobstore.Attempt{
		{Attempt: 1, StartedAt: at, FinishedAt: at, Outcome: "transient", Action: "retry", Reason: "transient", Delay: 2 * time.Second},
		deferral(3), deferral(8), deferral(13),
		{Attempt: 2, StartedAt: at.Add(18 * time.Second), FinishedAt: at.Add(19 * time.Second), Outcome: "success", Action: "done", Reason: "success"},
	}
	for _, e := range jobstore.CompactHistory(h) {
		fmt.Println(e)
	}
	// Output:
	// attempt 1: transient; retry in 2s
	// attempt 2: deferred 3 times since 2026-05-04T03:02:03Z; defer in 5s (breaker_open)
	// attempt 2: success; done
}
