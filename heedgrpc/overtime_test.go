package heedgrpc_test

import (
	"context"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/heedgrpc"
	"github.com/heed-go/heed/retry/overtimetest"
)

// TestOverTime runs the over-time conformance scenarios through the unary
// interceptor of a Client with the zero policy (its own registry of
// budgets: a fresh process), an idempotent method, whose invoker answers
// as the scenario's dependency does: OK, UNAVAILABLE, or the context's
// status when it is not answered in time. In virtual time.
func TestOverTime(t *testing.T) {
	overtimetest.Run(t, overtimetest.Calls(func(t *testing.T, dep *overtimetest.Dependency) overtimetest.Client {
		hc := &heedgrpc.Client{Budgets: new(budget.Registry), Idempotent: []string{mGet}}
		call := hc.UnaryInterceptor()
		return func(ctx context.Context, user int) bool {
			invoker := func(ctx context.Context, _ string, _, _ any, _ *grpc.ClientConn, _ ...grpc.CallOption) error {
				switch dep.Attempt(ctx, user) {
				case overtimetest.Fail:
					return status.Error(codes.Unavailable, "scripted: unavailable")
				case overtimetest.Cut:
					return status.FromContextError(ctx.Err()).Err()
				}
				return nil
			}
			return call(ctx, mGet, nil, nil, nil, invoker) == nil
		}
	}))
}
