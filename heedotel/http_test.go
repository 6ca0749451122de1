package heedotel_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/breaker"
	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/heedotel"
	"github.com/heed-go/heed/retry"
	"github.com/heed-go/heed/retryhttp"
	"go.opentelemetry.io/otel/attribute"
)

func statusClass(s string) attribute.KeyValue { return heedotel.KeyStatusClass.String(s) }

// destination returns the attributes of srv's host, and the method GET.
func destination(t *testing.T, srv *httptest.Server) []attribute.KeyValue {
	t.Helper()
	host, port, err := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(port)
	return []attribute.KeyValue{
		attribute.String("http.request.method", "GET"),
		attribute.String("server.address", host),
		attribute.Int("server.port", p),
	}
}

func with(base []attribute.KeyValue, kv ...attribute.KeyValue) []attribute.KeyValue {
	return append(base[:len(base):len(base)], kv...)
}

func get(t *testing.T, ctx context.Context, client *http.Client, url string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return resp, err
}

func TestTransport503Then200(t *testing.T) {
	m, r := newMetrics(t)
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	}))
	defer srv.Close()
	rt := m.Transport(&retryhttp.Transport{Policy: retry.Policy{Backoff: constant1ms}})
	client := &http.Client{Transport: rt}
	defer client.CloseIdleConnections()

	resp, err := get(t, context.Background(), client, srv.URL+"/users/42?token=secret")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET = %v, %v; want 200", resp, err)
	}

	c := collect(t, r)
	dst := destination(t, srv)
	c.wantCount("http.client.request.duration", 2, dst...)
	c.wantCount("http.client.request.duration", 1, with(dst, attribute.Int("http.response.status_code", 503), attribute.String("error.type", "503"))...)
	c.wantCount("http.client.request.duration", 1, with(dst, attribute.Int("http.response.status_code", 200))...)
	if v := c.attrValues("http.client.request.duration", "error.type"); len(v) != 1 {
		t.Errorf("error.type values %v, want only 503's", v)
	}
	c.wantSum("heed.http.client.attempts", 2, dst...)
	c.wantSum("heed.http.client.attempts", 1, with(dst, statusClass("5xx"), outcome("transient"))...)
	c.wantSum("heed.http.client.attempts", 1, with(dst, statusClass("2xx"), outcome("success"))...)
	c.wantSum("heed.http.client.retries", 1, with(dst, statusClass("5xx"), reason("transient"))...)
	c.wantSum("heed.http.client.give_ups", 0)
	c.wantSum("heed.http.client.breaker.refused", 0)
	n1, sum := c.hist("heed.http.client.retry.delay", with(dst, reason("transient"))...)
	if n1 != 1 || sum != 0.001 {
		t.Errorf("heed.http.client.retry.delay: count %d sum %v, want 1 and 0.001", n1, sum)
	}
	c.wantCount("heed.http.client.call.duration", 1, with(dst, statusClass("2xx"), reason("success"))...)
	for _, kv := range c.allAttrs() {
		if v := kv.Value.Emit(); strings.Contains(v, "users") || strings.Contains(v, "secret") {
			t.Errorf("attribute %s=%q leaks the URL", kv.Key, v)
		}
	}
	// The retry instruments of retry.Do are not used by the transport.
	c.wantSum("heed.retry.attempts", 0)
}

func TestTransportBreakerOpensAndRefuses(t *testing.T) {
	m, r := newMetrics(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
	}))
	defer srv.Close()
	rt := m.Transport(&retryhttp.Transport{
		Policy:  retry.Policy{Attempts: 1},
		Breaker: &breaker.Config{MinCalls: 2, Cooldown: time.Hour, OnStateChange: m.BreakerObserver("api")},
	})
	client := &http.Client{Transport: rt}
	defer client.CloseIdleConnections()

	for i := range 2 {
		resp, err := get(t, context.Background(), client, srv.URL)
		if err != nil || resp.StatusCode != http.StatusBadGateway {
			t.Fatalf("call %d: %v, %v; want the 502 response", i+1, resp, err)
		}
	}
	if _, err := get(t, context.Background(), client, srv.URL); !errors.Is(err, breaker.ErrOpen) {
		t.Fatalf("call 3: %v, want breaker.ErrOpen", err)
	}

	c := collect(t, r)
	dst := destination(t, srv)
	c.wantSum("heed.http.client.breaker.refused", 1, dst...)
	c.wantSum("heed.http.client.attempts", 2, with(dst, statusClass("5xx"), outcome("transient"))...)
	c.wantSum("heed.http.client.attempts", 2) // the refusal is not an attempt
	c.wantSum("heed.http.client.give_ups", 2, with(dst, statusClass("5xx"), reason("attempts"))...)
	c.wantSum("heed.http.client.give_ups", 1, with(dst, statusClass("error"), reason("breaker_open"))...)
	c.wantCount("heed.http.client.call.duration", 2, with(dst, statusClass("5xx"), reason("attempts"))...)
	c.wantCount("heed.http.client.call.duration", 1, with(dst, statusClass("error"), reason("breaker_open"))...)
	c.wantCount("http.client.request.duration", 2, with(dst, attribute.Int("http.response.status_code", 502))...)
	c.wantSum("heed.breaker.transitions", 1, heedotel.KeyBreaker.String("api"),
		heedotel.KeyBreakerFrom.String("closed"), heedotel.KeyBreakerState.String("open"))
}

// TestHostBreakerObserver: with OnBreakerChange, transitions are counted
// under the host whose breaker changed.
func TestHostBreakerObserver(t *testing.T) {
	m, r := newMetrics(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
	}))
	defer srv.Close()
	client := &http.Client{Transport: &retryhttp.Transport{
		Policy:          retry.Policy{Attempts: 1},
		Breaker:         &breaker.Config{MinCalls: 2, Cooldown: time.Hour},
		OnBreakerChange: m.HostBreakerObserver(),
	}}
	defer client.CloseIdleConnections()
	for range 3 {
		if resp, err := get(t, context.Background(), client, srv.URL); err == nil {
			resp.Body.Close()
		}
	}
	host := strings.TrimPrefix(srv.URL, "http://")
	collect(t, r).wantSum("heed.breaker.transitions", 1, heedotel.KeyBreaker.String(host),
		heedotel.KeyBreakerFrom.String("closed"), heedotel.KeyBreakerState.String("open"))
}

// TestTransportCanceled: a call whose caller gives up during the wait
// before a retry still counts as a call, with reason "canceled".
func TestTransportCanceled(t *testing.T) {
	m, r := newMetrics(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rt := m.Transport(&retryhttp.Transport{Policy: retry.Policy{
		Backoff: backoff.Schedule{Kind: backoff.Constant, Base: time.Hour, Jitter: backoff.NoJitter},
		// The caller gives up as soon as the retry is decided, during
		// its wait (this observer runs before the adapter's).
		Observe: func(_ context.Context, e retry.Event) {
			if e.Action == retry.Retry {
				cancel()
			}
		},
	}})
	client := &http.Client{Transport: rt}
	defer client.CloseIdleConnections()

	if _, err := get(t, ctx, client, srv.URL); !errors.Is(err, context.Canceled) {
		t.Fatalf("GET = %v, want the context's error", err)
	}
	c := collect(t, r)
	dst := destination(t, srv)
	c.wantSum("heed.http.client.attempts", 1, with(dst, statusClass("5xx"))...)
	c.wantSum("heed.http.client.retries", 1)
	c.wantCount("heed.http.client.call.duration", 1, with(dst, statusClass("error"), reason("canceled"))...)
}

// TestTransportConnectionRefused: transport errors have status class
// "error" and an error.type, and no status code.
func TestTransportConnectionRefused(t *testing.T) {
	m, r := newMetrics(t)
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there any more
	rt := m.Transport(&retryhttp.Transport{Policy: retry.Policy{Attempts: 2, Backoff: constant1ms}, Budget: budget.Config{Ratio: -1}})
	client := &http.Client{Transport: rt}
	defer client.CloseIdleConnections()

	if _, err := get(t, context.Background(), client, url); !errors.Is(err, retry.ErrExhausted) {
		t.Fatalf("GET = %v, want a give-up", err)
	}
	c := collect(t, r)
	dst := destination(t, srv)
	c.wantSum("heed.http.client.attempts", 2, with(dst, statusClass("error"), outcome("transient"))...)
	c.wantCount("http.client.request.duration", 2, with(dst, attribute.String("error.type", "transient"))...)
	if v := c.attrValues("http.client.request.duration", "http.response.status_code"); len(v) != 0 {
		t.Errorf("status codes %v recorded without a response", v)
	}
	c.wantSum("heed.http.client.give_ups", 1, with(dst, statusClass("error"), reason("attempts"))...)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestTransportHostCap: past MaxHosts destinations, requests are recorded
// under server.address "_OTHER", and made-up methods as "_OTHER".
func TestTransportHostCap(t *testing.T) {
	m, r := newMetrics(t)
	ok := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 204, Body: http.NoBody, Header: http.Header{}, Request: r}, nil
	})
	client := &http.Client{Transport: m.Transport(&retryhttp.Transport{Base: ok})}
	for i := range heedotel.MaxHosts + 10 {
		if _, err := get(t, context.Background(), client, fmt.Sprintf("http://h%d.example/", i)); err != nil {
			t.Fatal(err)
		}
	}
	req, _ := http.NewRequest("BREW", "http://h0.example/", nil)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	c := collect(t, r)
	hosts := c.attrValues("heed.http.client.attempts", "server.address")
	if len(hosts) != heedotel.MaxHosts+1 || !hosts["_OTHER"] {
		t.Errorf("%d server.address values (with _OTHER: %v), want MaxHosts and _OTHER", len(hosts), hosts["_OTHER"])
	}
	c.wantSum("heed.http.client.attempts", 10, attribute.String("server.address", "_OTHER"), statusClass("2xx"),
		attribute.String("http.request.method", "GET"))
	c.wantSum("heed.http.client.attempts", 1, attribute.String("http.request.method", "_OTHER"))
	c.wantSum("heed.http.client.attempts", 1, attribute.String("server.address", "h0.example"), attribute.Int("server.port", 80),
		attribute.String("http.request.method", "GET"))
}

// TestTransportKeepsObserver: an observer already in the policy still runs.
func TestTransportKeepsObserver(t *testing.T) {
	m, r := newMetrics(t)
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	var seen int
	rt := m.Transport(&retryhttp.Transport{Policy: retry.Policy{Observe: func(context.Context, retry.Event) { seen++ }}})
	client := &http.Client{Transport: rt}
	defer client.CloseIdleConnections()
	if resp, err := get(t, context.Background(), client, srv.URL); err != nil || resp.StatusCode != 404 {
		t.Fatalf("GET = %v, %v", resp, err)
	}
	if seen != 1 {
		t.Errorf("the policy's own observer saw %d events, want 1", seen)
	}
	c := collect(t, r)
	c.wantSum("heed.http.client.attempts", 1, statusClass("4xx"), outcome("success"))
	c.wantCount("http.client.request.duration", 1, attribute.Int("http.response.status_code", 404), attribute.String("error.type", "404"))
}

// TestTransportBodyTooLarge: a response the transport refuses after
// accepting it is an attempt without a status and a call that ended in an
// error.
func TestTransportBodyTooLarge(t *testing.T) {
	m, r := newMetrics(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(make([]byte, 100))
	}))
	defer srv.Close()
	client := &http.Client{Transport: m.Transport(&retryhttp.Transport{MaxResponseBody: 10})}
	defer client.CloseIdleConnections()
	if _, err := get(t, context.Background(), client, srv.URL); !errors.Is(err, retryhttp.ErrBodyTooLarge) {
		t.Fatalf("GET = %v, want ErrBodyTooLarge", err)
	}
	c := collect(t, r)
	dst := destination(t, srv)
	c.wantCount("http.client.request.duration", 1, with(dst, attribute.String("error.type", "_OTHER"))...)
	c.wantSum("heed.http.client.attempts", 1, with(dst, statusClass("error"), outcome("success"))...)
	c.wantCount("heed.http.client.call.duration", 1, with(dst, statusClass("error"), reason("error"))...)
}

// hostBase answers every request 200 in memory, whatever its host.
type hostBase struct{}

func (hostBase) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: r}, nil
}

// A token in a host name (as some webhook services put one) is recorded
// as REDACTED, in server.address and in the breaker's name.
func TestTransportRedactsTokenHosts(t *testing.T) {
	const tok = "CANARYx7Qp2Lm9Zr4Tv8Wb3N"
	m, r := newMetrics(t)
	tr := &retryhttp.Transport{Base: hostBase{}, Policy: retry.Policy{Backoff: constant1ms}}
	client := &http.Client{Transport: m.Transport(tr)}
	resp, err := get(t, context.Background(), client, "http://"+tok+".hooks.example:8080/x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	m.HostBreakerObserver()(tok+".hooks.example:8080", breaker.Closed, breaker.Open, time.Now())
	c := collect(t, r)
	found := false
	for _, kv := range c.allAttrs() {
		v := kv.Value.Emit()
		if strings.Contains(v, tok) {
			t.Errorf("attribute %s=%q has the token", kv.Key, v)
		}
		found = found || v == "REDACTED.hooks.example"
	}
	if !found {
		t.Error("no server.address REDACTED.hooks.example")
	}
}

// A hedge sent beside a slow attempt, which wins, is counted in
// heed.http.client.hedges and heed.http.client.hedges.won.
func TestTransportHedge(t *testing.T) {
	m, r := newMetrics(t)
	// The first attempt is the slow one, known by its Retry-Attempt, not by
	// arrival (on a busy machine the hedge may arrive first); the hedge
	// answers once the first has arrived.
	firstIn := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a := r.Header.Get("Retry-Attempt"); a == "" || a == "1" {
			once.Do(func() { close(firstIn) })
			<-r.Context().Done() // slow until the client leaves
			return
		}
		select {
		case <-firstIn:
		case <-r.Context().Done():
		}
		fmt.Fprintln(w, "ok")
	}))
	defer srv.Close()
	rt := m.Transport(&retryhttp.Transport{Policy: retry.Policy{Hedge: &retry.Hedge{Delay: 10 * time.Millisecond}}})
	client := &http.Client{Transport: rt}
	defer client.CloseIdleConnections()
	resp, err := get(t, context.Background(), client, srv.URL+"/")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET = %v, %v; want 200", resp, err)
	}
	c := collect(t, r)
	dst := destination(t, srv)
	c.wantSum("heed.http.client.hedges", 1, dst...)
	c.wantSum("heed.http.client.hedges.won", 1, dst...)
}
