package retryhttp_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/retry"
	"github.com/heed-go/heed/retryhttp"
)

// memBase is an in-memory base transport: no network, one response
// allocated per request, as a real transport would. Every failEvery-th
// request (when set) gets a 503.
type memBase struct {
	n         int
	failEvery int
}

func (m *memBase) RoundTrip(r *http.Request) (*http.Response, error) {
	m.n++
	code := http.StatusOK
	if m.failEvery > 0 && m.n%m.failEvery == 1 {
		code = http.StatusServiceUnavailable
	}
	return &http.Response{StatusCode: code, Body: http.NoBody, Request: r}, nil
}

func benchRoundTrip(b *testing.B, rt http.RoundTripper) {
	req, _ := http.NewRequestWithContext(context.Background(), "GET", "http://svc.internal/items/1", nil)
	req.Header.Set("Accept", "application/json")
	b.ReportAllocs()
	for b.Loop() {
		resp, err := rt.RoundTrip(req)
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
	}
}

// BenchmarkSuccess compares one successful request through the bare base
// transport with the same request through retryhttp.Transport (default
// policy, per-host retry budget on, Retry-Attempt sent).
func BenchmarkSuccess(b *testing.B) {
	b.Run("base", func(b *testing.B) {
		benchRoundTrip(b, &memBase{})
	})
	b.Run("retryhttp", func(b *testing.B) {
		benchRoundTrip(b, &retryhttp.Transport{Base: &memBase{}})
	})
	b.Run("retryhttp-deadline", func(b *testing.B) {
		// With a deadline: an attempt context and Timeout-Remaining too.
		tr := &retryhttp.Transport{Base: &memBase{}}
		ctx, cancel := context.WithTimeout(context.Background(), 1<<40)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://svc.internal/items/1", nil)
		b.ReportAllocs()
		for b.Loop() {
			resp, err := tr.RoundTrip(req)
			if err != nil {
				b.Fatal(err)
			}
			resp.Body.Close()
		}
	})
}

// BenchmarkRetry503Then200: every request gets a 503, then a 200 on the
// immediate retry.
func BenchmarkRetry503Then200(b *testing.B) {
	p := retry.Policy{Backoff: backoff.Schedule{Kind: backoff.Immediate}}
	benchRoundTrip(b, &retryhttp.Transport{Base: &memBase{failEvery: 2}, Policy: p, NoBudget: true})
}
