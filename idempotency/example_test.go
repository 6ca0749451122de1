package idempotency_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"time"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/idempotency"
	"github.com/heed-go/heed/retry"
	"github.com/heed-go/heed/retryhttp"
)

// A payment handler that must not run twice: the same POST sent twice with
// one Idempotency-Key charges once, and the second answer is the first
// one, replayed.
func Example() {
	var charges atomic.Int64
	charge := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := charges.Add(1) // the side effect: money moves
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"payment":"pay_%d","amount":1000}`, n)
	})

	mw := idempotency.Middleware{
		Store:    idempotency.NewMemoryStore(), // sqlitestore or pgstore in production
		Required: true,                         // no key, no payment
		Principal: func(r *http.Request) string {
			return r.Header.Get("X-Account") // your authenticated user
		},
	}
	mux := http.NewServeMux()
	mux.Handle("POST /payments", mw.Wrap(charge))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	for range 2 {
		req, _ := http.NewRequest("POST", srv.URL+"/payments", strings.NewReader(`{"amount":1000}`))
		req.Header.Set("X-Account", "acct_42")
		req.Header.Set("Idempotency-Key", `"7c4a8d09-ca37-4f2b-9e5b-2c1f0e6a3b21"`)
		resp, err := srv.Client().Do(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Println(resp.StatusCode, string(body), "replayed:", resp.Header.Get("Idempotent-Replayed") == "true")
	}
	fmt.Println("charges:", charges.Load())
	// Output:
	// 201 {"payment":"pay_1","amount":1000} replayed: false
	// 201 {"payment":"pay_1","amount":1000} replayed: true
	// charges: 1
}

// The client and the server together. The retryhttp client gives the POST
// an Idempotency-Key and may therefore repeat it; the server deduplicates
// by that key. Here the connection dies after the server has charged but
// before the answer gets out: the client cannot know whether the payment
// happened, retries with the same key, and gets the stored answer. The
// customer is charged once.
func Example_retryhttp() {
	// Server: the payment handler behind the middleware.
	var charges atomic.Int64
	payments := idempotency.Middleware{Store: idempotency.NewMemoryStore(), Required: true}.Wrap(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n := charges.Add(1)
			w.WriteHeader(http.StatusCreated)
			fmt.Fprintf(w, "payment %d", n)
		}))
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if requests.Add(1) == 1 { // the network fails the first answer
			payments.ServeHTTP(httptest.NewRecorder(), r)
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.(*net.TCPConn).SetLinger(0) // reset
			conn.Close()
			return
		}
		payments.ServeHTTP(w, r)
	}))
	defer srv.Close()

	// Client: keyed retries (GenerateKey adds a random key to every POST
	// that has none, the same for all its attempts).
	tr := &retryhttp.Transport{
		Policy:      retry.Policy{Attempts: 3, Backoff: backoff.Schedule{Base: 10 * time.Millisecond}},
		GenerateKey: true,
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/payments", strings.NewReader(`{"amount":1000}`))
	resp, err := client.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, string(body), "replayed:", resp.Header.Get("Idempotent-Replayed"))
	fmt.Println("requests:", requests.Load(), "charges:", charges.Load())
	// Output:
	// 201 payment 1 replayed: true
	// requests: 2 charges: 1
}

// A route that requires a key answers a request without one with 400 and
// an application/problem+json body; the handler does not run.
func ExampleMiddleware_required() {
	h := idempotency.Middleware{Store: idempotency.NewMemoryStore(), Required: true}.Wrap(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { panic("not reached") }))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("POST", "/payments", strings.NewReader("{}")))
	fmt.Println(w.Code, w.Header().Get("Content-Type"))
	fmt.Print(w.Body.String())
	// Output:
	// 400 application/problem+json
	// {"type":"about:blank","title":"Bad Request","status":400,"detail":"this operation requires an Idempotency-Key header; send a new random key (a UUID) with each operation and the same key when you retry it","code":"idempotency_key_missing"}
}

// The same key sent again with another payload is a client bug: 422.
func ExampleMiddleware_mismatch() {
	h := idempotency.Middleware{Store: idempotency.NewMemoryStore()}.Wrap(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusCreated) }))
	for _, amount := range []string{"1000", "9999"} {
		req := httptest.NewRequest("POST", "/payments", strings.NewReader(`{"amount":`+amount+`}`))
		req.Header.Set("Idempotency-Key", "order-7")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		fmt.Println(amount, w.Code)
	}
	// Output:
	// 1000 201
	// 9999 422
}

// Both forms of the header name the same key.
func ExampleParseKey() {
	for _, v := range []string{`"8e03978e-40d5-43e8"`, `8e03978e-40d5-43e8`, `"unterminated`} {
		key, err := idempotency.ParseKey(v)
		fmt.Printf("%q %v\n", key, err)
	}
	// Output:
	// "8e03978e-40d5-43e8" <nil>
	// "8e03978e-40d5-43e8" <nil>
	// "" idempotency: Idempotency-Key "\"unterminated": unterminated string
}

// Expired keys are deleted by a Reaper in the background, or by calling
// Reap from a scheduled job.
func ExampleReaper() {
	store := idempotency.NewMemoryStore()
	reaper := &idempotency.Reaper{Store: store, Interval: time.Hour}
	reaper.Start()
	defer reaper.Stop() // waits for its goroutine

	n, err := idempotency.Reap(context.Background(), store, time.Now())
	fmt.Println(n, err)
	// Output: 0 <nil>
}
