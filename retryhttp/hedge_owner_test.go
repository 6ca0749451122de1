package retryhttp_test

import (
	"context"
	"github.com/heed-go/heed/deadline"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heed-go/heed/retry"
	"github.com/heed-go/heed/retryhttp"
)

// TestHedgeNotUnderUpstreamOwner: a request whose caller owns the retries
// (deadline.WithUpstreamOwner) is never hedged, however slow its attempt.
func TestHedgeNotUnderUpstreamOwner(t *testing.T) {
	var calls atomic.Int64
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			<-release
		}
	}))
	defer srv.Close()
	tr := &retryhttp.Transport{Policy: retry.Policy{Hedge: &retry.Hedge{Delay: time.Millisecond}}}
	defer tr.CloseIdleConnections()
	ctx := deadline.WithUpstreamOwner(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
	// The first attempt is held well past the hedge delay: a hedge, if one
	// were sent, would be the second call.
	time.AfterFunc(100*time.Millisecond, func() { close(release) })
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if n := calls.Load(); n != 1 {
		t.Fatalf("server saw %d attempts under an upstream owner, want 1 (no hedge)", n)
	}
}
