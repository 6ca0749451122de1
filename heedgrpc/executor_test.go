package heedgrpc_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

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
		var (
			mu sync.Mutex // hedges call at the same time
			n  int
		)
		invoker := func(ctx context.Context, _ string, _, _ any, _ *grpc.ClientConn, opts ...grpc.CallOption) error {
			mu.Lock()
			n++
			st := c.Step(n)
			mu.Unlock()
			if err := executortest.Take(ctx, st); err != nil {
				return status.FromContextError(err).Err()
			}
			switch st.Kind {
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
		hc.UnaryInterceptor()(ctx, mGet, nil, new(emptypb.Empty), nil, invoker)
	})
	return ds
}

func TestConformance(t *testing.T) { executortest.Run(t, grpcExecutor{}) }

func TestConformanceHedge(t *testing.T) { executortest.RunHedge(t, grpcExecutor{}) }

// unobservedExecutor runs the conformance cases through the unary
// interceptor with no one told about attempts, so that a first attempt
// takes the path that skips the call protocol's state until it fails. The
// policy's own time limits are dropped (they keep a call off that path):
// cases that need them are skipped. Its decisions are the trace of the
// error a give-up returns; a success keeps no trace, so the retries before
// it are checked by their number and their delays (the time between an
// attempt's end and the next one's start), their reasons taken from the
// case.
type unobservedExecutor struct{}

func (unobservedExecutor) Durable() bool { return false }

func (unobservedExecutor) Run(t *testing.T, c executortest.Case) []retry.Decision {
	for _, st := range c.Script {
		if st.Kind == executortest.Timeout {
			t.Skip("needs the policy's attempt timeout")
		}
	}
	if c.Deadline > 0 {
		t.Skip("needs the policy's attempt timeout")
	}
	if c.Policy(time.Now()).TimeBudget < time.Hour {
		t.Skip("needs the policy's time budget")
	}
	var ds []retry.Decision
	synctest.Test(t, func(t *testing.T) {
		p := c.Policy(time.Now())
		p.AttemptTimeout, p.TimeBudget = 0, 0
		hc := &heedgrpc.Client{Policy: p, Budget: budget.Config{Ratio: -1}, Idempotent: []string{mGet}}
		var starts, ends []time.Time
		invoker := func(ctx context.Context, _ string, _, _ any, _ *grpc.ClientConn, opts ...grpc.CallOption) error {
			starts = append(starts, time.Now())
			defer func() { ends = append(ends, time.Now()) }()
			switch st := c.Step(len(starts)); st.Kind {
			case executortest.Transient:
				return status.Error(codes.Unavailable, "scripted: unavailable")
			case executortest.Permanent:
				return status.Error(codes.InvalidArgument, "scripted: bad request")
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
		err := hc.UnaryInterceptor()(context.Background(), mGet, nil, nil, nil, invoker)
		if x, ok := errors.AsType[*retry.ExhaustedError](err); ok {
			ds = x.Trace
			return
		}
		if err != nil {
			t.Fatalf("call ended with %v", err)
		}
		for i := 1; i < len(starts); i++ {
			d := retry.Decision{Action: retry.Retry, Delay: starts[i].Sub(ends[i-1])}
			if i-1 < len(c.Want) {
				d.Reason = c.Want[i-1].Reason
			}
			ds = append(ds, d)
		}
		ds = append(ds, retry.Decision{Action: retry.Done, Reason: retry.ReasonSuccess})
	})
	return ds
}

func TestConformanceUnobserved(t *testing.T) { executortest.Run(t, unobservedExecutor{}) }

// TestSlowServerNotCut: a server that answers in 2 s, under a caller's
// 3 s deadline, answers the first request of a zero Client; with an
// AttemptShare of 0.5 the same call is cut at 1.5 s, again at 0.75 s, and
// fails after 3 requests.
func TestSlowServerNotCut(t *testing.T) {
	for _, tt := range []struct {
		share float64
		calls int
		ok    bool
	}{{0, 1, true}, {0.5, 3, false}} {
		synctest.Test(t, func(t *testing.T) {
			hc := &heedgrpc.Client{AttemptShare: tt.share, Idempotent: []string{mGet}, Budget: budget.Config{Ratio: -1}}
			calls := 0
			invoker := func(ctx context.Context, _ string, _, _ any, _ *grpc.ClientConn, _ ...grpc.CallOption) error {
				calls++
				select {
				case <-time.After(2 * time.Second):
					return nil
				case <-ctx.Done():
					return status.FromContextError(ctx.Err()).Err()
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			err := hc.UnaryInterceptor()(ctx, mGet, nil, nil, nil, invoker)
			if (err == nil) != tt.ok || calls != tt.calls {
				t.Errorf("AttemptShare %v: %v after %d requests, want success %v after %d", tt.share, err, calls, tt.ok, tt.calls)
			}
		})
	}
}
