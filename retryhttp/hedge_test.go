package retryhttp_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/retry"
	"github.com/heed-go/heed/retryhttp"
)

// A GET whose first attempt is slow is raced by a hedge after 20 ms; the
// hedge answers first, and the slow attempt is cancelled.
func ExampleTransport_hedge() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Retry-Attempt") == "1" {
			<-r.Context().Done() // a slow replica: no answer until the client leaves
			return
		}
		fmt.Fprintf(w, "answered by attempt %s", r.Header.Get("Retry-Attempt"))
	}))
	defer srv.Close()

	var last retry.Decision
	tr := &retryhttp.Transport{Policy: retry.Policy{
		Hedge:   &retry.Hedge{Delay: 20 * time.Millisecond},
		Observe: func(_ context.Context, e retry.Event) { last = e.Decision },
	}}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.Status, string(body))
	fmt.Println("hedges:", last.Hedges, "won:", last.HedgeWon)
	// Output:
	// 200 OK answered by attempt 2
	// hedges: 1 won: true
}

// TestHedgeSafeToRepeat: only a request that is safe to repeat is hedged:
// a GET, a keyed POST (both attempts with the one key and the same body),
// a POST whose key the Transport generates; never an unkeyed POST.
func TestHedgeSafeToRepeat(t *testing.T) {
	type seen struct{ key, body, attempt string }
	for _, tt := range []struct {
		name     string
		method   string
		key      string
		generate bool
		requests int
	}{
		{"GET", "GET", "", false, 2},
		{"unkeyed POST", "POST", "", false, 1},
		{"keyed POST", "POST", `"k-1"`, false, 2},
		{"generated key", "POST", "", true, 2},
		{"keyed POST, keyed retries off", "POST", `"k-1"`, false, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var (
				mu   sync.Mutex
				got  []seen
				slow = make(chan struct{})
			)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				mu.Lock()
				got = append(got, seen{r.Header.Get("Idempotency-Key"), string(b), r.Header.Get("Retry-Attempt")})
				first := len(got) == 1
				mu.Unlock()
				if first {
					select { // slow until the hedge has won, or 300 ms
					case <-r.Context().Done():
					case <-slow:
					case <-time.After(300 * time.Millisecond):
					}
				}
				io.WriteString(w, "ok")
			}))
			defer srv.Close()
			defer close(slow)
			tr := &retryhttp.Transport{
				Policy:          retry.Policy{Hedge: &retry.Hedge{Delay: 20 * time.Millisecond}},
				GenerateKey:     tt.generate,
				KeyedRetriesOff: strings.Contains(tt.name, "off"),
				Budgets:         new(budget.Registry),
			}
			defer tr.CloseIdleConnections()
			req, _ := http.NewRequest(tt.method, srv.URL, strings.NewReader("payload"))
			if tt.key != "" {
				req.Header.Set("Idempotency-Key", tt.key)
			}
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			mu.Lock()
			defer mu.Unlock()
			if len(got) != tt.requests {
				t.Fatalf("%d requests, want %d: %v", len(got), tt.requests, got)
			}
			for _, s := range got {
				if s.body != "payload" {
					t.Errorf("body %q, want payload", s.body)
				}
				if s.key != got[0].key {
					t.Errorf("keys %q and %q, want one key", got[0].key, s.key)
				}
			}
			if tt.requests == 2 {
				attempts := []string{got[0].attempt, got[1].attempt}
				slices.Sort(attempts)
				if attempts[0] != "1" || attempts[1] != "2" {
					t.Errorf("Retry-Attempt %v, want 1 and 2", attempts)
				}
				if (tt.key != "" || tt.generate) && got[0].key == "" {
					t.Error("keyed hedges without a key")
				}
			}
		})
	}
}
