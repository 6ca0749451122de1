package heedgrpc_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/heedgrpc"
	"github.com/heed-go/heed/retry"
)

// TestHedgeUnary: over a real channel, a slow first call of a repeatable
// method is raced by a hedge that carries retry-attempt 2, whose reply is
// the call's; a method that is not repeatable (Post) and one with an
// idempotency key: only the keyed one is hedged; a stream is never hedged.
func TestHedgeUnary(t *testing.T) {
	for _, tt := range []struct {
		name, method, key string
		calls             int64
	}{
		{"idempotent method", mGet, "", 2},
		{"not repeatable", mPost, "", 1},
		{"keyed", mPost, "k-1", 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// The first attempt is the slow one, by its retry-attempt, not
			// by arrival, and the hedge answers once the first has reached
			// the server: on a busy machine the hedge may get there first,
			// or win before the first arrives at all.
			firstIn := make(chan struct{})
			var once sync.Once
			e := &echo{unary: func(ctx context.Context, _ string, _ int64, in string) (string, error) {
				if vs := metadata.ValueFromIncomingContext(ctx, "retry-attempt"); len(vs) == 0 || vs[0] == "1" {
					once.Do(func() { close(firstIn) })
					select { // slow: until the client gives up on it, or 300 ms
					case <-ctx.Done():
					case <-time.After(300 * time.Millisecond):
					}
					return "slow " + in, nil
				}
				select {
				case <-firstIn:
				case <-ctx.Done():
				}
				return "fast " + in, nil
			}}
			dialer := bufServer(t, e)
			var last retry.Decision
			hc := &heedgrpc.Client{Policy: retry.Policy{
				Hedge:   &retry.Hedge{Delay: 20 * time.Millisecond},
				Observe: func(_ context.Context, ev retry.Event) { last = ev.Decision },
			}, Files: echoFiles, Budgets: new(budget.Registry)}
			cc := dial(t, "passthrough:///echo", append(hc.DialOptions(), dialer)...)
			ctx := ctxTimeout(t, 5*time.Second)
			if tt.key != "" {
				ctx = metadata.AppendToOutgoingContext(ctx, heedgrpc.IdempotencyKeyMetadata, tt.key)
			}
			out, err := invoke(ctx, cc, tt.method, "x")
			if err != nil {
				t.Fatal(err)
			}
			if got := e.Calls(tt.method); got != tt.calls {
				t.Fatalf("%d calls reached the server, want %d", got, tt.calls)
			}
			want := "slow x"
			if tt.calls == 2 {
				want = "fast x"
				if !last.HedgeWon || last.Hedges != 1 {
					t.Errorf("decision %+v, want a hedge that won", last)
				}
				seen := e.Seen()
				slices.Sort(seen)
				if !slices.Equal(seen, []string{"1", "2"}) {
					t.Errorf("retry-attempt %q, want 1 and 2", seen)
				}
			}
			if out != want {
				t.Errorf("reply %q, want %q", out, want)
			}
		})
	}
	t.Run("stream", func(t *testing.T) {
		e := &echo{stream: func(_ string, n int64, ss grpc.ServerStream) error {
			time.Sleep(100 * time.Millisecond)
			return nil
		}}
		dialer := bufServer(t, e)
		hc := &heedgrpc.Client{Policy: retry.Policy{Hedge: &retry.Hedge{Delay: 10 * time.Millisecond}}, Files: echoFiles, Budgets: new(budget.Registry)}
		cc := dial(t, "passthrough:///echo", append(hc.DialOptions(), dialer)...)
		s, err := cc.NewStream(ctxTimeout(t, 5*time.Second), &grpc.StreamDesc{ServerStreams: true}, mWatch)
		if err != nil {
			t.Fatal(err)
		}
		s.CloseSend()
		for s.RecvMsg(new(struct{})) == nil {
		}
		if got := e.Calls(mWatch); got != 1 {
			t.Errorf("%d streams reached the server, want 1", got)
		}
	})
}
