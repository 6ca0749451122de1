package promexport_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/heedotel/promexport"
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

func TestServe(t *testing.T) {
	srv, err := promexport.Serve(context.Background(), ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if ip := srv.Addr().(*net.TCPAddr).IP; !ip.IsLoopback() {
		t.Errorf(`":0" listens on %v, want the loopback address`, ip)
	}
	m := srv.Metrics()
	calls := 0
	err = retry.Do(context.Background(), retry.Policy{Backoff: backoff.Schedule{Kind: backoff.Constant, Base: time.Millisecond}, Observe: m.RetryObserver("charge")}, func(context.Context) error {
		if calls++; calls < 3 {
			return retry.Transient(errors.New("connection reset"))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	body := scrape(t, srv.URL())
	wantSeries(t, body,
		`# TYPE heed_retry_attempts_total counter`,
		`heed_retry_attempts_total{heed_operation="charge",heed_retry_outcome="success"} 1`,
		`heed_retry_attempts_total{heed_operation="charge",heed_retry_outcome="transient"} 2`,
		`heed_retry_retries_total{heed_operation="charge",heed_retry_reason="transient"} 2`,
		`heed_retry_delay_seconds_count{heed_operation="charge",heed_retry_reason="transient"} 2`,
		`heed_retry_call_duration_seconds_count{heed_operation="charge",heed_retry_reason="success"} 1`,
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

// TestServeContext: the server stops when its context ends.
func TestServeContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := promexport.Serve(ctx, "127.0.0.1:0")
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

func TestServeBadAddr(t *testing.T) {
	for _, addr := range []string{"", "nonsense", "127.0.0.1:99999"} {
		if srv, err := promexport.Serve(context.Background(), addr); err == nil {
			srv.Close()
			t.Errorf("Serve(%q) succeeded", addr)
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
		got, err := promexport.ListenAddr(addr)
		if err != nil || got != want {
			t.Errorf("ListenAddr(%q) = %q, %v; want %q", addr, got, err, want)
		}
	}
	for _, addr := range []string{"", "a:b:c", "nonsense"} {
		if got, err := promexport.ListenAddr(addr); err == nil {
			t.Errorf("ListenAddr(%q) = %q, want an error", addr, got)
		}
	}
}

// Serve heed's metrics in the Prometheus text format, as heed jobs work
// --metrics-addr does, for a program without an OpenTelemetry SDK of its
// own. An address without a host listens on 127.0.0.1 only.
func ExampleServe() {
	srv, err := promexport.Serve(context.Background(), ":0") // a free port
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	policy := retry.Policy{Observe: srv.Metrics().RetryObserver("charge")}
	retry.Do(context.Background(), policy, func(ctx context.Context) error { return nil })

	resp, err := http.Get(srv.URL()) // http://127.0.0.1:PORT/metrics
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for line := range strings.SplitSeq(string(body), "\n") {
		if strings.HasPrefix(line, "heed_retry_attempts_total") {
			fmt.Println(line)
		}
	}
	// Output:
	// heed_retry_attempts_total{heed_operation="charge",heed_retry_outcome="success"} 1
}
