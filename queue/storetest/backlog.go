package storetest

import (
	"context"
	"errors"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
	"github.com/heed-go/heed/retry"
)

// RunBudgetBacklog is a recovery over time, in real time (about 17 s): 500
// jobs on s, an empty store, under a worker with the job defaults and a
// default retry budget, while their dependency fails every call for 15 s
// and then heals, with no new jobs. The budget refuses most retries
// during the outage (the jobs are deferred, not dead), and after the heal
// the backlog, whose retries now succeed, must drain: at least 95% of the
// jobs done within 15 s of the heal. (With the budget's window of ratio
// and floor, 0 to 5 of them were, in 45 s.) Skipped with -short.
func RunBudgetBacklog(t *testing.T, s jobstore.Store) {
	if testing.Short() {
		t.Skip("runs a 15 s outage and its recovery in real time")
	}
	ctx := context.Background()
	c := queue.NewClient(s, queue.ClientConfig{})
	items := make([]queue.EnqueueItem, 500)
	for i := range items {
		items[i] = queue.EnqueueItem{Kind: "backlog", Args: map[string]int{"i": i}}
	}
	if _, err := c.EnqueueMany(ctx, items); err != nil {
		t.Fatal(err)
	}
	b, err := budget.New(budget.Config{})
	if err != nil {
		t.Fatal(err)
	}
	heal := time.Now().Add(15 * time.Second)
	w, err := queue.NewWorker(s, queue.WorkerConfig{ID: "backlog", Policy: retry.Policy{Budget: b}})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var done []time.Duration // after the heal
	queue.Handle(w, "backlog", func(context.Context, *jobstore.Job, map[string]int) error {
		if time.Now().Before(heal) {
			return retry.Transient(errors.New("503 Service Unavailable"))
		}
		mu.Lock()
		done = append(done, time.Since(heal))
		mu.Unlock()
		return nil
	})
	rctx, cancel := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- w.Run(rctx) }()
	deadline := heal.Add(15 * time.Second)
	for time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		mu.Lock()
		n := len(done)
		mu.Unlock()
		if n == len(items) {
			break
		}
	}
	cancel()
	if err := <-ran; err != nil && !errors.Is(err, context.Canceled) {
		t.Error(err)
	}
	mu.Lock()
	defer mu.Unlock()
	sort.Slice(done, func(i, j int) bool { return done[i] < done[j] })
	in15 := sort.Search(len(done), func(i int) bool { return done[i] > 15*time.Second })
	t.Logf("%d of %d jobs done within 15 s of the heal (the 95th %v after it); budget window %+v",
		in15, len(items), nth(done, len(items)*95/100), b.Stats())
	if in15 < len(items)*95/100 {
		t.Errorf("%d of %d jobs done within 15 s of the heal, want at least 95%%", in15, len(items))
	}
}

// nth returns ds[n-1], or -1 when there are fewer.
func nth(ds []time.Duration, n int) time.Duration {
	if len(ds) < n {
		return -1
	}
	return ds[n-1]
}
