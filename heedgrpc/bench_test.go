package heedgrpc_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/heedgrpc"
	"github.com/heed-go/heed/internal/benchpair"
	"github.com/heed-go/heed/retry"
)

// benchUnary runs the unary interceptor around invoker, with a deadline.
func benchUnary(b *testing.B, hc *heedgrpc.Client, invoker grpc.UnaryInvoker) {
	ic := hc.UnaryInterceptor()
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	b.ReportAllocs()
	for b.Loop() {
		if err := ic(ctx, mGet, nil, nil, nil, invoker); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUnary: the interceptor's own cost, around an invoker that
// answers at once (no connection): a success, and a failure retried at
// once then a success. The defaults send retry-attempt and count the call
// in the target's retry budget; without either, what is left is the clock
// reading (for the deadline) and the pooled call state.
func BenchmarkUnary(b *testing.B) {
	p := retry.Policy{Backoff: backoff.Schedule{Kind: backoff.Immediate}}
	ok := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error { return nil }
	b.Run("success", func(b *testing.B) {
		benchUnary(b, &heedgrpc.Client{Policy: p, Files: echoFiles}, ok)
	})
	b.Run("success/attempt share", func(b *testing.B) {
		benchUnary(b, &heedgrpc.Client{Policy: p, Files: echoFiles, AttemptShare: 0.5}, ok)
	})
	b.Run("success/no propagation", func(b *testing.B) {
		benchUnary(b, &heedgrpc.Client{Policy: p, Files: echoFiles, Propagate: func(string, string) bool { return false }}, ok)
	})
	b.Run("success/no propagation, no budget", func(b *testing.B) {
		benchUnary(b, &heedgrpc.Client{Policy: p, Files: echoFiles, Budget: budget.Config{Ratio: -1},
			Propagate: func(string, string) bool { return false }}, ok)
	})
	b.Run("unavailable then success", func(b *testing.B) {
		n := 0
		flaky := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error {
			n++
			if n%2 == 1 {
				return status.Error(codes.Unavailable, "down")
			}
			return nil
		}
		benchUnary(b, &heedgrpc.Client{Policy: p, Files: echoFiles, Budget: budget.Config{Ratio: -1}}, flaky)
	})
}

// BenchmarkHedgeCost measures what hedging costs a unary call answered at
// once when no hedge fires (a 1 s delay, never reached): the interceptor
// with its defaults (off) and the same with Policy.Hedge (on), alternating
// in chunks in one loop (internal/benchpair), so that both see the same
// machine. The reply is a proto.Message, as a hedged call's must be.
func BenchmarkHedgeCost(b *testing.B) {
	p := retry.Policy{Backoff: backoff.Schedule{Kind: backoff.Immediate}}
	hp := p
	hp.Hedge = &retry.Hedge{Delay: time.Second}
	ok := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error { return nil }
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	reply := &wrapperspb.StringValue{}
	call := func(hc *heedgrpc.Client) func() {
		ic := hc.UnaryInterceptor()
		return func() {
			if err := ic(ctx, mGet, nil, reply, nil, ok); err != nil {
				b.Fatal(err)
			}
		}
	}
	benchpair.Interleave(b, call(&heedgrpc.Client{Policy: p, Files: echoFiles}), call(&heedgrpc.Client{Policy: hp, Files: echoFiles}))
}
