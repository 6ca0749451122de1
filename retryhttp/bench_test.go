package retryhttp_test

import (
	"context"
	"maps"
	"net/http"
	"testing"
	"time"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/budget"
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

// floorTransport is the cheapest wrapper that meets the functional
// requirements of retryhttp.Transport's success path: it must not modify
// the caller's request (RoundTripper contract), so it sends a shallow copy
// of it, and the copy needs its own header map because every attempt
// carries "Retry-Attempt: N". It does nothing else: no policy, budget,
// idempotency check, deadline or body handling. Its cost over the bare base
// (one *http.Request plus a cloned non-empty map, which is two allocations
// since Go 1.24's swiss maps: the map header and its group) is a lower
// bound for any conforming transport.
type floorTransport struct{ base http.RoundTripper }

var floorAttempt = []string{"1"} // shared, as the real transport does

func (f *floorTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := new(http.Request)
	*r = *req
	r.Header = maps.Clone(req.Header)
	if r.Header == nil {
		r.Header = make(http.Header, 1)
	}
	r.Header["Retry-Attempt"] = floorAttempt
	return f.base.RoundTrip(r)
}

// BenchmarkSuccess measures one successful GET answered 200 by the
// in-memory memBase, four ways, side by side in one run:
//
//   - base: the bare memBase, the reference (1 allocation: its response).
//   - floor: floorTransport, the lower bound of any conforming wrapper: a
//     copy of the request and of its header, plus Retry-Attempt (+3
//     allocations: the request, and the map's header and group).
//   - retryhttp: retryhttp.Transport with its defaults: default policy,
//     per-host retry budget on (so one clock read and one budget count per
//     request), Retry-Attempt sent, no deadline. Same allocations as floor.
//   - retryhttp-hedge: retryhttp with Policy.Hedge (a 1 s delay, never
//     reached: no hedge is sent); the difference to retryhttp is what
//     hedging costs a call that needs no hedge (+1 allocation, the first
//     attempt's context, 32 B; memBase never asks for its Done, so it is
//     never made cancellable). BenchmarkHedgeCost runs both alternating
//     in one loop, which a busy machine disturbs less; its comment has
//     the figures.
//   - retryhttp-nopropagate: retryhttp with Propagate off: nothing is
//     added to the request, so the base gets the caller's request itself
//     and the transport adds no allocation to base's.
//   - retryhttp-deadline: retryhttp with a deadline on the request's context
//     (and no Accept header), which adds Timeout-Remaining: its value and
//     the []string holding it, 2 more allocations. The caller's deadline is
//     the attempt's, so no attempt context is made.
//   - retryhttp-deadline-share: the same with AttemptShare 0.5 (half of the
//     time left per attempt while a retry may follow): an attempt context
//     with its timer and the body wrapper that releases it; the difference
//     to retryhttp-deadline is what the share costs.
//
// The target is retryhttp at most +100 ns and +2 allocations over
// base; floor shows how much of that the contract alone uses (with Go 1.24+
// maps, already +3 allocations). The difference retryhttp - floor is the
// transport's own work, which allocates nothing.
func BenchmarkSuccess(b *testing.B) {
	b.Run("base", func(b *testing.B) {
		benchRoundTrip(b, &memBase{})
	})
	b.Run("floor", func(b *testing.B) {
		benchRoundTrip(b, &floorTransport{base: &memBase{}})
	})
	b.Run("retryhttp", func(b *testing.B) {
		benchRoundTrip(b, &retryhttp.Transport{Base: &memBase{}})
	})
	b.Run("retryhttp-hedge", func(b *testing.B) {
		// Hedging on, no hedge fired (the delay is never reached).
		benchRoundTrip(b, &retryhttp.Transport{Base: &memBase{}, Policy: retry.Policy{Hedge: &retry.Hedge{Delay: time.Second}}})
	})
	b.Run("retryhttp-nopropagate", func(b *testing.B) {
		benchRoundTrip(b, &retryhttp.Transport{Base: &memBase{}, Propagate: func(*http.Request) bool { return false }})
	})
	deadline := func(b *testing.B, tr *retryhttp.Transport) {
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
	}
	b.Run("retryhttp-deadline", func(b *testing.B) {
		deadline(b, &retryhttp.Transport{Base: &memBase{}})
	})
	b.Run("retryhttp-deadline-share", func(b *testing.B) {
		deadline(b, &retryhttp.Transport{Base: &memBase{}, AttemptShare: 0.5})
	})
}

// BenchmarkRetry503Then200: every request gets a 503, then a 200 on the
// immediate retry.
func BenchmarkRetry503Then200(b *testing.B) {
	p := retry.Policy{Backoff: backoff.Schedule{Kind: backoff.Immediate}}
	benchRoundTrip(b, &retryhttp.Transport{Base: &memBase{failEvery: 2}, Policy: p, Budget: budget.Config{Ratio: -1}})
}
