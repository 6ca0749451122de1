package retryhttp_test

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/heed-go/heed/retry"
	"github.com/heed-go/heed/retryhttp"
)

// BenchmarkHedgeCost measures what hedging costs a GET answered 200 at once
// when no hedge fires (a 1 s delay, never reached): retryhttp with its
// defaults (off) and the same with Policy.Hedge (on), alternating in
// chunks of 256 requests in one loop, so that both see the same machine
// (a busy one shifts separate runs by more than the difference). It
// reports each side's fastest chunk and median chunk, and their
// differences (on-off).
func BenchmarkHedgeCost(b *testing.B) {
	off := &retryhttp.Transport{Base: &memBase{}}
	on := &retryhttp.Transport{Base: &memBase{}, Policy: retry.Policy{Hedge: &retry.Hedge{Delay: time.Second}}}
	req, _ := http.NewRequestWithContext(context.Background(), "GET", "http://svc.internal/items/1", nil)
	req.Header.Set("Accept", "application/json")
	rt := func(t http.RoundTripper) func() {
		return func() {
			resp, err := t.RoundTrip(req)
			if err != nil {
				b.Fatal(err)
			}
			resp.Body.Close()
		}
	}
	interleave(b, rt(off), rt(on))
}

// interleave runs off and on alternately, chunk by chunk, b.N times in
// all, and reports the fastest and the median chunk of each (ns/op) and
// the differences on-off.
func interleave(b *testing.B, off, on func()) {
	const chunk = 256
	var offs, ons []float64
	b.ReportAllocs()
	for i := 0; i < b.N; i += 2 * chunk {
		for k, f := range []func(){off, on} {
			start := time.Now()
			for range chunk {
				f()
			}
			ns := float64(time.Since(start).Nanoseconds()) / chunk
			if k == 0 {
				offs = append(offs, ns)
			} else {
				ons = append(ons, ns)
			}
		}
	}
	slices.Sort(offs)
	slices.Sort(ons)
	med := func(s []float64) float64 { return s[len(s)/2] }
	b.ReportMetric(offs[0], "off-min-ns")
	b.ReportMetric(ons[0], "on-min-ns")
	b.ReportMetric(ons[0]-offs[0], "diff-min-ns")
	b.ReportMetric(med(offs), "off-med-ns")
	b.ReportMetric(med(ons), "on-med-ns")
	b.ReportMetric(med(ons)-med(offs), "diff-med-ns")
}
