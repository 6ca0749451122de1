// Command example runs asynq tasks under a heed policy: an asynq server as
// you have it today, with heed's middleware, RetryDelayFunc and IsFailure
// added. It needs a Redis; it uses a queue of its own (heedasynq_example):
//
//	REDIS_URL=redis://127.0.0.1:6379/0 go run ./example
//
// Five webhook tasks are sent to a flaky receiver (it answers 503 to every
// other call); one has a malformed URL. It prints what became of each task
// and heed's record of why.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/breaker"
	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/heedasynq"
	"github.com/heed-go/heed/retry"
)

// queue is the example's queue.
const queue = "heedasynq_example"

// sendWebhook is an asynq handler, as you have them today. It says which
// failures may pass (retry.Transient, retry.After for a 429's
// Retry-After); anything else is not retried.
func sendWebhook(ctx context.Context, t *asynq.Task) error {
	u := string(t.Payload())
	if _, err := url.ParseRequestURI(u); err != nil {
		return retry.Permanent(fmt.Errorf("bad webhook URL: %w", err))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err // a refused or reset connection is transient by default
	}
	resp.Body.Close()
	if resp.StatusCode >= 500 {
		return retry.Transient(fmt.Errorf("webhook answered %s", resp.Status))
	}
	return nil
}

func main() {
	if err := run(context.Background(), os.Getenv("REDIS_URL"), queue, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "example:", err)
		os.Exit(1)
	}
}

// run runs the example on queue (its test gives each run a queue of its
// own).
func run(ctx context.Context, redisURL, queue string, out io.Writer) error {
	if redisURL == "" {
		return errors.New("set REDIS_URL to a Redis, such as redis://127.0.0.1:6379/0")
	}
	redis, err := asynq.ParseRedisURI(redisURL)
	if err != nil {
		return err
	}

	var calls atomic.Int64
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if calls.Add(1)%2 == 1 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
		}
	}))
	defer receiver.Close()

	// The heed part: one policy for the server and the handlers.
	b, _ := budget.New(budget.Config{MinPerSecond: 1}) // 9% of the attempts, and at least 1 retry a second
	br, _ := breaker.New(breaker.Config{})
	h, err := heedasynq.New(retry.Policy{
		Attempts:       5,
		Backoff:        backoff.Schedule{Base: 200 * time.Millisecond, Cap: 2 * time.Second},
		TimeBudget:     time.Minute,
		AttemptTimeout: 5 * time.Second,
		Budget:         b,
		Breaker:        br,
	}, redis)
	if err != nil {
		return err
	}
	defer h.Close()

	client := asynq.NewClient(redis)
	defer client.Close()
	var ids []string
	for _, u := range []string{receiver.URL, receiver.URL, receiver.URL, receiver.URL, "not a url"} {
		info, err := client.Enqueue(asynq.NewTask("webhook", []byte(u)), asynq.Queue(queue), asynq.Retention(time.Hour))
		if err != nil {
			return err
		}
		ids = append(ids, info.ID)
	}

	srv := asynq.NewServer(redis, asynq.Config{
		Queues:                   map[string]int{queue: 1},
		RetryDelayFunc:           h.RetryDelay, // heed
		IsFailure:                h.IsFailure,  // heed
		DelayedTaskCheckInterval: time.Second,
		LogLevel:                 asynq.FatalLevel,
	})
	mux := asynq.NewServeMux()
	mux.Use(h.Middleware) // heed
	mux.HandleFunc("webhook", sendWebhook)
	if err := srv.Start(mux); err != nil {
		return err
	}
	defer srv.Shutdown()

	inspector := asynq.NewInspector(redis)
	defer inspector.Close()
	for _, id := range ids {
		info, err := wait(inspector, queue, id)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "task %s: %s after %d retries", id[:8], info.State, info.Retried)
		var rec struct{ Action, Reason string } // heed's record, when it took a decision other than success
		if json.Unmarshal(info.Result, &rec) == nil && rec.Action != "" {
			fmt.Fprintf(out, "; heed's last decision: %s (%s)", rec.Action, rec.Reason)
		}
		fmt.Fprintln(out)
	}
	return nil
}

// wait returns task id of queue once it is completed or archived.
func wait(in *asynq.Inspector, queue, id string) (*asynq.TaskInfo, error) {
	deadline := time.Now().Add(time.Minute)
	for {
		info, err := in.GetTaskInfo(queue, id)
		if err != nil {
			return nil, err
		}
		if info.State == asynq.TaskStateCompleted || info.State == asynq.TaskStateArchived || time.Now().After(deadline) {
			return info, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
}
