package sqlitestore_test

import (
	"context"
	"fmt"
	"time"

	"github.com/heed-go/heed/clock/clocktest"
	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/sqlitestore"
)

// A report every hour, on the hour. The worker starts at 09:30 (on a fake
// clock, for the example): it enqueues the 09:00 tick it missed, once, then
// each tick as the clock reaches it. Every worker it is registered on
// does the same, and each tick still makes one job.
func Example_periodic() {
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, ":memory:")
	if err != nil {
		panic(err)
	}
	defer st.Close()
	clk := clocktest.New(time.Date(2026, 3, 4, 9, 30, 0, 0, time.UTC))
	ran := make(chan struct{}) // a report's success is stored
	w, err := queue.NewWorker(st, queue.WorkerConfig{Clock: clk, PollInterval: time.Hour,
		Observe: func(ctx context.Context, e queue.Event) {
			if e.Kind == queue.EventSucceeded {
				ran <- struct{}{}
			}
		}})
	if err != nil {
		panic(err)
	}
	queue.Handle(w, "report", func(ctx context.Context, job *queue.Job, _ struct{}) error {
		fmt.Println("report for", job.AvailableAt.Format("15:04"), "key", job.UniqueKey)
		return nil
	})
	if err := w.Periodic(queue.PeriodicJob{Kind: "report", Schedule: queue.Every(time.Hour)}); err != nil {
		panic(err)
	}
	if err := w.Start(ctx); err != nil {
		panic(err)
	}
	<-ran
	clk.Set(time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC))
	<-ran
	clk.Set(time.Date(2026, 3, 4, 11, 0, 0, 0, time.UTC))
	<-ran
	if err := w.Shutdown(ctx); err != nil {
		panic(err)
	}
	// Output:
	// report for 09:00 key {"kind":"report","queue":"default","period":"2026-03-04T09:00:00Z"}
	// report for 10:00 key {"kind":"report","queue":"default","period":"2026-03-04T10:00:00Z"}
	// report for 11:00 key {"kind":"report","queue":"default","period":"2026-03-04T11:00:00Z"}
}
