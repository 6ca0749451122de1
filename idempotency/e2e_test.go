package idempotency_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/idempotency"
	"github.com/heed-go/heed/retry"
	"github.com/heed-go/heed/retryhttp"
)

// The whole story: a retryhttp client sends a keyed POST; the server
// receives it and charges, but the connection is reset before the response
// gets out, so the client cannot know whether it was processed. The client
// retries with the same key, the middleware answers with the stored
// response, and the customer was charged once.
func TestEndToEndRetryAfterReset(t *testing.T) {
	for _, generated := range []bool{true, false} {
		name := map[bool]string{true: "generated key", false: "caller's key"}[generated]
		t.Run(name, func(t *testing.T) {
			var charges atomic.Int64
			var seen atomic.Int64
			pay := idempotency.Middleware{Store: idempotency.NewMemoryStore(), Required: true}.Wrap(
				http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					body, _ := io.ReadAll(r.Body)
					if string(body) != `{"amount":1000}` {
						t.Errorf("handler got body %q", body)
					}
					n := charges.Add(1)
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusCreated)
					io.WriteString(w, `{"charge":`+string(rune('0'+n))+`}`)
				}))
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if seen.Add(1) == 1 {
					// Processed in full, then the connection dies.
					pay.ServeHTTP(httptest.NewRecorder(), r)
					c, _, err := w.(http.Hijacker).Hijack()
					if err != nil {
						t.Error(err)
						return
					}
					c.(*net.TCPConn).SetLinger(0)
					c.Close()
					return
				}
				pay.ServeHTTP(w, r)
			}))
			defer srv.Close()

			tr := &retryhttp.Transport{
				Policy: retry.Policy{
					Attempts: 3,
					Backoff:  backoff.Schedule{Kind: backoff.Constant, Base: time.Millisecond, Jitter: backoff.NoJitter},
				},
				GenerateKey: generated,
				Budget:      budget.Config{Ratio: -1},
			}
			defer tr.CloseIdleConnections()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/charges", strings.NewReader(`{"amount":1000}`))
			if !generated {
				req.Header.Set("Idempotency-Key", `"order-7-payment"`)
			}
			resp, err := (&http.Client{Transport: tr}).Do(req)
			if err != nil {
				t.Fatalf("POST: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated || string(body) != `{"charge":1}` {
				t.Errorf("response %d %q, want 201 {\"charge\":1}", resp.StatusCode, body)
			}
			if resp.Header.Get(idempotency.ReplayedHeader) != "true" {
				t.Errorf("the answer to the retry was not a replay: %v", resp.Header)
			}
			if n := seen.Load(); n != 2 {
				t.Errorf("server saw %d requests, want 2 (the original and one retry)", n)
			}
			if n := charges.Load(); n != 1 {
				t.Errorf("charged %d times, want once", n)
			}
		})
	}
}
