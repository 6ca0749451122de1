package heedriver_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/breaker"
	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/heedriver"
	"github.com/heed-go/heed/retry"
)

// A River client under a heed policy: the same Policy is the client's retry
// policy and a worker middleware. Jobs, workers and River UI stay as they
// are.
func Example() {
	b, _ := budget.New(budget.Config{})    // retries at most 10% of the jobs' attempts, more while they succeed
	br, _ := breaker.New(breaker.Config{}) // shared by every job that calls the same dependency
	h, err := heedriver.New(retry.Policy{
		Attempts:       10,
		Backoff:        backoff.Schedule{Base: 2 * time.Second, Cap: 5 * time.Minute},
		TimeBudget:     time.Hour,
		AttemptTimeout: time.Minute,
		Budget:         b,
		Breaker:        br,
	})
	if err != nil {
		panic(err)
	}
	config := &river.Config{
		RetryPolicy: h,
		Middleware:  []rivertype.Middleware{h},
		JobTimeout:  -1, // heed's AttemptTimeout limits each attempt
		// Queues, Workers, ... as before
	}
	fmt.Println(config.RetryPolicy == h)
	// Output: true
}

// How the middleware turns heed's decisions into River's: a transient
// error is retried at heed's time, a permanent one cancels the job, a
// server's pushback snoozes it, and an open breaker snoozes it without
// running the worker. (River calls Work itself; here it is called on job
// rows by hand to show the results.)
func ExamplePolicy_Work() {
	br, _ := breaker.New(breaker.Config{MinCalls: 2, Cooldown: 30 * time.Second})
	h, _ := heedriver.New(retry.Policy{
		Backoff: backoff.Schedule{Kind: backoff.Constant, Base: 2 * time.Second, Jitter: backoff.NoJitter},
		Breaker: br,
	})
	ctx := context.Background()
	job := func() *rivertype.JobRow { return &rivertype.JobRow{ID: 1, Attempt: 1, MaxAttempts: 25} }
	show := func(err error) {
		var cancel *river.JobCancelError
		var snooze *river.JobSnoozeError
		switch {
		case err == nil:
			fmt.Println("completed")
		case errors.As(err, &cancel):
			fmt.Println("river.JobCancel:", cancel.Unwrap())
		case errors.As(err, &snooze):
			fmt.Println("river.JobSnooze:", snooze.Duration.Round(time.Second))
		default:
			fmt.Println("retried by River:", err)
		}
	}
	ran := func(err error) func(context.Context) error {
		return func(context.Context) error { return err }
	}

	j := job()
	show(h.Work(ctx, j, ran(retry.Transient(errors.New("503 service unavailable")))))
	fmt.Println("next attempt in", h.NextRetry(j).Sub(time.Now()).Round(time.Second))
	show(h.Work(ctx, job(), ran(errors.New("invalid account number"))))
	show(h.Work(ctx, job(), ran(retry.After(45*time.Second, errors.New("429 too many requests")))))
	// Two failures in two calls (the permanent error says nothing about
	// the dependency): the breaker is open.
	show(h.Work(ctx, job(), func(context.Context) error { panic("not called") }))
	// Output:
	// retried by River: 503 service unavailable
	// next attempt in 2s
	// river.JobCancel: invalid account number
	// river.JobSnooze: 45s
	// river.JobSnooze: 30s
}
