package heedgrpc_test

import (
	"context"
	"github.com/heed-go/heed/deadline"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heed-go/heed/internal/leakcheck"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/retry"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

// The test service, heedtest.Echo, registered by hand (no generated code):
// Get (declared NO_SIDE_EFFECTS in echoFiles), Post (no option), Watch
// (server streaming) and Chat (bidirectional), all on StringValue.
const (
	mGet   = "/heedtest.Echo/Get"
	mPost  = "/heedtest.Echo/Post"
	mWatch = "/heedtest.Echo/Watch"
	mChat  = "/heedtest.Echo/Chat"
)

// echoFiles holds the descriptor of heedtest.Echo, whose Get has
// idempotency_level NO_SIDE_EFFECTS.
var echoFiles = func() *protoregistry.Files {
	sv := ".google.protobuf.StringValue"
	fd := &descriptorpb.FileDescriptorProto{
		Name:       proto.String("heedtest/echo.proto"),
		Package:    proto.String("heedtest"),
		Dependency: []string{"google/protobuf/wrappers.proto"},
		Syntax:     proto.String("proto3"),
		Service: []*descriptorpb.ServiceDescriptorProto{{
			Name: proto.String("Echo"),
			Method: []*descriptorpb.MethodDescriptorProto{
				{Name: proto.String("Get"), InputType: &sv, OutputType: &sv, Options: &descriptorpb.MethodOptions{
					IdempotencyLevel: descriptorpb.MethodOptions_NO_SIDE_EFFECTS.Enum()}},
				{Name: proto.String("Post"), InputType: &sv, OutputType: &sv},
				{Name: proto.String("Watch"), InputType: &sv, OutputType: &sv, ServerStreaming: proto.Bool(true), Options: &descriptorpb.MethodOptions{
					IdempotencyLevel: descriptorpb.MethodOptions_IDEMPOTENT.Enum()}},
				{Name: proto.String("Chat"), InputType: &sv, OutputType: &sv, ServerStreaming: proto.Bool(true), ClientStreaming: proto.Bool(true), Options: &descriptorpb.MethodOptions{
					IdempotencyLevel: descriptorpb.MethodOptions_IDEMPOTENT.Enum()}},
			},
		}},
	}
	f, err := protodesc.NewFile(fd, protoregistry.GlobalFiles)
	if err != nil {
		panic(err)
	}
	files := new(protoregistry.Files)
	if err := files.RegisterFile(f); err != nil {
		panic(err)
	}
	// Registered globally too, as generated code would be: a zero Client
	// then finds Get's option.
	if err := protoregistry.GlobalFiles.RegisterFile(f); err != nil {
		panic(err)
	}
	return files
}()

// echo is a scripted heedtest.Echo server. unary answers Get and Post;
// stream serves Watch and Chat. n counts the calls of each method from 1.
type echo struct {
	unary  func(ctx context.Context, method string, n int64, in string) (string, error)
	stream func(method string, n int64, ss grpc.ServerStream) error

	calls sync.Map // method -> *atomic.Int64
	mu    sync.Mutex
	seen  []string // retry-attempt values received, "" for none
	owned []bool   // deadline.UpstreamOwns of each handler's context
}

func (e *echo) count(method string) *atomic.Int64 {
	v, _ := e.calls.LoadOrStore(method, new(atomic.Int64))
	return v.(*atomic.Int64)
}

// Calls returns how many calls of method reached the handler.
func (e *echo) Calls(method string) int64 { return e.count(method).Load() }

func (e *echo) record(ctx context.Context) {
	v := ""
	if vs := metadata.ValueFromIncomingContext(ctx, "retry-attempt"); len(vs) > 0 {
		v = vs[0]
	}
	e.mu.Lock()
	e.seen = append(e.seen, v)
	e.owned = append(e.owned, deadline.UpstreamOwns(ctx))
	e.mu.Unlock()
}

// Seen returns the retry-attempt values received so far.
func (e *echo) Seen() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.seen...)
}

// Owned returns whether each call's handler context was marked as owned.
func (e *echo) Owned() []bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]bool(nil), e.owned...)
}

func (e *echo) desc() *grpc.ServiceDesc {
	unary := func(name string) grpc.MethodDesc {
		full := "/heedtest.Echo/" + name
		return grpc.MethodDesc{MethodName: name, Handler: func(_ any, ctx context.Context, dec func(any) error, ic grpc.UnaryServerInterceptor) (any, error) {
			in := new(wrapperspb.StringValue)
			if err := dec(in); err != nil {
				return nil, err
			}
			h := func(ctx context.Context, req any) (any, error) {
				e.record(ctx)
				n := e.count(full).Add(1)
				out, err := e.unary(ctx, full, n, req.(*wrapperspb.StringValue).GetValue())
				if err != nil {
					return nil, err
				}
				return wrapperspb.String(out), nil
			}
			if ic == nil {
				return h(ctx, in)
			}
			return ic(ctx, in, &grpc.UnaryServerInfo{FullMethod: full}, h)
		}}
	}
	stream := func(name string, client bool) grpc.StreamDesc {
		full := "/heedtest.Echo/" + name
		return grpc.StreamDesc{StreamName: name, ServerStreams: true, ClientStreams: client, Handler: func(_ any, ss grpc.ServerStream) error {
			e.record(ss.Context())
			return e.stream(full, e.count(full).Add(1), ss)
		}}
	}
	return &grpc.ServiceDesc{
		ServiceName: "heedtest.Echo",
		HandlerType: (*any)(nil),
		Methods:     []grpc.MethodDesc{unary("Get"), unary("Post")},
		Streams:     []grpc.StreamDesc{stream("Watch", false), stream("Chat", true)},
	}
}

// serve starts a gRPC server for e on lis with opts; it stops at cleanup.
func serve(t testing.TB, e *echo, lis net.Listener, opts ...grpc.ServerOption) {
	t.Helper()
	srv := grpc.NewServer(opts...)
	srv.RegisterService(e.desc(), struct{}{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(lis)
	}()
	t.Cleanup(func() {
		srv.Stop()
		<-done
	})
}

// bufServer serves e over an in-memory bufconn listener and returns a
// dialer option for it.
func bufServer(t testing.TB, e *echo, opts ...grpc.ServerOption) grpc.DialOption {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	serve(t, e, lis, opts...)
	return grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) })
}

// tcpServer serves e on a loopback TCP port and returns its address.
func tcpServer(t testing.TB, e *echo, opts ...grpc.ServerOption) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serve(t, e, lis, opts...)
	return lis.Addr().String()
}

// dial connects to target with opts and closes the connection at cleanup.
func dial(t testing.TB, target string, opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	opts = append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, opts...)
	cc, err := grpc.NewClient(target, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// fast is a policy with n attempts and 1 ms constant delays.
func fast(n int) retry.Policy {
	return retry.Policy{Attempts: n, Backoff: backoff.Schedule{Kind: backoff.Constant, Base: time.Millisecond, Jitter: backoff.NoJitter}}
}

func invoke(ctx context.Context, cc *grpc.ClientConn, method, in string) (string, error) {
	out := new(wrapperspb.StringValue)
	err := cc.Invoke(ctx, method, wrapperspb.String(in), out)
	return out.GetValue(), err
}

func ctxTimeout(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// closedPort returns a loopback address where nothing listens.
func closedPort(t testing.TB) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	return addr
}
