package cli

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/sqlitestore"
)

// syncBuffer is a bytes.Buffer safe to write from the command's goroutines
// while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// heed jobs work --metrics-addr serves the worker's metrics in the
// Prometheus text format on the loopback address, while it runs, and stops
// serving when it stops.
func TestJobsWorkMetricsAddr(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "jobs.db")
	st, err := sqlitestore.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c := queue.NewClient(st, queue.ClientConfig{})
	for _, args := range []string{`{"times": 1}`, `{"permanent": true}`} {
		if _, _, err := c.Enqueue(ctx, "fail", []byte(args), queue.EnqueueOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	wctx, stop := context.WithCancel(ctx)
	defer stop()
	var stdout, stderr syncBuffer
	code := make(chan int, 1)
	go func() {
		code <- Main(wctx, []string{"jobs", "work", "--db", db, "--metrics-addr", ":0",
			"--base", "1ms", "--cap", "5ms", "--poll", "10ms", "--quiet"}, strings.NewReader(""), &stdout, &stderr)
	}()

	// The address the worker says it serves at: 127.0.0.1 for ":0".
	var url string
	addrLine := regexp.MustCompile(`metrics at (http://127\.0\.0\.1:\d+/metrics)`)
	deadline := time.Now().Add(10 * time.Second)
	for url == "" {
		if m := addrLine.FindStringSubmatch(stderr.String()); m != nil {
			url = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("no metrics address on stderr:\n%s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}

	want := []string{
		`heed_queue_jobs_started_total{heed_job_kind="fail",heed_queue_name="default"} 3`,
		`heed_queue_jobs_succeeded_total{heed_job_kind="fail",heed_queue_name="default"} 1`,
		`heed_queue_jobs_retried_total{heed_job_kind="fail",heed_queue_name="default",heed_retry_reason="transient"} 1`,
		`heed_queue_jobs_dead_total{heed_job_kind="fail",heed_queue_name="default",heed_retry_reason="permanent"} 1`,
		`heed_queue_job_duration_seconds_count{heed_job_kind="fail",heed_job_result="succeeded",heed_queue_name="default"} 1`,
		`heed_queue_job_wait_duration_seconds_count{heed_job_kind="fail",heed_queue_name="default"} 3`,
		`heed_queue_jobs{heed_job_state="succeeded",heed_queue_name="default"} 1`,
		`heed_queue_jobs{heed_job_state="dead",heed_queue_name="default"} 1`,
		`heed_queue_jobs{heed_job_state="available",heed_queue_name="default"} 0`,
	}
	client := &http.Client{Transport: &http.Transport{}, Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	var body string
	for {
		// The jobs finish while we scrape: scrape until every series
		// has its final value.
		resp, err := client.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body = string(b)
		missing := 0
		lines := strings.Split(body, "\n")
		for _, w := range want {
			if !containsLine(lines, w) {
				missing++
			}
		}
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("series missing after 10 s, want %q; scraped:\n%s", want, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(body, "# TYPE heed_queue_dead_letter_oldest_age_seconds gauge") {
		t.Error("no dead-letter age")
	}

	stop()
	if got := <-code; got != exitOK {
		t.Errorf("exit %d, want 0; stderr:\n%s", got, stderr.String())
	}
	if _, err := client.Get(url); err == nil {
		t.Error("metrics still served after the worker stopped")
	}
}

func containsLine(lines []string, want string) bool {
	for _, l := range lines {
		if l == want {
			return true
		}
	}
	return false
}

// Metrics are off unless asked for, and a bad address is a usage error.
func TestJobsWorkMetricsAddrFlag(t *testing.T) {
	db := filepath.Join(t.TempDir(), "jobs.db")
	var stdout, stderr, stderr2 syncBuffer
	got := Main(context.Background(), []string{"jobs", "work", "--db", db, "--metrics-addr", "nonsense", "--for", "1ms"},
		strings.NewReader(""), &stdout, &stderr)
	if got != exitUsage || !strings.Contains(stderr.String(), "--metrics-addr") {
		t.Errorf("--metrics-addr nonsense: exit %d, stderr:\n%s", got, stderr.String())
	}
	got = Main(context.Background(), []string{"jobs", "work", "--db", db, "--for", "1ms", "--quiet"},
		strings.NewReader(""), &stdout, &stderr2)
	if got != exitOK || strings.Contains(stderr2.String(), "metrics") {
		t.Errorf("without --metrics-addr: exit %d, stderr:\n%s", got, stderr2.String())
	}
}
