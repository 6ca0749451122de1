package retryhttp_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/heed-go/heed/retryhttp"
)

// flaky503 answers 503 to the first two requests of each path, then 200.
func flaky503(t *testing.T) (*httptest.Server, func() int) {
	var mu sync.Mutex
	seen := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.URL.Path]++
		n := seen[r.URL.Path]
		mu.Unlock()
		if n <= 2 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	return srv, func() int {
		mu.Lock()
		defer mu.Unlock()
		total := 0
		for _, n := range seen {
			total += n
		}
		return total
	}
}

// TestColdStart: a new process's zero Transport calling 5 endpoints of one
// host that each answer 503, 503, 200 gets all 5 through, and a keyed POST
// right after still gets its retry: the host's budget starts full, and
// each retry that succeeds pays for more. (Until the budget was a bucket,
// 0 of the 5 succeeded, in 6 requests: it started empty, with a floor of
// one retry per 10 s.)
func TestColdStart(t *testing.T) {
	srv, requests := flaky503(t)
	tr := &retryhttp.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	for i := range 5 {
		resp, err := client.Get(srv.URL + "/item/" + string(rune('a'+i)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("call %d: %s after %d requests in all, want 200", i+1, resp.Status, requests())
		}
	}
	if n := requests(); n != 15 {
		t.Fatalf("%d requests for 5 calls, want 15", n)
	}
	req, _ := http.NewRequest("POST", srv.URL+"/orders", strings.NewReader(`{"sku": 1}`))
	req.Header.Set("Idempotency-Key", "cold-start-1")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("keyed POST after the 5 calls: %s, want 200", resp.Status)
	}
}

// TestColdStartConcurrent measures the same 5 calls made at once: their
// first retries all fail together and take the bucket's 5, so whether a
// second retry finds one depends on the successes that come back before it
// asks (0 to 3 of 5 through in our runs). It asserts what the bucket
// guarantees: its 5 retries granted, and no more than the 15 requests the
// calls ask for.
func TestColdStartConcurrent(t *testing.T) {
	srv, requests := flaky503(t)
	tr := &retryhttp.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for i := range 5 {
		wg.Go(func() {
			resp, err := client.Get(srv.URL + "/item/" + string(rune('a'+i)))
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				mu.Lock()
				ok++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	t.Logf("%d of 5 concurrent calls through, %d requests", ok, requests())
	if n := requests(); n < 10 || n > 15 {
		t.Fatalf("%d of 5 calls through in %d requests", ok, requests())
	}
}
