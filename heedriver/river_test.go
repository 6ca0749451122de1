package heedriver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"

	"github.com/heed-go/heed/heedriver"
)

// postgresURL names the database the tests run River in: each test makes a
// schema of its own there (heedriver_...), runs River's migrations in it
// and drops it at the end; nothing else in the database is touched.
const postgresURL = "HEED_TEST_POSTGRES_URL"

var schemaSeq atomic.Int64

// openSchema returns a pool on the test database and a new schema with
// River's tables, dropped when t ends. It skips t when postgresURL is not set.
func openSchema(t testing.TB) (*pgxpool.Pool, string) {
	t.Helper()
	url := os.Getenv(postgresURL)
	if url == "" {
		t.Skipf("heedriver: %s is not set; set it to a PostgreSQL URL (such as postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to run the tests against River", postgresURL)
	}
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 12
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	schema := fmt.Sprintf("heedriver_%d_%d_%d", os.Getpid(), time.Now().UnixNano()%1e6, schemaSeq.Add(1))
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		pool.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := pool.Exec(context.Background(), "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
		}
		pool.Close()
	})
	m, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Schema: schema, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		t.Fatal(err)
	}
	return pool, schema
}

var quiet = slog.New(slog.DiscardHandler)

// scriptArgs is the job of the tests; N tells jobs apart.
type scriptArgs struct {
	N int `json:"n"`
}

func (scriptArgs) Kind() string { return "heed_script" }

// newClient returns a River client in schema that works scriptArgs jobs
// with work under h, polling often so that short delays are kept.
func newClient(t testing.TB, pool *pgxpool.Pool, schema string, h *heedriver.Policy, work func(context.Context, *river.Job[scriptArgs]) error, tune func(*river.Config)) *river.Client[pgx.Tx] {
	t.Helper()
	workers := river.NewWorkers()
	river.AddWorker(workers, river.WorkFunc(work))
	cfg := &river.Config{
		Schema:            schema,
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 20}},
		Workers:           workers,
		FetchCooldown:     5 * time.Millisecond,
		FetchPollInterval: 20 * time.Millisecond,
		PollOnly:          true,
		JobTimeout:        -1, // heed's AttemptTimeout is the limit
		Logger:            quiet,
	}
	if h != nil {
		cfg.RetryPolicy = h
		cfg.Middleware = []rivertype.Middleware{h}
	}
	if tune != nil {
		tune(cfg)
	}
	c, err := river.NewClient(riverpgxv5.New(pool), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func start(t testing.TB, c *river.Client[pgx.Tx]) {
	t.Helper()
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := c.Stop(ctx); err != nil {
			t.Errorf("stopping River: %v", err)
		}
	})
}

func insert(t testing.TB, c *river.Client[pgx.Tx], n int) {
	t.Helper()
	params := make([]river.InsertManyParams, n)
	for i := range params {
		params[i] = river.InsertManyParams{Args: scriptArgs{N: i}}
	}
	if _, err := c.InsertMany(context.Background(), params); err != nil {
		t.Fatal(err)
	}
}

// jobs returns every job of the schema by state.
func jobs(t testing.TB, c *river.Client[pgx.Tx]) map[rivertype.JobState][]*rivertype.JobRow {
	t.Helper()
	out := map[rivertype.JobState][]*rivertype.JobRow{}
	res, err := c.JobList(context.Background(), river.NewJobListParams().First(10000))
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range res.Jobs {
		out[j.State] = append(out[j.State], j)
	}
	return out
}

// waitFinal waits until n jobs are finalized (completed, cancelled or
// discarded), polling the table, for at most limit.
func waitFinal(t testing.TB, c *river.Client[pgx.Tx], n int, limit time.Duration) map[rivertype.JobState][]*rivertype.JobRow {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		js := jobs(t, c)
		if len(js[rivertype.JobStateCompleted])+len(js[rivertype.JobStateCancelled])+len(js[rivertype.JobStateDiscarded]) >= n {
			return js
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", limit, summary(js))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func summary(js map[rivertype.JobState][]*rivertype.JobRow) string {
	s := ""
	for st, l := range js {
		s += fmt.Sprintf("%s %d; ", st, len(l))
	}
	return s
}

// record returns heed's record in a job's metadata.
func record(t testing.TB, j *rivertype.JobRow) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(j.Metadata, &m); err != nil {
		t.Fatalf("job %d metadata %s: %v", j.ID, j.Metadata, err)
	}
	r, _ := m[heedriver.MetadataKey].(map[string]any)
	return r
}

var errFlaky = errors.New("flaky: 503 service unavailable")
