package heedgrpc_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/deadline"
	"github.com/heed-go/heed/heedgrpc"
	"github.com/heed-go/heed/retryhttp"
)

// grpcRetry3 is gRPC's own retry policy of 3 attempts on UNAVAILABLE, as a
// service config, with short backoffs so that the test is quick.
const grpcRetry3 = `{"methodConfig":[{"name":[{"service":"heedtest.Echo"}],"retryPolicy":{
	"maxAttempts":3,"initialBackoff":"0.001s","maxBackoff":"0.002s","backoffMultiplier":2,
	"retryableStatusCodes":["UNAVAILABLE"]}}]}`

// layer is how every service of a chain, and the user's client, are set up.
type layer struct {
	name   string
	client func() []grpc.DialOption // a new client per service, as in separate processes
	server []grpc.ServerOption
	users  int     // user calls
	max    float64 // the most calls reaching C per user call
	min    float64 // the least
}

// TestChainLoad: three gRPC services A -> B -> C on loopback, C failing
// every call UNAVAILABLE, a bounded load of user calls (a fixed number, a
// few at a time), each user calling A with a deadline. It counts the calls
// reaching C per user call: with heed's interceptors at their defaults on
// every service and the user's client, one layer owns the retries and the
// retry budget bounds them; with gRPC's own retry policy of 3 attempts at
// every layer they multiply to (1+2)^3 = 27; with ownership but no budget
// they are the owner's 3 attempts.
func TestChainLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("a load test")
	}
	heedClient := func(newClient func() *heedgrpc.Client) func() []grpc.DialOption {
		return func() []grpc.DialOption { return newClient().DialOptions() }
	}
	for _, l := range []layer{
		{"heed defaults", heedClient(func() *heedgrpc.Client { return &heedgrpc.Client{} }), heedgrpc.Server{}.ServerOptions(), 300, 1.2, 1},
		{"grpc retry policy, 3 attempts per layer", func() []grpc.DialOption {
			return []grpc.DialOption{grpc.WithDefaultServiceConfig(grpcRetry3)}
		}, nil, 20, 27, 27},
		{"heed ownership, no budget", heedClient(func() *heedgrpc.Client { return &heedgrpc.Client{Policy: fast(3), Budget: budget.Config{Ratio: -1}} }), heedgrpc.Server{}.ServerOptions(), 50, 3, 3},
	} {
		t.Run(l.name, func(t *testing.T) {
			var cHits atomic.Int64
			c := &echo{unary: func(context.Context, string, int64, string) (string, error) {
				cHits.Add(1)
				return "", status.Error(codes.Unavailable, "C is down")
			}}
			next := tcpServer(t, c, l.server...)
			for range 2 { // B, then A
				cc := dial(t, next, l.client()...)
				fwd := &echo{unary: func(ctx context.Context, _ string, _ int64, in string) (string, error) {
					return invoke(ctx, cc, mGet, in)
				}}
				next = tcpServer(t, fwd, l.server...)
			}
			user := dial(t, next, l.client()...)
			const workers = 4
			var wg sync.WaitGroup
			calls := make(chan int)
			var served atomic.Int64
			for w := 0; w < workers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range calls {
						ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
						if _, err := invoke(ctx, user, mGet, "x"); err == nil {
							served.Add(1)
						}
						cancel()
					}
				}()
			}
			start := time.Now()
			for i := 0; i < l.users; i++ {
				calls <- i
			}
			close(calls)
			wg.Wait()
			per := float64(cHits.Load()) / float64(l.users)
			t.Logf("%s: %d user calls in %v, %d calls reached C: %.2f per user call", l.name, l.users, time.Since(start).Round(time.Millisecond), cHits.Load(), per)
			if per > l.max || per < l.min {
				t.Errorf("%.2f calls reached C per user call, want in [%v, %v]", per, l.min, l.max)
			}
			if served.Load() != 0 {
				t.Errorf("%d calls served while C is down", served.Load())
			}
		})
	}
}

// TestMixedChain: HTTP -> gRPC -> HTTP keeps one retry owner: the user's
// retryhttp client owns the retries, service 1 (HTTP) calls service 2
// (gRPC) once, passing the claim on, and service 2 calls service 3 (HTTP,
// failing 503) once: service 3 sees the user's 3 attempts, not 3 x 3 x 3.
func TestMixedChain(t *testing.T) {
	var hits3 atomic.Int64
	s3 := httptest.NewServer(retryhttp.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits3.Add(1)
		http.Error(w, "3 is down", http.StatusServiceUnavailable)
	}), deadline.Middleware{}))
	t.Cleanup(s3.Close)

	httpClient := func() *http.Client {
		tr := &retryhttp.Transport{Policy: fast(3), Budget: budget.Config{Ratio: -1}}
		t.Cleanup(tr.CloseIdleConnections)
		return &http.Client{Transport: tr}
	}
	c2 := httpClient()
	s2 := &echo{unary: func(ctx context.Context, _ string, _ int64, _ string) (string, error) {
		req, _ := http.NewRequestWithContext(ctx, "GET", s3.URL, nil)
		resp, err := c2.Do(req)
		if err != nil {
			return "", status.Error(codes.Unavailable, "service 3: "+retryhttp.RedactError(err).Error())
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return "", status.Error(codes.Unavailable, fmt.Sprintf("service 3 answered %d", resp.StatusCode))
		}
		return "ok", nil
	}}
	addr2 := tcpServer(t, s2, heedgrpc.Server{}.ServerOptions()...)
	hc := &heedgrpc.Client{Policy: fast(3), Budget: budget.Config{Ratio: -1}}
	cc2 := dial(t, addr2, hc.DialOptions()...)
	s1 := httptest.NewServer(retryhttp.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := invoke(r.Context(), cc2, mGet, "x"); err != nil {
			http.Error(w, "service 2 failed", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok"))
	}), deadline.Middleware{}))
	t.Cleanup(s1.Close)

	user := httpClient()
	const calls = 5
	for i := 0; i < calls; i++ {
		req, _ := http.NewRequestWithContext(ctxTimeout(t, 10*time.Second), "GET", s1.URL, nil)
		resp, err := user.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("status %d", resp.StatusCode)
		}
	}
	if got := hits3.Load(); got != 3*calls {
		t.Errorf("service 3 saw %d calls for %d user calls, want %d (one owner)", got, calls, 3*calls)
	}
	if got := s2.Calls(mGet); got != 3*calls {
		t.Errorf("service 2 saw %d calls, want %d", got, 3*calls)
	}
}
