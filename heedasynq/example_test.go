package heedasynq_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/breaker"
	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/heedasynq"
	"github.com/heed-go/heed/retry"
)

// An asynq server under a heed policy: the Policy gives the server its
// RetryDelayFunc and IsFailure, and the handlers a middleware. Tasks,
// handlers and asynqmon stay as they are.
func Example() {
	redis := asynq.RedisClientOpt{Addr: "127.0.0.1:6379"}
	b, _ := budget.New(budget.Config{})    // retries at most 10% of the tasks' attempts, more while they succeed
	br, _ := breaker.New(breaker.Config{}) // shared by every task that calls the same dependency
	h, err := heedasynq.New(retry.Policy{
		Attempts:       10,
		Backoff:        backoff.Schedule{Base: 2 * time.Second, Cap: 5 * time.Minute},
		TimeBudget:     time.Hour,
		AttemptTimeout: time.Minute,
		Budget:         b,
		Breaker:        br,
	}, redis)
	if err != nil {
		panic(err)
	}
	defer h.Close()
	srv := asynq.NewServer(redis, asynq.Config{
		RetryDelayFunc: h.RetryDelay,
		IsFailure:      h.IsFailure,
		// Queues, Concurrency, ... as before
	})
	mux := asynq.NewServeMux()
	mux.Use(h.Middleware)
	// mux.HandleFunc(...) as before; then srv.Run(mux)
	_ = srv
	fmt.Println("ready")
	// Output: ready
}

// How the middleware turns heed's decisions into asynq's: a transient
// error is retried after heed's wait (rounded up to asynq's whole seconds),
// a permanent one is archived at once (asynq.SkipRetry), and an open
// breaker puts the task back without running the handler and without
// counting a retry. (asynq calls the handler itself; here it is called by
// hand to show the results.)
func ExamplePolicy_Middleware() {
	br, _ := breaker.New(breaker.Config{MinCalls: 2, Cooldown: 30 * time.Second})
	h, _ := heedasynq.New(retry.Policy{
		Backoff: backoff.Schedule{Kind: backoff.Constant, Base: 2 * time.Second, Jitter: backoff.NoJitter},
		Breaker: br,
	}, nil)
	ctx := context.Background()
	task := asynq.NewTask("email:welcome", nil)
	run := func(err error) error {
		return h.Middleware(asynq.HandlerFunc(func(context.Context, *asynq.Task) error { return err })).ProcessTask(ctx, task)
	}
	show := func(err error) {
		switch {
		case err == nil:
			fmt.Println("completed")
		case errors.Is(err, asynq.SkipRetry):
			fmt.Println("archived:", err)
		default:
			// RetryDelay is heed's wait up to the next whole second.
			d := h.RetryDelay(0, err, task)
			fmt.Printf("retried in %v+ (counted: %v): %v\n", d.Truncate(time.Second), h.IsFailure(err), err)
		}
	}

	show(run(retry.Transient(errors.New("503 service unavailable"))))
	show(run(errors.New("invalid address")))
	show(run(retry.After(45*time.Second, errors.New("429 too many requests"))))
	// Two failures in two calls (the permanent error says nothing about
	// the dependency): the breaker is open.
	err := run(nil)
	fmt.Println("counted:", h.IsFailure(err))
	// Output:
	// retried in 2s+ (counted: true): 503 service unavailable (heed: retry in 2s, transient)
	// archived: invalid address (heed: give_up, permanent)
	// retried in 45s+ (counted: true): 429 too many requests (heed: retry in 45s, pushback)
	// counted: false
}
