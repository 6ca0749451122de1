// Command example runs River jobs under a heed policy: a River client as
// you have it today, with heed's retry policy and middleware added. It
// needs a PostgreSQL database; it keeps River's tables in a schema of its
// own (heedriver_example), which it creates and migrates:
//
//	DATABASE_URL=postgres://localhost:5432/mydb go run ./example
//
// Five webhook jobs are sent to a flaky receiver (it answers 503 to every
// other call); one has a malformed URL. It prints what became of each job
// and heed's record of why.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/breaker"
	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/heedriver"
	"github.com/heed-go/heed/retry"
)

// schema is where the example keeps River's tables.
const schema = "heedriver_example"

// WebhookArgs is a River job, as you have them today.
type WebhookArgs struct {
	URL string `json:"url"`
}

func (WebhookArgs) Kind() string { return "webhook" }

// WebhookWorker posts to the job's URL. It says which failures may pass
// (retry.Transient, retry.After for a 429's Retry-After); anything else is
// not retried.
type WebhookWorker struct {
	river.WorkerDefaults[WebhookArgs]
}

func (WebhookWorker) Work(ctx context.Context, job *river.Job[WebhookArgs]) error {
	if _, err := url.ParseRequestURI(job.Args.URL); err != nil {
		return retry.Permanent(fmt.Errorf("bad webhook URL: %w", err))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, job.Args.URL, nil)
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
	if err := run(context.Background(), os.Getenv("DATABASE_URL"), schema, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "example:", err)
		os.Exit(1)
	}
}

// run runs the example with River's tables in schema (its test gives each
// run a schema of its own).
func run(ctx context.Context, dbURL, schema string, out io.Writer) error {
	if dbURL == "" {
		return errors.New("set DATABASE_URL to a PostgreSQL database")
	}
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize()); err != nil {
		return err
	}
	migrator, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Schema: schema})
	if err != nil {
		return err
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return err
	}

	var calls atomic.Int64
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if calls.Add(1)%2 == 1 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
		}
	}))
	defer receiver.Close()

	// The heed part: one policy, the client's retry policy and middleware.
	b, _ := budget.New(budget.Config{MinPerSecond: 1}) // 9% of the attempts, and at least 1 retry a second
	br, _ := breaker.New(breaker.Config{})
	h, err := heedriver.New(retry.Policy{
		Attempts:       5,
		Backoff:        backoff.Schedule{Base: 200 * time.Millisecond, Cap: 2 * time.Second},
		TimeBudget:     time.Minute,
		AttemptTimeout: 5 * time.Second,
		Budget:         b,
		Breaker:        br,
	})
	if err != nil {
		return err
	}

	workers := river.NewWorkers()
	river.AddWorker(workers, &WebhookWorker{})
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Schema:      schema,
		Queues:      map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 10}},
		Workers:     workers,
		RetryPolicy: h,                         // heed
		Middleware:  []rivertype.Middleware{h}, // heed
		JobTimeout:  -1,                        // heed's AttemptTimeout limits attempts
		Logger:      slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return err
	}
	var ids []int64
	for _, u := range []string{receiver.URL, receiver.URL, receiver.URL, receiver.URL, "not a url"} {
		res, err := client.Insert(ctx, WebhookArgs{URL: u}, nil)
		if err != nil {
			return err
		}
		ids = append(ids, res.Job.ID)
	}
	if err := client.Start(ctx); err != nil {
		return err
	}
	defer client.Stop(ctx)

	for _, id := range ids {
		job, err := wait(ctx, client, id)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "job %d: %s after %d attempt(s)", id, job.State, job.Attempt)
		var md struct {
			Heed *struct{ Action, Reason string } `json:"heed"` // heed's record, when it took a decision other than success
		}
		if json.Unmarshal(job.Metadata, &md) == nil && md.Heed != nil {
			fmt.Fprintf(out, "; heed's last decision: %s (%s)", md.Heed.Action, md.Heed.Reason)
		}
		fmt.Fprintln(out)
	}
	return nil
}

// wait returns job id once it is finalized.
func wait(ctx context.Context, client *river.Client[pgx.Tx], id int64) (*rivertype.JobRow, error) {
	deadline := time.Now().Add(time.Minute)
	for {
		job, err := client.JobGet(ctx, id)
		if err != nil {
			return nil, err
		}
		if job.FinalizedAt != nil || time.Now().After(deadline) {
			return job, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
}
