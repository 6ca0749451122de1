package heedgrpc_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/heed-go/heed/breaker"
	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/deadline"
	"github.com/heed-go/heed/heedgrpc"
	"github.com/heed-go/heed/retry"
)

// TestServerDeadline: the server refuses a call with too little time left
// before its handler runs, clamps the deadline to its own limit, and
// deadline.Step works under the clamped deadline.
func TestServerDeadline(t *testing.T) {
	var (
		mu    sync.Mutex
		left  time.Duration
		steps time.Duration
	)
	e := &echo{unary: func(ctx context.Context, _ string, _ int64, _ string) (string, error) {
		sctx, cancel := deadline.Step(ctx, time.Hour)
		defer cancel()
		mu.Lock()
		left, _ = deadline.Remaining(ctx)
		steps, _ = deadline.Remaining(sctx)
		mu.Unlock()
		return "ok", nil
	}}
	srv := heedgrpc.Server{Limit: 200 * time.Millisecond, MinRemaining: 100 * time.Millisecond}
	cc := dial(t, "passthrough:///bufnet", bufServer(t, e, srv.ServerOptions()...))

	// Enough time: the handler sees at most the server's own limit.
	if _, err := invoke(ctxTimeout(t, time.Minute), cc, mGet, "x"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if left > 200*time.Millisecond || left <= 0 || steps > left {
		t.Errorf("handler had %v (step %v), want the 200ms limit", left, steps)
	}
	mu.Unlock()

	// Too little: refused before the handler.
	_, err := invoke(ctxTimeout(t, 50*time.Millisecond), cc, mGet, "x")
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("err = %v, want DEADLINE_EXCEEDED", err)
	}
	if n := e.Calls(mGet); n != 1 {
		t.Errorf("handler ran %d times, want 1", n)
	}
}

// TestServerOwnership: a trusted call with retry-attempt marks the
// handler's context; an untrusted or unmarked one does not; a malformed
// value is refused.
func TestServerOwnership(t *testing.T) {
	for _, tt := range []struct {
		name    string
		trusted func(context.Context) bool
		ignore  bool
		values  []string
		owned   bool
		code    codes.Code
	}{
		{"marked", heedgrpc.TrustAll, false, []string{"2"}, true, codes.OK},
		{"no metadata", heedgrpc.TrustAll, false, nil, false, codes.OK},
		{"bufconn not trusted by default", nil, false, []string{"1"}, false, codes.OK},
		{"ignored", heedgrpc.TrustAll, true, []string{"1"}, false, codes.OK},
		{"malformed", heedgrpc.TrustAll, false, []string{"01"}, false, codes.InvalidArgument},
		{"two values", heedgrpc.TrustAll, false, []string{"1", "2"}, false, codes.InvalidArgument},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := &echo{unary: failThen(0, codes.OK, "")}
			srv := heedgrpc.Server{Trusted: tt.trusted, OwnershipOff: tt.ignore}
			cc := dial(t, "passthrough:///bufnet", bufServer(t, e, srv.ServerOptions()...))
			ctx := ctxTimeout(t, 10*time.Second)
			for _, v := range tt.values {
				ctx = metadata.AppendToOutgoingContext(ctx, "retry-attempt", v)
			}
			_, err := invoke(ctx, cc, mGet, "x")
			if status.Code(err) != tt.code {
				t.Fatalf("err = %v, want %v", err, tt.code)
			}
			if tt.code != codes.OK {
				if n := e.Calls(mGet); n != 0 {
					t.Errorf("handler ran")
				}
				return
			}
			if got := e.Owned(); len(got) != 1 || got[0] != tt.owned {
				t.Errorf("owned %v, want %v", got, tt.owned)
			}
		})
	}
}

// TestServerTrustPrivate: a loopback TCP peer is trusted by default.
func TestServerTrustPrivate(t *testing.T) {
	e := &echo{unary: failThen(0, codes.OK, "")}
	srv := heedgrpc.Server{}
	cc := dial(t, tcpServer(t, e, srv.ServerOptions()...))
	ctx := metadata.AppendToOutgoingContext(ctxTimeout(t, 10*time.Second), "retry-attempt", "1")
	if _, err := invoke(ctx, cc, mGet, "x"); err != nil {
		t.Fatal(err)
	}
	if got := e.Owned(); len(got) != 1 || !got[0] {
		t.Errorf("owned %v, want [true]", got)
	}
}

// TestDeadlineHopByHop: the time left shrinks at every hop of a chain of
// three services on loopback, and a hop's own limit shortens it for the
// hops after it.
func TestDeadlineHopByHop(t *testing.T) {
	var (
		mu   sync.Mutex
		seen = map[string]time.Duration{}
	)
	record := func(hop string, ctx context.Context) {
		l, _ := deadline.Remaining(ctx)
		mu.Lock()
		seen[hop] = l
		mu.Unlock()
	}
	c := &echo{unary: func(ctx context.Context, _ string, _ int64, _ string) (string, error) {
		record("C", ctx)
		return "c", nil
	}}
	srv := heedgrpc.Server{Trusted: heedgrpc.TrustAll}
	cAddr := tcpServer(t, c, srv.ServerOptions()...)
	hc := &heedgrpc.Client{Files: echoFiles}
	ccC := dial(t, cAddr, hc.DialOptions()...)
	forward := func(hop string, next *grpc.ClientConn) *echo {
		return &echo{unary: func(ctx context.Context, _ string, _ int64, in string) (string, error) {
			record(hop, ctx)
			time.Sleep(5 * time.Millisecond) // work before the next hop: the time left must shrink by it
			return invoke(ctx, next, mGet, in)
		}}
	}
	bAddr := tcpServer(t, forward("B", ccC), heedgrpc.Server{Limit: 2 * time.Second}.ServerOptions()...)
	ccB := dial(t, bAddr, hc.DialOptions()...)
	aAddr := tcpServer(t, forward("A", ccB), srv.ServerOptions()...)
	ccA := dial(t, aAddr, hc.DialOptions()...)
	if _, err := invoke(ctxTimeout(t, 10*time.Second), ccA, mGet, "x"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	a, b, cl := seen["A"], seen["B"], seen["C"]
	if !(a > b && b > cl && a <= 10*time.Second && b <= 2*time.Second && cl > 0) {
		t.Errorf("time left per hop A %v, B %v (limit 2s), C %v: want shrinking", a, b, cl)
	}
	t.Logf("time left: A %v, B %v (own limit 2s), C %v", a, b, cl)
}

// TestUpstreamBreaker: B's own breaker to C opens after the first user
// call (A's three attempts); from then on B answers A with the
// upstream-breaker trailer, A does not retry, and A's breaker, counting
// nothing more against the healthy B, stays below its 8 calls and closed
// (counting those answers, it would open).
func TestUpstreamBreaker(t *testing.T) {
	c := &echo{unary: failThen(1000, codes.Unavailable, "")}
	srv := heedgrpc.Server{}
	ccC := dial(t, tcpServer(t, c, srv.ServerOptions()...),
		(&heedgrpc.Client{Policy: fast(1), Files: echoFiles, Breaker: &breaker.Config{MinCalls: 3, Cooldown: time.Minute}}).DialOptions()...)
	b := &echo{unary: func(ctx context.Context, _ string, _ int64, in string) (string, error) {
		return invoke(ctx, ccC, mGet, in) // the error as it is: it matches breaker.ErrOpen
	}}
	var aChanges atomic.Int32
	ccB := dial(t, tcpServer(t, b, srv.ServerOptions()...), (&heedgrpc.Client{Policy: fast(3), Files: echoFiles, Budget: budget.Config{Ratio: -1},
		Breaker:         &breaker.Config{MinCalls: 8, Cooldown: time.Minute},
		OnBreakerChange: func(string, breaker.State, breaker.State, time.Time) { aChanges.Add(1) }}).DialOptions()...)
	var err error
	for i := 0; i < 10; i++ {
		_, err = invoke(ctxTimeout(t, 10*time.Second), ccB, mGet, "x")
	}
	var x *retry.ExhaustedError
	if !errors.As(err, &x) || x.Reason != retry.ReasonPermanent || x.Attempts != 1 {
		t.Fatalf("err = %v, want one attempt, given up as permanent", err)
	}
	if n := aChanges.Load(); n != 0 {
		t.Errorf("A's breaker changed state %d times, want none", n)
	}
	if n := c.Calls(mGet); n != 3 {
		t.Errorf("C saw %d calls, want 3 before B's breaker opened", n)
	}
}
