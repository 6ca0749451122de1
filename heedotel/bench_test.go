package heedotel_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/heed-go/heed/retry"
	"github.com/heed-go/heed/retryhttp"
)

// BenchmarkRetryDo is retry.Do's success path (one attempt), without an
// observer and with the adapter installed over a real SDK meter provider:
// the difference is the adapter's cost per attempt (one counter and two
// histograms).
func BenchmarkRetryDo(b *testing.B) {
	fn := func(context.Context) error { return nil }
	ctx := context.Background()
	b.Run("observer=none", func(b *testing.B) {
		p := retry.Policy{}
		b.ReportAllocs()
		for b.Loop() {
			retry.Do(ctx, p, fn)
		}
	})
	b.Run("observer=noop", func(b *testing.B) {
		p := retry.Policy{Observe: func(context.Context, retry.Event) {}}
		b.ReportAllocs()
		for b.Loop() {
			retry.Do(ctx, p, fn)
		}
	})
	b.Run("observer=heedotel", func(b *testing.B) {
		m, _ := newMetrics(b)
		p := retry.Policy{Observe: m.RetryObserver("op")}
		b.ReportAllocs()
		for b.Loop() {
			retry.Do(ctx, p, fn)
		}
	})
	b.Run("observer=heedotel/parallel", func(b *testing.B) {
		m, _ := newMetrics(b)
		p := retry.Policy{Observe: m.RetryObserver("op")}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				retry.Do(ctx, p, fn)
			}
		})
	})
}

// BenchmarkRetryObserver is the observer alone, per event.
func BenchmarkRetryObserver(b *testing.B) {
	m, _ := newMetrics(b)
	obs := m.RetryObserver("op")
	ctx := context.Background()
	for _, bc := range []struct {
		name string
		e    retry.Event
	}{
		{"done", retry.Event{Decision: retry.Decision{Action: retry.Done, Attempt: 1}, Duration: time.Millisecond}},
		{"retry", retry.Event{Decision: retry.Decision{Action: retry.Retry, Reason: retry.ReasonTransient,
			Outcome: retry.OutcomeTransient, Attempt: 1, Err: errReset, Delay: time.Millisecond}, Duration: time.Millisecond}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				obs(ctx, bc.e)
			}
		})
	}
}

// BenchmarkTransport is one HTTP call through retryhttp answered at once
// by an in-memory base (no network), without and with the adapter: the
// difference is the adapter's cost per call (a context value, a request
// copy, two counters and two histograms).
func BenchmarkTransport(b *testing.B) {
	ok := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Body: http.NoBody, Header: http.Header{}, Request: r}, nil
	})
	req, _ := http.NewRequest(http.MethodGet, "http://api.example/v1/users", nil)
	b.Run("observer=none", func(b *testing.B) {
		var rt http.RoundTripper = &retryhttp.Transport{Base: ok}
		b.ReportAllocs()
		for b.Loop() {
			resp, _ := rt.RoundTrip(req)
			resp.Body.Close()
		}
	})
	b.Run("observer=noop", func(b *testing.B) {
		var rt http.RoundTripper = &retryhttp.Transport{Base: ok, Policy: retry.Policy{Observe: func(context.Context, retry.Event) {}}}
		b.ReportAllocs()
		for b.Loop() {
			resp, _ := rt.RoundTrip(req)
			resp.Body.Close()
		}
	})
	b.Run("observer=heedotel", func(b *testing.B) {
		m, _ := newMetrics(b)
		rt := m.Transport(&retryhttp.Transport{Base: ok})
		b.ReportAllocs()
		for b.Loop() {
			resp, _ := rt.RoundTrip(req)
			resp.Body.Close()
		}
	})
}
