package compare

import (
	"net/http"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go/failsafehttp"
	"github.com/failsafe-go/failsafe-go/hedgepolicy"

	heedbackoff "github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/retry"
	"github.com/heed-go/heed/retryhttp"
)

// BenchmarkHTTPHedgeSuccess: what hedging costs a GET answered 200 at
// once by the in-memory transport, when no hedge fires (the delay is not
// reached), side by side:
//
//   - heed: retryhttp.Transport as in BenchmarkHTTPSuccess (3 attempts,
//     immediate retries, no budget), no hedging: the reference.
//   - heed-hedge: the same with retry.Hedge{Delay: 1s}: a context for the
//     attempt (made cancellable only when asked for Done, as
//     http.Transport does; memTransport never asks) and its race in the
//     hedge's timer list.
//   - heed-hedge-adaptive: retry.Hedge{} (the delay learnt from the
//     latencies, p95 and at least 1 ms): the same plus recording each
//     latency.
//   - failsafe-go: failsafehttp.NewRoundTripper with its HTTP retry policy
//     (3 attempts, zero delay).
//   - failsafe-go-hedge: the same with hedgepolicy.NewWithDelay(1s) outside
//     the retry policy.
func BenchmarkHTTPHedgeSuccess(b *testing.B) {
	p := retry.Policy{Attempts: 3, Backoff: heedbackoff.Schedule{Kind: heedbackoff.Immediate}}
	hedged, adaptive := p, p
	hedged.Hedge = &retry.Hedge{Delay: time.Second}
	adaptive.Hedge = &retry.Hedge{}
	heed := func(p retry.Policy) *http.Client {
		return &http.Client{Transport: &retryhttp.Transport{Base: &memTransport{}, Policy: p, Budget: budget.Config{Ratio: -1}}}
	}
	fs := failsafehttp.NewRetryPolicyBuilder().WithMaxAttempts(3).WithDelay(0).Build()
	fsHedge := hedgepolicy.NewWithDelay[*http.Response](time.Second)
	for _, tt := range []struct {
		name   string
		client *http.Client
	}{
		{"heed", heed(p)},
		{"heed-hedge", heed(hedged)},
		{"heed-hedge-adaptive", heed(adaptive)},
		{"failsafe-go", &http.Client{Transport: failsafehttp.NewRoundTripper(&memTransport{}, fs)}},
		{"failsafe-go-hedge", &http.Client{Transport: failsafehttp.NewRoundTripper(&memTransport{}, fs, fsHedge)}},
	} {
		b.Run(tt.name, func(b *testing.B) { benchClient(b, tt.client) })
	}
}
