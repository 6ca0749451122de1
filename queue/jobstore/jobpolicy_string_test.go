package jobstore_test

import (
	"fmt"
	"time"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/queue/jobstore"
)

func ExampleJobPolicy_String() {
	p := jobstore.JobPolicy{
		Backoff:        &backoff.Schedule{Kind: backoff.Linear, Base: time.Second, Cap: 5 * time.Second, Jitter: backoff.EqualJitter},
		TimeBudget:     time.Minute,
		AttemptTimeout: 2 * time.Second,
	}
	fmt.Println(p)
	fmt.Printf("%q\n", jobstore.JobPolicy{})
	// Output:
	// linear backoff from 1s capped at 5s (jitter: equal); time budget 1m0s; attempt timeout 2s
	// ""
}
