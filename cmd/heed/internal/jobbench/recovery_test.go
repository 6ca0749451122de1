package jobbench_test

// A measurement of queue over both stores; it lives in the command's module,
// the one that requires both.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/pgstore"
	"github.com/heed-go/heed/pgstore/pgstoretest"
	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
	"github.com/heed-go/heed/retry"
	"github.com/heed-go/heed/sqlitestore"
)

// TestMeasureBacklogRecovery measures, in real time, how a durable backlog
// drains once its dependency recovers: 500 jobs, the dependency down for
// 15 s from the start then healthy, no new jobs, a worker with the default
// policy and a default retry budget. It reports how many jobs succeeded
// within 15 s and 45 s of the recovery, and how the others spent the time
// (attempts, deferrals). It takes a minute per store, so it runs only with
// HEED_MEASURE=1 (PostgreSQL also needs HEED_TEST_POSTGRES_URL):
//
//	HEED_MEASURE=1 go test -run MeasureBacklogRecovery -v ./cmd/heed/internal/jobbench
func TestMeasureBacklogRecovery(t *testing.T) {
	if os.Getenv("HEED_MEASURE") == "" {
		t.Skip("a measurement of a minute per store: set HEED_MEASURE=1")
	}
	t.Run("sqlite", func(t *testing.T) {
		s, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "jobs.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		measureRecovery(t, s)
	})
	t.Run("postgres", func(t *testing.T) {
		_, u := pgstoretest.Schema(t)
		s, err := pgstore.Open(context.Background(), u)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		measureRecovery(t, s)
	})
}

func measureRecovery(t *testing.T, s jobstore.Store) {
	const (
		jobs  = 500
		down  = 15 * time.Second
		after = 45 * time.Second
	)
	ctx := context.Background()
	b, err := budget.New(budget.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu        sync.Mutex
		succeeded []time.Duration // after the recovery
		attempts  int
		deferred  int
	)
	start := time.Now()
	healthy := start.Add(down)
	w, err := queue.NewWorker(s, queue.WorkerConfig{
		Policy: retry.Policy{Budget: b},
		Observe: func(_ context.Context, e queue.Event) {
			mu.Lock()
			defer mu.Unlock()
			switch e.Kind {
			case queue.EventStarted:
				attempts++
			case queue.EventDeferred:
				deferred++
			case queue.EventSucceeded:
				succeeded = append(succeeded, time.Since(healthy))
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	queue.Handle(w, "dep", func(ctx context.Context, job *queue.Job, _ struct{}) error {
		if time.Now().Before(healthy) {
			return retry.Transient(errors.New("dependency down"))
		}
		return nil
	})
	items := make([]queue.EnqueueItem, jobs)
	for i := range items {
		items[i] = queue.EnqueueItem{Kind: "dep", Args: struct{}{}}
	}
	if _, err := queue.NewClient(s, queue.ClientConfig{}).EnqueueMany(ctx, items); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	report := func(label string) {
		mu.Lock()
		defer mu.Unlock()
		sort.Slice(succeeded, func(i, j int) bool { return succeeded[i] < succeeded[j] })
		in15 := sort.Search(len(succeeded), func(i int) bool { return succeeded[i] > 15*time.Second })
		t.Logf("%s: %d of %d succeeded within 15 s of the recovery (%.1f%%), %d in all; %d attempts started, %d deferrals; budget %+v",
			label, in15, jobs, 100*float64(in15)/jobs, len(succeeded), attempts, deferred, b.Stats())
	}
	time.Sleep(down)
	report("at the recovery")
	time.Sleep(15 * time.Second)
	report("15 s after")
	time.Sleep(after - 15*time.Second)
	report(fmt.Sprintf("%v after", after))
	if err := w.Shutdown(ctx); err != nil {
		t.Error(err)
	}
	mu.Lock()
	defer mu.Unlock()
	sort.Slice(succeeded, func(i, j int) bool { return succeeded[i] < succeeded[j] })
	in15 := sort.Search(len(succeeded), func(i int) bool { return succeeded[i] > 15*time.Second })
	if in15 < jobs*95/100 {
		t.Errorf("%d of %d jobs succeeded within 15 s of the recovery, want at least 95%%", in15, jobs)
	}
}
