package retryhttp_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heed-go/heed/breaker"
	"github.com/heed-go/heed/deadline"
	"github.com/heed-go/heed/internal/wire"
	"github.com/heed-go/heed/retry"
	"github.com/heed-go/heed/retryhttp"
)

// funcBase is an in-memory base transport that calls f for each attempt.
type funcBase func(r *http.Request) (*http.Response, error)

func (f funcBase) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func status(r *http.Request, code int, hdr ...string) *http.Response {
	resp := &http.Response{StatusCode: code, Header: http.Header{}, Body: http.NoBody, Request: r}
	for i := 0; i+1 < len(hdr); i += 2 {
		resp.Header.Set(hdr[i], hdr[i+1])
	}
	return resp
}

// The header of each attempt is a copy, whatever the size of the caller's
// header (cloned when small, copied field by field when larger), and holds
// every field of the caller's plus the ones the transport adds.
func TestHeaderCopyWhateverItsSize(t *testing.T) {
	for _, n := range []int{-1, 0, 1, 5, 6, 8, 20} { // -1: a nil Header
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var sent *http.Request
			tr := &retryhttp.Transport{
				Base:        funcBase(func(r *http.Request) (*http.Response, error) { sent = r; return status(r, 200), nil }),
				GenerateKey: true,
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "POST", "http://svc.internal/x", http.NoBody)
			if n < 0 {
				req.Header = nil
			}
			for i := range max(n, 0) {
				req.Header.Set(fmt.Sprintf("X-F%d", i), "v")
			}
			before := fmt.Sprint(req.Header)
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if got := fmt.Sprint(req.Header); got != before {
				t.Errorf("caller's header changed: %s, was %s", got, before)
			}
			h := sent.Header
			if want := max(n, 0) + 3; len(h) != want {
				t.Errorf("attempt header has %d fields, want %d: %v", len(h), want, h)
			}
			for i := range max(n, 0) {
				if h.Get(fmt.Sprintf("X-F%d", i)) != "v" {
					t.Errorf("X-F%d missing: %v", i, h)
				}
			}
			if h.Get(wire.RetryAttemptHeader) != "1" || h.Get(wire.Header) == "" || h.Get(retryhttp.IdempotencyKeyHeader) == "" {
				t.Errorf("added fields missing: %v", h)
			}
			sent.Header.Set("X-Later", "1") // the base's copy is its own
			if req.Header.Get("X-Later") != "" {
				t.Error("the attempt shares the caller's header map")
			}
		})
	}
}

// An idempotent method's Idempotency-Key is read only when a 409 needs it,
// and still makes a 409 with Retry-After worth a retry.
func TestKeyedConflictIdempotentMethod(t *testing.T) {
	for _, key := range []bool{true, false} {
		t.Run(fmt.Sprint("key=", key), func(t *testing.T) {
			n := 0
			tr := &retryhttp.Transport{
				Policy: fast(3),
				Base: funcBase(func(r *http.Request) (*http.Response, error) {
					n++
					if n == 1 {
						return status(r, http.StatusConflict, "Retry-After", "0"), nil
					}
					return status(r, http.StatusOK), nil
				}),
			}
			req, _ := http.NewRequest("PUT", "http://svc.internal/x", nil)
			if key {
				req.Header.Set(retryhttp.IdempotencyKeyHeader, `"k-1"`)
			}
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			want := 1
			if key {
				want = 2
			}
			if n != want {
				t.Errorf("%d attempts, want %d", n, want)
			}
		})
	}
}

// Each host has its own breaker (and budget), whichever host was seen
// last, including when several hosts are called at once.
func TestHostStateIsPerHost(t *testing.T) {
	tr := &retryhttp.Transport{
		Policy:  fast(1),
		Breaker: &breaker.Config{MinCalls: 2, Cooldown: time.Minute},
		Base: funcBase(func(r *http.Request) (*http.Response, error) {
			if r.URL.Host == "down.internal" {
				return status(r, http.StatusServiceUnavailable), nil
			}
			return status(r, http.StatusOK), nil
		}),
	}
	get := func(host string) error {
		req, _ := http.NewRequest("GET", "http://"+host+"/x", nil)
		resp, err := tr.RoundTrip(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	// Alternate, so that down.internal is not the host created last.
	for range 2 {
		if err := get("down.internal"); err != nil {
			t.Fatal(err)
		}
		if err := get("up.internal"); err != nil {
			t.Fatal(err)
		}
	}
	if err := get("down.internal"); err == nil {
		t.Error("down.internal's breaker is not open")
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				if err := get(fmt.Sprintf("up%d.internal", (g+i)%4)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := get("up.internal"); err != nil {
		t.Errorf("up.internal: %v", err)
	}
}

// opaqueReader is a body that http.NewRequest gives no GetBody.
type opaqueReader struct{ io.Reader }

// A body without GetBody is buffered (so that it can be sent again) unless
// a caller up the chain owns retries: then it is sent once, as it is.
func TestBodyBufferedUnlessUpstreamOwns(t *testing.T) {
	for _, owned := range []bool{false, true} {
		t.Run(fmt.Sprint("owned=", owned), func(t *testing.T) {
			var sent *http.Request
			var body string
			tr := &retryhttp.Transport{
				Policy: fast(3),
				Base: funcBase(func(r *http.Request) (*http.Response, error) {
					sent = r
					b, _ := io.ReadAll(r.Body)
					r.Body.Close()
					body = string(b)
					return status(r, http.StatusOK), nil
				}),
			}
			ctx := context.Background()
			if owned {
				ctx = deadline.WithUpstreamOwner(ctx)
			}
			req, _ := http.NewRequestWithContext(ctx, "PUT", "http://svc.internal/x", opaqueReader{strings.NewReader("payload")})
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if body != "payload" {
				t.Errorf("body %q", body)
			}
			if buffered := sent.GetBody != nil; buffered == owned {
				t.Errorf("buffered %v with upstream owner %v", buffered, owned)
			}
		})
	}
}

// OnBreakerChange tells the hosts' breakers apart, and the shared
// OnStateChange still sees every change.
func TestOnBreakerChangeNamesTheHost(t *testing.T) {
	type change struct {
		host     string
		from, to breaker.State
	}
	var mu sync.Mutex
	var changes []change
	shared := 0
	tr := &retryhttp.Transport{
		Base: funcBase(func(r *http.Request) (*http.Response, error) {
			if r.URL.Host == "down.internal" {
				return status(r, http.StatusBadGateway), nil
			}
			return status(r, http.StatusOK), nil
		}),
		Policy: retry.Policy{Attempts: 1},
		Breaker: &breaker.Config{MinCalls: 2, Cooldown: time.Hour,
			OnStateChange: func(from, to breaker.State, at time.Time) { mu.Lock(); shared++; mu.Unlock() }},
		OnBreakerChange: func(host string, from, to breaker.State, at time.Time) {
			mu.Lock()
			changes = append(changes, change{host, from, to})
			mu.Unlock()
		},
	}
	for range 3 {
		for _, host := range []string{"up.internal", "down.internal"} {
			req, _ := http.NewRequest("GET", "http://"+host+"/x", nil)
			if resp, err := tr.RoundTrip(req); err == nil {
				resp.Body.Close()
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	want := []change{{"down.internal", breaker.Closed, breaker.Open}}
	if fmt.Sprint(changes) != fmt.Sprint(want) || shared != 1 {
		t.Fatalf("changes %v, shared %d; want %v and 1", changes, shared, want)
	}
}
