package compare

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go/failsafehttp"
	"github.com/hashicorp/go-retryablehttp"

	heedbackoff "github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/retry"
	"github.com/heed-go/heed/retryhttp"
)

// memTransport answers every request in memory, allocating one response
// as a real transport would: 200, or, with failEvery n, a 503 for every
// n-th request (the first of each n).
type memTransport struct {
	n         int
	failEvery int
}

func (m *memTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	m.n++
	code := http.StatusOK
	if m.failEvery > 0 && m.n%m.failEvery == 1 {
		code = http.StatusServiceUnavailable
	}
	return &http.Response{StatusCode: code, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
}

// httpClients are the clients compared, each an *http.Client over base
// that retries up to 3 attempts with zero delays:
//
//   - plain: no retries at all, the reference.
//   - go-retryablehttp: Client.StandardClient(), no logger, zero waits.
//   - heed: retryhttp.Transport, immediate retries, no retry budget (a
//     budget at its default 10% would refuse most retries of the 503 case;
//     the success case is the same with or without it), propagation
//     headers on (Retry-Attempt, and Timeout-Remaining had the request a
//     deadline).
//   - heed-nopropagate: the same with Propagate off, as for a third-party
//     API.
//   - failsafe-go: failsafehttp.NewRoundTripper with its HTTP retry policy,
//     3 attempts, zero delay.
func httpClients(base func() http.RoundTripper) []struct {
	name   string
	client *http.Client
} {
	rc := retryablehttp.NewClient()
	rc.HTTPClient = &http.Client{Transport: base()}
	rc.Logger = nil
	rc.RetryMax = 2
	rc.RetryWaitMin, rc.RetryWaitMax = 0, 0
	rc.Backoff = func(time.Duration, time.Duration, int, *http.Response) time.Duration { return 0 }

	p := retry.Policy{Attempts: 3, Backoff: heedbackoff.Schedule{Kind: heedbackoff.Immediate}}
	off := func(*http.Request) bool { return false }
	fs := failsafehttp.NewRetryPolicyBuilder().WithMaxAttempts(3).WithDelay(0).Build()
	return []struct {
		name   string
		client *http.Client
	}{
		{"plain", &http.Client{Transport: base()}},
		{"go-retryablehttp", rc.StandardClient()},
		{"heed", &http.Client{Transport: &retryhttp.Transport{Base: base(), Policy: p, Budget: budget.Config{Ratio: -1}}}},
		{"heed-nopropagate", &http.Client{Transport: &retryhttp.Transport{Base: base(), Policy: p, Budget: budget.Config{Ratio: -1}, Propagate: off}}},
		{"failsafe-go", &http.Client{Transport: failsafehttp.NewRoundTripper(base(), fs)}},
	}
}

func benchClient(b *testing.B, c *http.Client) {
	req, _ := http.NewRequestWithContext(context.Background(), "GET", "http://svc.internal/items/1", nil)
	req.Header.Set("Accept", "application/json")
	b.ReportAllocs()
	for b.Loop() {
		resp, err := c.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
		resp.Body.Close()
	}
}

// BenchmarkHTTPSuccess: one GET answered 200 by the in-memory transport,
// through http.Client, for each client.
func BenchmarkHTTPSuccess(b *testing.B) {
	for _, tt := range httpClients(func() http.RoundTripper { return &memTransport{} }) {
		b.Run(tt.name, func(b *testing.B) { benchClient(b, tt.client) })
	}
}

// BenchmarkHTTP503Then200: every call gets a 503, then a 200 on the
// immediate retry (plain, which does not retry, is left out).
func BenchmarkHTTP503Then200(b *testing.B) {
	for _, tt := range httpClients(func() http.RoundTripper { return &memTransport{failEvery: 2} }) {
		if tt.name == "plain" {
			continue
		}
		b.Run(tt.name, func(b *testing.B) { benchClient(b, tt.client) })
	}
}
