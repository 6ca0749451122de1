package queue_test

import (
	"fmt"

	"github.com/heed-go/heed/queue"
)

// A zero field of WorkerConfig means its default; WithDefaults says which
// values a worker will use, here for a config that sets only its
// concurrency.
func ExampleWorkerConfig_WithDefaults() {
	cfg := queue.WorkerConfig{Queues: map[string]int{queue.DefaultQueue: 10}}.WithDefaults()
	fmt.Println("concurrency:", cfg.Queues[queue.DefaultQueue])
	fmt.Println("attempts:", cfg.Policy.Attempts)
	fmt.Println("backoff:", cfg.Policy.Backoff.Base, "to", cfg.Policy.Backoff.Cap)
	fmt.Println("time budget:", cfg.Policy.TimeBudget, "attempt timeout:", cfg.Policy.AttemptTimeout)
	fmt.Println("lease:", cfg.Lease, "poll:", cfg.PollInterval)
	fmt.Println("keep dead jobs:", cfg.RetainDead)
	// Output:
	// concurrency: 10
	// attempts: 10
	// backoff: 2s to 5m0s
	// time budget: 24h0m0s attempt timeout: 1m0s
	// lease: 30s poll: 1s
	// keep dead jobs: 720h0m0s
}
