package compare

import (
	"context"
	"net"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go/failsafegrpc"
	"github.com/failsafe-go/failsafe-go/timeout"
	grpcretry "github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/retry"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/test/bufconn"

	heedbackoff "github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/heedgrpc"
	"github.com/heed-go/heed/retry"
)

// grpcInterceptors are the unary client interceptors compared, each
// retrying up to 3 attempts with zero delays, or none for bare:
//
//   - bare: no interceptor, the reference.
//   - noop: an interceptor that calls the invoker and nothing else, the
//     floor of any interceptor.
//   - noop+retry-attempt: the same adding "retry-attempt: 1" to the
//     outgoing metadata, as heed does for a heed target: what gRPC's
//     carrying that one entry costs (over bufconn, the server's reading
//     of it too).
//   - heed: heedgrpc.Client at its defaults but for immediate retries: a
//     retry budget per target, Check declared idempotent, so that every
//     call carries retry-attempt (ownership), and the trailer asked for
//     (pushback). The call's context has a deadline, which its first
//     attempt may use whole: no attempt context.
//   - heed-share: the same with AttemptShare 0.5 (the default before
//     issue 26): its first attempt gets half the time left, an attempt
//     context.
//   - heed-nopropagate: the same as heed with Propagate off, as for a
//     target that is not a heed service: no retry-attempt metadata.
//   - go-grpc-middleware: interceptors/retry with WithMax(3) and no
//     backoff; it sends no metadata on a first attempt.
//   - failsafe-go: failsafegrpc.NewUnaryClientInterceptor with its gRPC
//     retry policy, 3 attempts, zero delay.
//   - go-grpc-middleware+timeout, failsafe-go+timeout: the same with a
//     timeout on each attempt (WithPerRetryTimeout, a timeout policy
//     inside the retry policy) of half the call's hour, as heed's
//     AttemptShare 0.5 gives its first attempt: what the others pay for
//     that cut.
func grpcInterceptors() []struct {
	name string
	ic   grpc.UnaryClientInterceptor
} {
	p := retry.Policy{Attempts: 3, Backoff: heedbackoff.Schedule{Kind: heedbackoff.Immediate}}
	idem := []string{healthpb.Health_Check_FullMethodName}
	heed := &heedgrpc.Client{Policy: p, Idempotent: idem}
	share := &heedgrpc.Client{Policy: p, Idempotent: idem, AttemptShare: 0.5}
	off := &heedgrpc.Client{Policy: p, Idempotent: idem, Propagate: func(string, string) bool { return false }}
	ggm := grpcretry.UnaryClientInterceptor(grpcretry.WithMax(3), grpcretry.WithBackoff(func(context.Context, uint) time.Duration { return 0 }))
	fs := failsafegrpc.NewUnaryClientInterceptor[any](failsafegrpc.NewRetryPolicyBuilder[any]().WithMaxAttempts(3).Build())
	ggmTimeout := grpcretry.UnaryClientInterceptor(grpcretry.WithMax(3), grpcretry.WithBackoff(func(context.Context, uint) time.Duration { return 0 }),
		grpcretry.WithPerRetryTimeout(30*time.Minute))
	fsTimeout := failsafegrpc.NewUnaryClientInterceptor[any](failsafegrpc.NewRetryPolicyBuilder[any]().WithMaxAttempts(3).Build(),
		timeout.New[any](30*time.Minute))
	return []struct {
		name string
		ic   grpc.UnaryClientInterceptor
	}{
		{"bare", nil},
		{"noop", func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			return invoker(ctx, method, req, reply, cc, opts...)
		}},
		{"noop+retry-attempt", func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			return invoker(metadata.NewOutgoingContext(ctx, attempt1), method, req, reply, cc, opts...)
		}},
		{"heed", heed.UnaryInterceptor()},
		{"heed-share", share.UnaryInterceptor()},
		{"heed-nopropagate", off.UnaryInterceptor()},
		{"go-grpc-middleware", ggm},
		{"failsafe-go", fs},
		{"go-grpc-middleware+timeout", ggmTimeout},
		{"failsafe-go+timeout", fsTimeout},
	}
}

// attempt1 is the metadata of noop+retry-attempt.
var attempt1 = metadata.Pairs("retry-attempt", "1")

// healthConn serves gRPC's health service over bufconn and returns a
// connection to it through ic (none when nil), with gRPC's own retries off.
func healthConn(b *testing.B, ic grpc.UnaryClientInterceptor) *grpc.ClientConn {
	return healthConnTo(b, healthServer(b), ic)
}

// healthServer serves gRPC's health service over a new bufconn listener.
func healthServer(b *testing.B) *bufconn.Listener {
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, health.NewServer())
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(lis) }()
	b.Cleanup(func() { srv.Stop(); <-done })
	return lis
}

// healthConnTo returns a connection to the server on lis through ic (none
// when nil), with gRPC's own retries off.
func healthConnTo(b *testing.B, lis *bufconn.Listener, ic grpc.UnaryClientInterceptor) *grpc.ClientConn {
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

// BenchmarkGRPCOverhead: what each interceptor adds to a health Check over
// bufconn, measured against a bare connection to the same server in the
// same run. The two connections take turns, 256 calls at a time, each
// going first half of the time, so that both see the same load: on a busy
// machine a call's time moves between two runs by far more than an
// interceptor costs. It reports medians over the blocks: the CPU time the
// process spent per bare call (bare-cpu-ns/op) and per call through the
// interceptor (ic-cpu-ns/op), client and in-process server together, and
// the difference within a pair of blocks (delta-cpu-ns/op); and the same
// difference in elapsed time (delta-ns/op), which the other processes of a
// busy machine move more. Medians are what their load moves least; ns/op
// is the time of one pair of calls.
func BenchmarkGRPCOverhead(b *testing.B) {
	for _, tt := range grpcInterceptors() {
		if tt.ic == nil {
			continue
		}
		for _, v := range overheadCalls {
			b.Run(tt.name+"/"+v.name, func(b *testing.B) { overhead(b, tt.ic, v.md) })
		}
	}
}

// overheadCalls are the calls BenchmarkGRPCOverhead makes: with a deadline
// (an hour), its grpc-timeout is gRPC's 8th header field, and heed's
// retry-attempt the 9th, past which gRPC's server sizes its metadata map
// for more than 8 entries; with a traceparent too (what a service that
// traces its calls sends on every one), the caller's metadata has passed
// that point already, and retry-attempt costs an entry.
var overheadCalls = []struct {
	name string
	md   metadata.MD
}{
	{"deadline", nil},
	{"traceparent", metadata.Pairs("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")},
}

// overhead is BenchmarkGRPCOverhead for the interceptor ic, with md as the
// caller's outgoing metadata (none when nil).
func overhead(b *testing.B, ic grpc.UnaryClientInterceptor, md metadata.MD) {
	lis := healthServer(b)
	bare := healthpb.NewHealthClient(healthConnTo(b, lis, nil))
	with := healthpb.NewHealthClient(healthConnTo(b, lis, ic))
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	if md != nil {
		ctx = metadata.NewOutgoingContext(ctx, md)
	}
	req := &healthpb.HealthCheckRequest{}
	// run makes n calls through c and returns the elapsed and the
	// CPU time per call.
	run := func(c healthpb.HealthClient, n int) (wall, cpu float64) {
		c0, t0 := cpuTime(b), time.Now()
		for range n {
			resp, err := c.Check(ctx, req)
			if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
				b.Fatal(resp, err)
			}
		}
		t1, c1 := time.Now(), cpuTime(b)
		return float64(t1.Sub(t0)) / float64(n), float64(c1-c0) / float64(n)
	}
	run(bare, 1) // connect both before timing
	run(with, 1)
	const block = 256
	var bares, withs, deltas, cpuDeltas []float64
	b.ReportAllocs()
	b.ResetTimer()
	for done, i := 0, 0; done < b.N; i++ {
		n := min(block, b.N-done)
		var wb, cb, ww, cw float64
		if i%2 == 0 {
			wb, cb = run(bare, n)
			ww, cw = run(with, n)
		} else {
			ww, cw = run(with, n)
			wb, cb = run(bare, n)
		}
		bares, withs = append(bares, cb), append(withs, cw)
		deltas, cpuDeltas = append(deltas, ww-wb), append(cpuDeltas, cw-cb)
		done += n
	}
	b.StopTimer()
	b.ReportMetric(median(bares), "bare-cpu-ns/op")
	b.ReportMetric(median(withs), "ic-cpu-ns/op")
	b.ReportMetric(median(cpuDeltas), "delta-cpu-ns/op")
	b.ReportMetric(median(deltas), "delta-ns/op")
}

// cpuTime returns the CPU time the process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// median returns the median of xs, which it sorts.
func median(xs []float64) float64 {
	slices.Sort(xs)
	if n := len(xs); n%2 == 1 {
		return xs[n/2]
	} else {
		return (xs[n/2-1] + xs[n/2]) / 2
	}
}
