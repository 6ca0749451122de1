package heedgrpc_test

import (
	"context"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/heedgrpc"
	"github.com/heed-go/heed/retry"
	"github.com/heed-go/heed/retry/executortest"
)

// grpcExecutor runs the conformance cases through the unary interceptor,
// whose invoker answers as the script says, in virtual time: Transient is
// UNAVAILABLE, Permanent INVALID_ARGUMENT, Timeout an attempt that lasts
// until its context ends, Pushback RESOURCE_EXHAUSTED with
// grpc-retry-pushback-ms.
type grpcExecutor struct{}

func (grpcExecutor) Durable() bool { return false }

func (grpcExecutor) Run(t *testing.T, c executortest.Case) []retry.Decision {
	var ds []retry.Decision
	synctest.Test(t, func(t *testing.T) {
		p := c.Policy(time.Now())
		p.Observe = func(_ context.Context, e retry.Event) { ds = append(ds, e.Decision) }
		hc := &heedgrpc.Client{Policy: p, Budget: budget.Config{Ratio: -1}, Idempotent: []string{mGet}}
		n := 0
		invoker := func(ctx context.Context, _ string, _, _ any, _ *grpc.ClientConn, opts ...grpc.CallOption) error {
			n++
			switch st := c.Step(n); st.Kind {
			case executortest.Transient:
				return status.Error(codes.Unavailable, "scripted: unavailable")
			case executortest.Permanent:
				return status.Error(codes.InvalidArgument, "scripted: bad request")
			case executortest.Timeout:
				<-ctx.Done()
				return status.FromContextError(ctx.Err()).Err()
			case executortest.Pushback:
				for _, o := range opts {
					if tr, ok := o.(grpc.TrailerCallOption); ok {
						*tr.TrailerAddr = metadata.Pairs(heedgrpc.PushbackMetadata, strconv.FormatInt(st.Wait.Milliseconds(), 10))
					}
				}
				return status.Error(codes.ResourceExhausted, "scripted: slow down")
			}
			return nil
		}
		ctx := context.Background()
		if c.Deadline > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, c.Deadline)
			defer cancel()
		}
		hc.UnaryInterceptor()(ctx, mGet, nil, nil, nil, invoker)
	})
	return ds
}

func TestConformance(t *testing.T) { executortest.Run(t, grpcExecutor{}) }
