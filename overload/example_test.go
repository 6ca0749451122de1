package overload_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/heed-go/heed/deadline"
	"github.com/heed-go/heed/overload"
)

// Protect a handler: deadline.Middleware adopts the caller's
// Timeout-Remaining, the limiter admits what the handlers can take and
// refuses the rest at once with 503 and Retry-After. Here the limit is
// fixed at one request and the queue is off, so that a second request
// arriving while the first runs is refused.
func ExampleLimiter_Wrap() {
	lim, _ := overload.New(overload.Config{Limit: 1, MaxQueue: -1})
	running, finish := make(chan struct{}), make(chan struct{})
	h := deadline.Middleware{}.Wrap(lim.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(running)
		<-finish
		fmt.Fprintln(w, "done")
	})))

	first := httptest.NewRecorder()
	go func() {
		h.ServeHTTP(first, httptest.NewRequest("GET", "/", nil))
	}()
	<-running

	second := httptest.NewRecorder()
	h.ServeHTTP(second, httptest.NewRequest("GET", "/", nil))
	fmt.Println(second.Code, "Retry-After:", second.Header().Get("Retry-After"))
	close(finish)
	// Output:
	// 503 Retry-After: 1
}

// Under overload a retry is refused before any first attempt waits:
// Retry-Attempt 2 or more never queues. A first attempt at the limit
// waits in the queue, and leaves it, never served, when its caller goes.
func ExampleLimiter_Acquire() {
	lim, _ := overload.New(overload.Config{Limit: 1})
	p, _ := lim.Acquire(context.Background(), 1) // takes the only place

	_, err := lim.Acquire(context.Background(), 2)
	var re *overload.RefusedError
	if errors.As(err, &re) {
		fmt.Println("retry:", re.Reason.Key())
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the caller has gone
	_, err = lim.Acquire(ctx, 1)
	fmt.Println("gone:", errors.Is(err, context.Canceled), errors.Is(err, overload.ErrOverloaded))

	p.Release()
	st := lim.Stats()
	fmt.Println("in flight:", st.InFlight, "queued:", st.Queued)
	// Output:
	// retry: retry
	// gone: true true
	// in flight: 0 queued: 0
}
