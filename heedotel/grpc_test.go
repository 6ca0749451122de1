package heedotel_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/heedgrpc"
	"github.com/heed-go/heed/heedotel"
	"github.com/heed-go/heed/retry"
)

// TestGRPCClient: a health Check over bufconn that fails UNAVAILABLE once,
// then succeeds, is recorded per target and method.
func TestGRPCClient(t *testing.T) {
	m, r := newMetrics(t)
	var calls atomic.Int32
	flaky := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if calls.Add(1) == 1 {
			return nil, status.Error(codes.Unavailable, "warming up")
		}
		return h(ctx, req)
	}
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer(grpc.UnaryInterceptor(flaky))
	healthpb.RegisterHealthServer(srv, health.NewServer())
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(lis) }()
	t.Cleanup(func() { srv.Stop(); <-done })

	hc := &heedgrpc.Client{
		Policy:     retry.Policy{Backoff: backoff.Schedule{Kind: backoff.Immediate}},
		Idempotent: []string{healthpb.Health_Check_FullMethodName},
	}
	if err := m.GRPCClient(hc); err != nil {
		t.Fatal(err)
	}
	cc, err := grpc.NewClient("passthrough:///health", append(hc.DialOptions(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}

	c := collect(t, r)
	base := []attribute.KeyValue{
		attribute.String("rpc.system", "grpc"),
		attribute.String("server.address", "passthrough:///health"),
		attribute.String("rpc.service", "grpc.health.v1.Health"),
		attribute.String("rpc.method", "Check"),
	}
	code := func(c codes.Code) attribute.KeyValue { return attribute.Int("rpc.grpc.status_code", int(c)) }
	if n := c.sum("heed.grpc.client.attempts", with(base, code(codes.Unavailable), heedotel.KeyOutcome.String("transient"))...); n != 1 {
		t.Errorf("transient attempts %d, want 1", n)
	}
	if n := c.sum("heed.grpc.client.attempts", with(base, code(codes.OK), heedotel.KeyOutcome.String("success"))...); n != 1 {
		t.Errorf("ok attempts %d, want 1", n)
	}
	if n := c.sum("heed.grpc.client.retries", with(base, code(codes.Unavailable), heedotel.KeyReason.String("transient"))...); n != 1 {
		t.Errorf("retries %d, want 1", n)
	}
	if n, _ := c.hist("heed.grpc.client.call.duration", with(base, code(codes.OK), heedotel.KeyReason.String("success"))...); n != 1 {
		t.Errorf("calls %d, want 1", n)
	}
	if n, _ := c.hist("heed.grpc.client.attempt.duration", base...); n != 2 {
		t.Errorf("attempt durations %d, want 2", n)
	}
	if n := c.sum("heed.grpc.client.give_ups", base...); n != 0 {
		t.Errorf("give-ups %d, want 0", n)
	}
}

// TestGRPCClientBounded: past MaxGRPCMethods (target, method) pairs, calls
// are recorded under _OTHER; a give-up and a cancelled call are counted
// with their reasons.
func TestGRPCClientBounded(t *testing.T) {
	m, r := newMetrics(t)
	hc := &heedgrpc.Client{Policy: retry.Policy{Attempts: 1}, Budget: budget.Config{Ratio: -1}}
	if err := m.GRPCClient(hc); err != nil {
		t.Fatal(err)
	}
	ic := hc.UnaryInterceptor()
	fail := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error {
		return status.Error(codes.NotFound, "no such thing")
	}
	const n = heedotel.MaxGRPCMethods + 5
	for i := 0; i < n; i++ {
		ic(context.Background(), fmt.Sprintf("/svc.S/M%d", i), nil, nil, nil, fail)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ic(ctx, "/svc.S/M0", nil, nil, nil, func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error {
		cancel()
		return status.Error(codes.Canceled, "context canceled")
	})
	c := collect(t, r)
	other := attribute.String("rpc.method", "_OTHER")
	if got := c.sum("heed.grpc.client.give_ups", other, heedotel.KeyReason.String("permanent")); got != 5 {
		t.Errorf("_OTHER give-ups %d, want 5", got)
	}
	if got := c.sum("heed.grpc.client.give_ups", attribute.String("rpc.method", "M7")); got != 1 {
		t.Errorf("M7 give-ups %d, want 1", got)
	}
	if got := c.sum("heed.grpc.client.give_ups", attribute.String("rpc.method", "M0"), heedotel.KeyReason.String("canceled")); got != 1 {
		t.Errorf("canceled %d, want 1", got)
	}
}

// TestGRPCClientHedge: a health Check whose first attempt is slow is
// raced by a hedge, which wins: heed.grpc.client.hedges and
// heed.grpc.client.hedges.won count it.
func TestGRPCClientHedge(t *testing.T) {
	m, r := newMetrics(t)
	// The first attempt is the slow one, known by its retry-attempt, not
	// by arrival: on a busy machine the hedge may reach the server first.
	// The hedge answers once the first has arrived, so that it cannot win
	// before the first attempt was ever made.
	firstIn := make(chan struct{})
	var once sync.Once
	slow := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if vs := metadata.ValueFromIncomingContext(ctx, "retry-attempt"); len(vs) == 0 || vs[0] == "1" {
			once.Do(func() { close(firstIn) })
			<-ctx.Done() // slow until the client leaves
			return nil, ctx.Err()
		}
		select {
		case <-firstIn:
		case <-ctx.Done():
		}
		return h(ctx, req)
	}
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer(grpc.UnaryInterceptor(slow))
	healthpb.RegisterHealthServer(srv, health.NewServer())
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(lis) }()
	t.Cleanup(func() { srv.Stop(); <-done })

	hc := &heedgrpc.Client{
		Policy:     retry.Policy{Hedge: &retry.Hedge{Delay: 10 * time.Millisecond}},
		Idempotent: []string{healthpb.Health_Check_FullMethodName},
		Budgets:    new(budget.Registry),
	}
	if err := m.GRPCClient(hc); err != nil {
		t.Fatal(err)
	}
	cc, err := grpc.NewClient("passthrough:///health", append(hc.DialOptions(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	c := collect(t, r)
	if n := c.sum("heed.grpc.client.hedges"); n != 1 {
		t.Errorf("hedges %d, want 1", n)
	}
	if n := c.sum("heed.grpc.client.hedges.won"); n != 1 {
		t.Errorf("hedges won %d, want 1", n)
	}
}
