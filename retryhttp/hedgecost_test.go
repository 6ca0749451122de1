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
//
// Measured with `go test -run XXX -bench BenchmarkHedgeCost -benchmem
// -benchtime 400000x ./retryhttp`, test binaries (go test -c) of main and
// of the change alternating, 8 runs each, load average about 22 on 2
// cores: on-off fastest chunk 87.9 to 104.7 ns (median of the runs 91.9),
// median chunk 119 to 203 ns; before issue 30's last round (the same
// runs) 137.8 to 147.3 (144.7), median chunk 211 to 302. 4 allocs, 881 B
// a call averaged over both sides (hedging on: 5 allocs, 896 B; off: 4,
// 864 B: the one more is the attempt's context, 32 B). What the round
// removed: copies of the attempt and of retry.Result through memory right
// after they were written (the loads stall: an attempt is written in
// place, the racer's attempt is a closure, not a method value, and Race's
// Result is a named result), the upstream attempt number looked up
// through the race's context on every attempt, and a scan of the retried
// statuses for a 2xx.
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
