package retryhttp_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heed-go/heed/breaker"
	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/deadline"
	"github.com/heed-go/heed/internal/wire"
	"github.com/heed-go/heed/retryhttp"
)

// TestOwnershipClaimedOnlyByARetryingCall: Retry-Attempt goes only with a
// request the transport will retry itself (attempts left, method
// repeatable), or whose caller upstream owns the retries.
func TestOwnershipClaimedOnlyByARetryingCall(t *testing.T) {
	for _, tt := range []struct {
		name     string
		attempts int
		method   string
		hdr      []string
		owned    bool
		want     bool
	}{
		{"GET, 3 attempts", 3, "GET", nil, false, true},
		{"GET, 1 attempt", 1, "GET", nil, false, false},
		{"POST without a key", 3, "POST", nil, false, false},
		{"POST with a key", 3, "POST", []string{"Idempotency-Key", `"k"`}, false, true},
		{"1 attempt under an upstream owner: passed on", 1, "GET", nil, true, true},
		{"POST under an upstream owner: passed on", 3, "POST", nil, true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			srv := newCounting(t, func(w http.ResponseWriter, r *http.Request, n int64) {
				got = append(got, r.Header.Get(wire.RetryAttemptHeader))
			})
			tr := newTransport(t, fast(tt.attempts))
			ctx := context.Background()
			if tt.owned {
				ctx = deadline.WithUpstreamOwner(ctx)
			}
			resp, err := do(t, tr, ctx, tt.method, srv.URL, strings.NewReader("x"), tt.hdr...)
			if err != nil {
				t.Fatal(err)
			}
			readAll(t, resp)
			if len(got) != 1 || (got[0] != "") == !tt.want {
				t.Fatalf("Retry-Attempt %q, want it sent: %v", got, tt.want)
			}
		})
	}
}

// TestOwnershipChainAttempts1: a top client that will not retry leaves the
// retries to the layer below it (it used to claim ownership anyway, so no
// layer retried at all).
func TestOwnershipChainAttempts1(t *testing.T) {
	var cHits int
	c := httptest.NewServer(retryhttp.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if cHits++; cHits == 1 {
			http.Error(w, "flaky", http.StatusServiceUnavailable)
		}
	}), deadline.Middleware{}))
	t.Cleanup(c.Close)
	mid := newTransport(t, fast(3))
	b := httptest.NewServer(retryhttp.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, err := do(t, mid, r.Context(), "GET", c.URL, nil)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		readAll(t, resp)
		w.WriteHeader(resp.StatusCode)
	}), deadline.Middleware{}))
	t.Cleanup(b.Close)
	resp, err := do(t, newTransport(t, fast(1)), context.Background(), "GET", b.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	if resp.StatusCode != 200 || cHits != 2 {
		t.Fatalf("user got %d after %d attempts at C; want B to retry C once and succeed", resp.StatusCode, cHits)
	}
}

// TestBudgetSharedAcrossTransports: Transports made per call spend one
// budget per host and port by default (a fresh budget per Transport is no
// budget at all).
func TestBudgetSharedAcrossTransports(t *testing.T) {
	srv := newCounting(t, func(w http.ResponseWriter, r *http.Request, n int64) {
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	reg := &budget.Registry{}
	const calls = 20
	for range calls {
		tr := &retryhttp.Transport{Policy: fast(3), Budgets: reg}
		resp, err := do(t, tr, context.Background(), "GET", srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		tr.CloseIdleConnections()
	}
	// One budget: its bucket of 5 retries and 10% of 20 requests, less
	// what arrived while the bucket was full (20 budgets would have
	// granted 40).
	if n := srv.requests.Load(); n < calls+5 || n > calls+7 {
		t.Fatalf("server saw %d attempts for %d calls through %d Transports, want %d to %d", n, calls, calls, calls+5, calls+7)
	}
	// The registry's budget for the host counted every call.
	shared, _ := reg.For(strings.TrimPrefix(srv.URL, "http://"), budget.Config{})
	if s := shared.Stats(); s.Requests != calls {
		t.Fatalf("the registry's budget for the host counted %d requests, want all %d", s.Requests, calls)
	}
	// The process registry is the default: two Transports, one budget.
	a, _ := budget.For(strings.TrimPrefix(srv.URL, "http://"), budget.Config{})
	(&retryhttp.Transport{}).RoundTrip(mustReq(t, srv.URL))
	if s := a.Stats(); s.Requests != 1 {
		t.Fatalf("process budget stats %+v after one call through a fresh Transport", s)
	}
}

func mustReq(t *testing.T, url string) *http.Request {
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// TestAttemptShare: with a deadline and no AttemptTimeout, an attempt
// takes all the time left by default; with AttemptShare 0.5 a server that
// accepts and never answers (a black hole) takes half of the time left,
// and the retry gets the rest, inside the caller's deadline. It runs in a
// synctest bubble against a base transport that is the black hole: its
// figures are exact, where over loopback a busy machine could take the
// time left before the retry started.
func TestAttemptShare(t *testing.T) {
	for _, tt := range []struct {
		share float64
		ends  []time.Duration // when each attempt ended, from the call's start
	}{{0.5, []time.Duration{200 * time.Millisecond, 400 * time.Millisecond}}, {0, []time.Duration{400 * time.Millisecond}}, {-1, []time.Duration{400 * time.Millisecond}}} {
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			var (
				mu   sync.Mutex
				ends []time.Duration
			)
			base := roundTripper(func(r *http.Request) (*http.Response, error) {
				<-r.Context().Done() // accepted, never answered
				mu.Lock()
				ends = append(ends, time.Since(start))
				mu.Unlock()
				return nil, r.Context().Err()
			})
			tr := &retryhttp.Transport{Policy: fast(2), Base: base, Budget: budget.Config{Ratio: -1}, AttemptShare: tt.share}
			ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
			defer cancel()
			_, err := do(t, tr, ctx, "GET", "http://service.test/", nil)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("share %v: error %v, want the caller's deadline", tt.share, err)
			}
			mu.Lock()
			defer mu.Unlock()
			if !slices.Equal(ends, tt.ends) {
				t.Errorf("share %v: attempts ended at %v, want %v", tt.share, ends, tt.ends)
			}
		})
	}
	tr := &retryhttp.Transport{AttemptShare: 1.5}
	if _, err := tr.RoundTrip(mustReq(t, "http://127.0.0.1:1/")); err == nil || !strings.Contains(err.Error(), "AttemptShare") {
		t.Errorf("AttemptShare 1.5: %v", err)
	}
}

// TestUpstreamOpenDoesNotStackBreakers: B is healthy, C is down, and B's
// breaker for C is open. B's answers then carry Upstream-Breaker: open, and
// A's breaker for B does not count them: it stays closed, and A does not
// retry them.
func TestUpstreamOpenDoesNotStackBreakers(t *testing.T) {
	c := newCounting(t, func(w http.ResponseWriter, r *http.Request, n int64) {
		http.Error(w, "C is down", http.StatusServiceUnavailable)
	})
	mid := newTransport(t, fast(1))
	mid.Breaker = &breaker.Config{MinCalls: 2, Cooldown: time.Minute}
	b := newCounting(t, func(w http.ResponseWriter, r *http.Request, n int64) {})
	b.Config.Handler = retryhttp.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.requests.Add(1)
		resp, err := do(t, mid, r.Context(), "GET", c.URL, nil)
		if err != nil {
			http.Error(w, "C unavailable", http.StatusServiceUnavailable)
			return
		}
		readAll(t, resp)
		w.WriteHeader(http.StatusBadGateway)
	}), deadline.Middleware{})
	for range 2 { // B's breaker for C opens
		resp, err := do(t, mid, context.Background(), "GET", c.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
	}
	var changes []breaker.State
	top := newTransport(t, fast(3))
	top.Breaker = &breaker.Config{MinCalls: 2, Cooldown: time.Minute}
	top.OnBreakerChange = func(_ string, _, to breaker.State, _ time.Time) { changes = append(changes, to) }
	var last *http.Response
	for range 10 {
		resp, err := do(t, top, context.Background(), "GET", b.URL, nil)
		if err != nil {
			t.Fatalf("A's call to B failed: %v (A's breaker opened on a healthy B?)", err)
		}
		readAll(t, resp)
		last = resp
	}
	if !wire.UpstreamOpen(last) {
		t.Fatalf("B's answer %d %v does not say its upstream is open", last.StatusCode, last.Header)
	}
	if len(changes) != 0 {
		t.Fatalf("A's breaker changed state %v; want it closed", changes)
	}
	// Every call was answered at once by B and not retried.
	if n, m := b.requests.Load(), c.requests.Load(); n != 10 || m != 2 {
		t.Fatalf("B saw %d requests, C %d; want 10 and 2", n, m)
	}
}
