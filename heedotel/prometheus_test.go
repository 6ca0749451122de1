package heedotel_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/heed-go/heed/heedotel"
	"github.com/heed-go/heed/retry"
)

func scrape(t *testing.T, url string) string {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s\n%s", url, resp.Status, b)
	}
	return string(b)
}

// wantSeries checks that body has each series line (name{labels} value),
// labels in the exporter's order (sorted).
func wantSeries(t *testing.T, body string, series ...string) {
	t.Helper()
	lines := map[string]bool{}
	for l := range strings.SplitSeq(body, "\n") {
		lines[l] = true
	}
	for _, s := range series {
		if !lines[s] {
			t.Errorf("no series %s", s)
		}
	}
	if t.Failed() {
		t.Logf("scraped:\n%s", body)
	}
}

func TestServePrometheus(t *testing.T) {
	srv, err := heedotel.ServePrometheus(context.Background(), ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if ip := srv.Addr().(*net.TCPAddr).IP; !ip.IsLoopback() {
		t.Errorf(`":0" listens on %v, want the loopback address`, ip)
	}
	m := srv.Metrics()
	calls := 0
	err = retry.Do(context.Background(), retry.Policy{Backoff: constant1ms, Observe: m.RetryObserver("charge")}, func(context.Context) error {
		if calls++; calls < 3 {
			return retry.Transient(errReset)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	st := runJobs(t, m.QueueObserver())
	reg, err := m.ObserveQueue(st)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()

	body := scrape(t, srv.URL())
	wantSeries(t, body,
		`# TYPE heed_retry_attempts_total counter`,
		`heed_retry_attempts_total{heed_operation="charge",heed_retry_outcome="ok"} 1`,
		`heed_retry_attempts_total{heed_operation="charge",heed_retry_outcome="transient"} 2`,
		`heed_retry_retries_total{heed_operation="charge",heed_retry_reason="transient"} 2`,
		`heed_retry_delay_seconds_count{heed_operation="charge",heed_retry_reason="transient"} 2`,
		`heed_retry_call_duration_seconds_count{heed_operation="charge",heed_retry_reason="success"} 1`,
		`heed_queue_jobs_started_total{heed_job_kind="flaky",heed_queue_name="default"} 2`,
		`heed_queue_jobs_retried_total{heed_job_kind="flaky",heed_queue_name="default",heed_retry_reason="transient"} 1`,
		`heed_queue_jobs_succeeded_total{heed_job_kind="flaky",heed_queue_name="default"} 1`,
		`heed_queue_jobs_dead_total{heed_job_kind="doomed",heed_queue_name="default",heed_retry_reason="permanent"} 1`,
		`heed_queue_job_duration_seconds_count{heed_job_kind="doomed",heed_job_result="dead",heed_queue_name="default"} 1`,
		`heed_queue_jobs{heed_job_state="dead",heed_queue_name="default"} 1`,
		`heed_queue_jobs{heed_job_state="succeeded",heed_queue_name="default"} 1`,
		`# TYPE heed_queue_dead_letter_oldest_age_seconds gauge`,
	)
	if strings.Contains(body, "heed_retry_give_ups_total{") {
		t.Error("a give-up was reported for a call that succeeded")
	}
	if !strings.Contains(body, "go_goroutines") {
		t.Error("no Go runtime metrics")
	}
	if err := srv.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if _, err := http.Get(srv.URL()); err == nil {
		t.Error("still serving after Close")
	}
}

// TestServePrometheusContext: the server stops when its context ends.
func TestServePrometheusContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := heedotel.ServePrometheus(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	scrape(t, srv.URL())
	cancel()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.Dial("tcp", srv.Addr().String())
		if err != nil {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("still listening after the context ended")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := srv.Close(); err != nil {
		t.Errorf("Close after the context ended: %v", err)
	}
}

func TestServePrometheusBadAddr(t *testing.T) {
	for _, addr := range []string{"", "nonsense", "127.0.0.1:99999"} {
		if srv, err := heedotel.ServePrometheus(context.Background(), addr); err == nil {
			srv.Close()
			t.Errorf("ServePrometheus(%q) succeeded", addr)
		}
	}
}

func TestListenAddr(t *testing.T) {
	for addr, want := range map[string]string{
		":9090":            "127.0.0.1:9090",
		"9090":             "127.0.0.1:9090",
		":0":               "127.0.0.1:0",
		"0.0.0.0:9090":     "0.0.0.0:9090",
		"[::]:9090":        "[::]:9090",
		"[::1]:9090":       "[::1]:9090",
		"localhost:9090":   "localhost:9090",
		"10.1.2.3:9464":    "10.1.2.3:9464",
		"metrics.lan:http": "metrics.lan:http",
	} {
		got, err := heedotel.ListenAddr(addr)
		if err != nil || got != want {
			t.Errorf("ListenAddr(%q) = %q, %v; want %q", addr, got, err, want)
		}
	}
	for _, addr := range []string{"", "a:b:c", "nonsense"} {
		if got, err := heedotel.ListenAddr(addr); err == nil {
			t.Errorf("ListenAddr(%q) = %q, want an error", addr, got)
		}
	}
}
