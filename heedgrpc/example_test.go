package heedgrpc_test

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"github.com/heed-go/heed/deadline"
	"github.com/heed-go/heed/heedgrpc"
	"github.com/heed-go/heed/retry"
)

// startHealth serves gRPC's health service in memory with opts and returns
// a dial option for it and a function that stops it.
func startHealth(opts ...grpc.ServerOption) (grpc.DialOption, func()) {
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer(opts...)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(lis) }()
	return grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		func() { srv.Stop(); <-done }
}

// printDecisions is a Policy.Observe that prints each attempt's decision.
func printDecisions(_ context.Context, e retry.Event) {
	fmt.Printf("attempt %d: %v (%v)\n", e.Attempt, e.Action, e.Reason)
}

// The unary interceptor retries a call that failed UNAVAILABLE, because
// the method is listed as idempotent.
func ExampleClient_UnaryInterceptor() {
	var calls atomic.Int32
	flaky := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if calls.Add(1) == 1 {
			return nil, status.Error(codes.Unavailable, "warming up")
		}
		return h(ctx, req)
	}
	dialer, stop := startHealth(grpc.UnaryInterceptor(flaky))
	defer stop()

	hc := &heedgrpc.Client{
		Policy:     retry.Policy{Observe: printDecisions},
		Idempotent: []string{healthpb.Health_Check_FullMethodName},
	}
	// DialOptions: both interceptors, and gRPC's own retries off.
	opts := append(hc.DialOptions(), dialer, grpc.WithTransportCredentials(insecure.NewCredentials()))
	conn, err := grpc.NewClient("passthrough:///health", opts...)
	if err != nil {
		panic(err)
	}
	defer conn.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	fmt.Println(resp.GetStatus(), err)
	// Output:
	// attempt 1: retry (transient error)
	// attempt 2: done (success)
	// SERVING <nil>
}

// The stream interceptor retries a stream that failed before its first
// response message, sending its request again.
func ExampleClient_StreamInterceptor() {
	var calls atomic.Int32
	flaky := func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		if calls.Add(1) == 1 {
			return status.Error(codes.Unavailable, "warming up")
		}
		return h(srv, ss)
	}
	dialer, stop := startHealth(grpc.StreamInterceptor(flaky))
	defer stop()

	hc := &heedgrpc.Client{
		Policy:     retry.Policy{Observe: printDecisions},
		Idempotent: []string{healthpb.Health_Watch_FullMethodName},
	}
	opts := append(hc.DialOptions(), dialer, grpc.WithTransportCredentials(insecure.NewCredentials()))
	conn, err := grpc.NewClient("passthrough:///health", opts...)
	if err != nil {
		panic(err)
	}
	defer conn.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	w, err := healthpb.NewHealthClient(conn).Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		panic(err)
	}
	first, err := w.Recv() // the first message commits the stream
	fmt.Println(first.GetStatus(), err)
	// Output:
	// attempt 1: retry (transient error)
	// attempt 2: done (success)
	// SERVING <nil>
}

// The unary server interceptor clamps a call's deadline to the server's
// own limit, refuses a call with too little time left, and marks the
// context of a call from a retrying client, so that clients under it make
// one attempt.
func ExampleServer_UnaryInterceptor() {
	show := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		left, _ := deadline.Remaining(ctx)
		fmt.Printf("handler: caller owns retries: %v, at most 2s left: %v\n", deadline.UpstreamOwns(ctx), left <= 2*time.Second)
		return h(ctx, req)
	}
	srv := heedgrpc.Server{Limit: 2 * time.Second, Trusted: heedgrpc.TrustAll}
	dialer, stop := startHealth(grpc.ChainUnaryInterceptor(srv.UnaryInterceptor(), show))
	defer stop()

	hc := &heedgrpc.Client{Idempotent: []string{healthpb.Health_Check_FullMethodName}}
	opts := append(hc.DialOptions(), dialer, grpc.WithTransportCredentials(insecure.NewCredentials()))
	conn, err := grpc.NewClient("passthrough:///health", opts...)
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	client := healthpb.NewHealthClient(conn)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = client.Check(ctx, &healthpb.HealthCheckRequest{})
	fmt.Println("a minute:", status.Code(err))

	short, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	_, err = client.Check(short, &healthpb.HealthCheckRequest{})
	fmt.Println("5ms:", status.Code(err))
	// Output:
	// handler: caller owns retries: true, at most 2s left: true
	// a minute: OK
	// 5ms: DeadlineExceeded
}

// The stream server interceptor does the same for streams: the handler's
// stream has the prepared context.
func ExampleServer_StreamInterceptor() {
	show := func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		left, _ := deadline.Remaining(ss.Context())
		fmt.Printf("handler: caller owns retries: %v, at most 2s left: %v\n", deadline.UpstreamOwns(ss.Context()), left <= 2*time.Second)
		return h(srv, ss)
	}
	srv := heedgrpc.Server{Limit: 2 * time.Second, Trusted: heedgrpc.TrustAll}
	dialer, stop := startHealth(grpc.ChainStreamInterceptor(srv.StreamInterceptor(), show))
	defer stop()

	hc := &heedgrpc.Client{Idempotent: []string{healthpb.Health_Watch_FullMethodName}}
	opts := append(hc.DialOptions(), dialer, grpc.WithTransportCredentials(insecure.NewCredentials()))
	conn, err := grpc.NewClient("passthrough:///health", opts...)
	if err != nil {
		panic(err)
	}
	defer conn.Close()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w, err := healthpb.NewHealthClient(conn).Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		panic(err)
	}
	first, err := w.Recv()
	fmt.Println(first.GetStatus(), err)
	// Output:
	// handler: caller owns retries: true, at most 2s left: true
	// SERVING <nil>
}
