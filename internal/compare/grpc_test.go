package compare

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go/failsafegrpc"
	grpcretry "github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/retry"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/test/bufconn"

	heedbackoff "github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/heedgrpc"
	"github.com/heed-go/heed/retry"
)

// grpcInterceptors are the unary client interceptors compared, each
// retrying up to 3 attempts with zero delays, or none for bare:
//
//   - bare: no interceptor, the reference.
//   - heed: heedgrpc.Client at its defaults but for immediate retries: a
//     retry budget per target, Check declared idempotent, so that every
//     call carries retry-attempt (ownership), and the trailer asked for
//     (pushback).
//   - heed-nopropagate: the same with Propagate off, as for a target that
//     is not a heed service: no retry-attempt metadata.
//   - go-grpc-middleware: interceptors/retry with WithMax(3) and no
//     backoff; it sends no metadata on a first attempt.
//   - failsafe-go: failsafegrpc.NewUnaryClientInterceptor with its gRPC
//     retry policy, 3 attempts, zero delay.
func grpcInterceptors() []struct {
	name string
	ic   grpc.UnaryClientInterceptor
} {
	p := retry.Policy{Attempts: 3, Backoff: heedbackoff.Schedule{Kind: heedbackoff.Immediate}}
	idem := []string{healthpb.Health_Check_FullMethodName}
	heed := &heedgrpc.Client{Policy: p, Idempotent: idem}
	off := &heedgrpc.Client{Policy: p, Idempotent: idem, Propagate: func(string, string) bool { return false }}
	ggm := grpcretry.UnaryClientInterceptor(grpcretry.WithMax(3), grpcretry.WithBackoff(func(context.Context, uint) time.Duration { return 0 }))
	fs := failsafegrpc.NewUnaryClientInterceptor[any](failsafegrpc.NewRetryPolicyBuilder[any]().WithMaxAttempts(3).Build())
	return []struct {
		name string
		ic   grpc.UnaryClientInterceptor
	}{
		{"bare", nil},
		{"heed", heed.UnaryInterceptor()},
		{"heed-nopropagate", off.UnaryInterceptor()},
		{"go-grpc-middleware", ggm},
		{"failsafe-go", fs},
	}
}

// healthConn serves gRPC's health service over bufconn and returns a
// connection to it through ic (none when nil), with gRPC's own retries off.
func healthConn(b *testing.B, ic grpc.UnaryClientInterceptor) *grpc.ClientConn {
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, health.NewServer())
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(lis) }()
	b.Cleanup(func() { srv.Stop(); <-done })
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithDisableRetry(),
	}
	if ic != nil {
		opts = append(opts, grpc.WithUnaryInterceptor(ic))
	}
	cc, err := grpc.NewClient("passthrough:///health", opts...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cc.Close() })
	return cc
}

// BenchmarkGRPCUnary: one health Check answered SERVING over bufconn, with
// a deadline, through each interceptor: the success path's cost over a
// bare call is each row minus bare.
func BenchmarkGRPCUnary(b *testing.B) {
	for _, tt := range grpcInterceptors() {
		b.Run(tt.name, func(b *testing.B) {
			client := healthpb.NewHealthClient(healthConn(b, tt.ic))
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			req := &healthpb.HealthCheckRequest{}
			b.ReportAllocs()
			for b.Loop() {
				resp, err := client.Check(ctx, req)
				if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
					b.Fatal(resp, err)
				}
			}
		})
	}
}

// BenchmarkGRPCInterceptor: the interceptor alone around an invoker that
// succeeds at once, without a connection: the success path's own cost,
// without the noise of a real call.
func BenchmarkGRPCInterceptor(b *testing.B) {
	invoker := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error { return nil }
	for _, tt := range grpcInterceptors() {
		if tt.ic == nil {
			continue
		}
		b.Run(tt.name, func(b *testing.B) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			req, reply := &healthpb.HealthCheckRequest{}, &healthpb.HealthCheckResponse{}
			b.ReportAllocs()
			for b.Loop() {
				if err := tt.ic(ctx, healthpb.Health_Check_FullMethodName, req, reply, nil, invoker); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
