package retryhttp_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/heed-go/heed/internal/benchpair"

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
	benchpair.Interleave(b, rt(off), rt(on))
}
