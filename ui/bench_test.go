package ui_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/heed-go/heed/pgstore"
	"github.com/heed-go/heed/pgstore/pgstoretest"
	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/ui"
	"github.com/jackc/pgx/v5"
)

// benchJobs is how many jobs the dashboard benchmarks seed.
const benchJobs = 1_000_000

// seedSQL inserts $1 jobs finished over the last 24 hours (newest first by
// ID order): 96% succeeded (one in ten after a retry), 1% dead (three
// causes), 2.5% available (due, scheduled, or waiting for a retry), 0.5%
// running, in 8 queues. Each job's history is what the queue writes:
// entries with their times, outcome, action and reason.
const seedSQL = `
INSERT INTO heed_jobs (kind, queue, args, state, attempt, available_at, created_at, started_at, attempted_at,
	finished_at, lease_token, lease_until, worker, dead_reason, history)
SELECT kind, queue, args, state, attempt, avail, t, t, t,
	CASE WHEN state IN ('succeeded', 'dead') THEN t + interval '1 second' END,
	CASE WHEN state = 'running' THEN md5(g::text) END,
	CASE WHEN state = 'running' THEN now() + interval '1 minute' END,
	'worker-' || (g % 16), CASE WHEN state = 'dead' THEN 'attempts' ELSE '' END,
	json_build_array(json_build_object('attempt', 1, 'worker', 'worker-1', 'started_at', t, 'finished_at', t + interval '100 ms',
		'outcome', CASE WHEN state = 'dead' OR retried THEN 'transient' ELSE 'ok' END,
		'error', CASE WHEN state = 'dead' OR retried THEN err END,
		'action', CASE WHEN state = 'succeeded' AND NOT retried THEN 'done' WHEN state = 'dead' AND NOT retried THEN 'give up' ELSE 'retry' END,
		'reason', CASE WHEN state = 'dead' AND NOT retried THEN 'attempts' WHEN retried OR state <> 'succeeded' THEN 'transient' ELSE '' END))
FROM (
	SELECT g, now() - (g * (86400000.0 / $1)) * interval '1 ms' AS t,
		'kind' || (g % 12) AS kind, 'queue-' || (g % 8) AS queue, json_build_object('n', g, 'to', 'user' || g || '@example.com') AS args,
		CASE WHEN g % 100 = 7 THEN 'dead' WHEN g % 40 = 3 THEN 'available' WHEN g % 200 = 11 THEN 'running' ELSE 'succeeded' END AS state,
		g % 10 = 1 AS retried, 1 AS attempt,
		now() + CASE WHEN g % 3 = 0 THEN interval '1 hour' ELSE -interval '1 second' * (g % 60) END AS avail,
		CASE g % 3 WHEN 0 THEN 'dial tcp 10.0.' || (g % 250) || '.' || (g % 7) || ':5432: connect: connection refused'
			WHEN 1 THEN 'POST https://pay.example.com/charges/' || g || ': 503 Service Unavailable'
			ELSE 'smtp 421: mailbox user' || g || '@example.com busy, try later' END AS err
	FROM generate_series(1, $1) g
) s`

var seedOnce sync.Map // connection string -> struct{}

// seededPG returns a store over a fresh PostgreSQL schema with benchJobs
// jobs, seeded once per benchmark run. It skips unless
// HEED_UI_BENCH_POSTGRES is set (seeding a million jobs takes a while).
func seededPG(b *testing.B) *pgstore.Store {
	if os.Getenv("HEED_UI_BENCH_POSTGRES") == "" {
		b.Skip("set HEED_UI_BENCH_POSTGRES=1 (and HEED_TEST_POSTGRES_URL) to run the dashboard's benchmarks over 1,000,000 jobs in PostgreSQL")
	}
	ctx := context.Background()
	_, u := pgstoretest.Schema(b)
	s, err := pgstore.Open(ctx, u)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	start := time.Now()
	// Batches of 100,000 rows: one statement each.
	for done := 0; done < benchJobs; done += 100_000 {
		if _, err := conn.Exec(ctx, `SET LOCAL statement_timeout = 0`); err != nil {
			b.Fatal(err)
		}
		if _, err := conn.Exec(ctx, seedSQL, 100_000); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := conn.Exec(ctx, `VACUUM ANALYZE heed_jobs`); err != nil {
		b.Fatal(err)
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM heed_jobs`).Scan(&n); err != nil || n != benchJobs {
		b.Fatalf("seeded %d jobs (%v), want %d", n, err, benchJobs)
	}
	b.Logf("seeded %d jobs in %v", n, time.Since(start).Round(time.Millisecond))
	return s
}

var countedIn = regexp.MustCompile(`, in ([0-9.]+)(ms|s|µs)\)`)

// serve GETs path from h and returns the page.
func serve(b *testing.B, h http.Handler, path string) string {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	if rec.Code != 200 {
		b.Fatalf("GET %s: %d\n%s", path, rec.Code, rec.Body.String())
	}
	return rec.Body.String()
}

// BenchmarkDashboard1M measures the dashboard's pages over 1,000,000 jobs
// in PostgreSQL:
//
//   - overview/served: a request for the overview as every viewer makes
//     it, answered from the count the handler shares between viewers
//     (refreshed in the background, at most every max(2s, 10 × its
//     duration));
//   - overview/count: the count itself (a fresh handler per request:
//     states per queue, lags, an hour of per-minute throughput), which
//     the first viewer waits for; count-ms reports what the page says;
//   - jobs, dead-letter, job: the other pages.
func BenchmarkDashboard1M(b *testing.B) {
	s := seededPG(b)
	c := queue.NewClient(s, queue.ClientConfig{})
	newHandler := func() *ui.Handler {
		h, err := ui.New(c, ui.Config{ReadOnly: true})
		if err != nil {
			b.Fatal(err)
		}
		return h
	}
	b.Run("overview/served", func(b *testing.B) {
		h := newHandler()
		defer h.Close()
		serve(b, h, "/") // the first viewer's count
		b.ResetTimer()
		var took []time.Duration
		for b.Loop() {
			start := time.Now()
			serve(b, h, "/")
			took = append(took, time.Since(start))
		}
		reportP95(b, took)
	})
	b.Run("overview/count", func(b *testing.B) {
		var total float64
		n := 0
		for b.Loop() {
			h := newHandler()
			page := serve(b, h, "/")
			h.Close()
			if m := countedIn.FindStringSubmatch(page); m != nil {
				v, _ := strconv.ParseFloat(m[1], 64)
				switch m[2] {
				case "s":
					v *= 1000
				case "µs":
					v /= 1000
				}
				total += v
				n++
			}
		}
		if n > 0 {
			b.ReportMetric(total/float64(n), "count-ms")
		}
	})
	pages := []struct{ name, path string }{
		{"jobs/newest", "/jobs"},
		{"jobs/dead", "/jobs?state=dead"},
		{"jobs/scheduled", "/jobs?state=scheduled"},
		{"jobs/running", "/jobs?state=running"},
		{"jobs/deep-page", "/jobs?queue=queue-3&before=500000"},
		{"dead-letter", "/dead"},
		{"job", "/jobs/700007"},
	}
	for _, p := range pages {
		b.Run(p.name, func(b *testing.B) {
			h := newHandler()
			defer h.Close()
			serve(b, h, "/") // the overview's first count, which /dead reads
			b.ResetTimer()
			var took []time.Duration
			for b.Loop() {
				start := time.Now()
				serve(b, h, p.path)
				took = append(took, time.Since(start))
			}
			reportP95(b, took)
		})
	}
	b.Run("dead-letter/group", func(b *testing.B) {
		h := newHandler()
		defer h.Close()
		m := regexp.MustCompile(`href="/dead/([0-9a-f]+)"`).FindStringSubmatch(serve(b, h, "/dead"))
		if m == nil {
			b.Fatal("no group on the dead-letter page")
		}
		b.ResetTimer()
		var took []time.Duration
		for b.Loop() {
			start := time.Now()
			serve(b, h, "/dead/"+m[1])
			took = append(took, time.Since(start))
		}
		reportP95(b, took)
	})
}

// reportP95 reports the 95th percentile of took, in milliseconds.
func reportP95(b *testing.B, took []time.Duration) {
	if len(took) == 0 {
		return
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[(len(took)*95+99)/100-1])/1e6, "p95-ms")
}
