package heedgrpc_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/heedgrpc"
	"github.com/heed-go/heed/internal/admitfirst"
	"github.com/heed-go/heed/retry"
	"github.com/heed-go/heed/retry/executortest"
)

// doorRun is what a hedged call did, as seen from outside: the attempts
// that reached the server (their retry-attempt, in order; "" for none), the budget's
// counts, the reply, and the error with the trace of a give-up.
type doorRun struct {
	Attempts []string
	Budget   budget.Stats
	Reply    string
	Err      string
	Trace    []string
}

// TestHedgeDoors: a hedged call whose first attempt admitfirst admits
// (no one is told of attempts: the race runs on a Call started without
// Admit, and a success without a hedge ends without End) does what the
// same call does through the call protocol from its first attempt
// (OnAttempt set), on every hedging case of the conformance suite: the
// same hedges and retries sent, with the same retry-attempt numbers, the
// same budget withdrawals, the same reply, and the same give-up with the
// same trace. The policies' own time limits are dropped (they keep a call
// off admitfirst's path), and each call spends a budget of its own.
func TestHedgeDoors(t *testing.T) {
	for _, c := range executortest.HedgeCases() {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			fast, viaCall := runDoor(t, c, false), runDoor(t, c, true)
			if !reflect.DeepEqual(fast, viaCall) {
				t.Errorf("admitted by admitfirst:\n%+v\nthrough the call protocol:\n%+v", fast, viaCall)
			}
			if len(fast.Attempts) == 0 {
				t.Errorf("no attempt reached the server")
			}
		})
	}
}

// runDoor runs c through the unary interceptor, in virtual time, with an
// OnAttempt (observed: the call protocol from the first attempt) or
// without.
func runDoor(t *testing.T, c executortest.Case, observed bool) doorRun {
	var run doorRun
	synctest.Test(t, func(t *testing.T) {
		p := c.Policy(time.Now())
		p.AttemptTimeout, p.TimeBudget = 0, 0
		if p.Budget == nil {
			b, err := budget.New(budget.Config{})
			if err != nil {
				t.Fatal(err)
			}
			p.Budget = b
		}
		if q := p; !observed {
			// The first door must be admitfirst's, or the test compares
			// the call protocol with itself (q: no budget to count in).
			q.Budget = nil
			if _, ok := admitfirst.Admit(&q, time.Now(), time.Time{}, 0, false); !ok || q.Observe != nil {
				t.Fatalf("admitfirst does not admit %q's policy: both runs would go through the call protocol", c.Name)
			}
		}
		hc := &heedgrpc.Client{Policy: p, Idempotent: []string{mGet}}
		if observed {
			hc.OnAttempt = func(context.Context, heedgrpc.Attempt) {}
		}
		var (
			mu sync.Mutex // hedges call at the same time
			n  int
		)
		invoker := func(ctx context.Context, _ string, _, reply any, _ *grpc.ClientConn, _ ...grpc.CallOption) error {
			mu.Lock()
			n++
			k := n
			st := c.Step(k)
			run.Attempts = append(run.Attempts, strings.Join(metadata.ValueFromOutgoingContext(ctx, heedgrpc.RetryAttemptMetadata), ","))
			mu.Unlock()
			if err := executortest.Take(ctx, st); err != nil {
				return status.FromContextError(err).Err()
			}
			switch st.Kind {
			case executortest.Transient:
				return status.Error(codes.Unavailable, "scripted: unavailable")
			case executortest.Permanent:
				return status.Error(codes.InvalidArgument, "scripted: bad request")
			}
			reply.(*wrapperspb.StringValue).Value = fmt.Sprint("call ", k)
			return nil
		}
		reply := new(wrapperspb.StringValue)
		err := hc.UnaryInterceptor()(context.Background(), mGet, nil, reply, nil, invoker)
		run.Reply, run.Budget = reply.GetValue(), p.Budget.Stats()
		if err != nil {
			run.Err = err.Error()
		}
		if x, ok := errors.AsType[*retry.ExhaustedError](err); ok {
			for _, d := range x.Trace {
				run.Trace = append(run.Trace, fmt.Sprintf("%v %v attempt %d delay %v hedges %d won %v at %v: %v",
					d.Action, d.Reason, d.Attempt, d.Delay, d.Hedges, d.HedgeWon, d.Elapsed, d.Err))
			}
		}
	})
	return run
}
