// Package compare benchmarks heed against other Go retry and breaker
// libraries side by side, in one run. It is a separate module so that those
// libraries never become dependencies of heed:
//
//	cd internal/compare && go test -run x -bench . -benchmem
//
// BenchmarkHTTPSuccess and BenchmarkHTTP503Then200 compare HTTP clients
// (plain net/http, hashicorp/go-retryablehttp, heed's retryhttp with and
// without its propagation headers, failsafe-go's failsafehttp), each an
// *http.Client over the same in-memory transport, with zero delays:
//
//	cd internal/compare && go test -run x -bench HTTP -benchmem -count 10
//
// BenchmarkGRPCInterceptor, BenchmarkGRPCOverhead and BenchmarkGRPCUnary
// compare unary client interceptors (heed's heedgrpc with and without its
// retry-attempt metadata and its attempt share, go-grpc-middleware's retry
// and failsafe-go's failsafegrpc with and without a timeout on each
// attempt, beside a no-op interceptor and one that only adds
// retry-attempt) on a first attempt that succeeds: alone around an invoker
// that succeeds at once, and over bufconn, paired with a bare connection
// to the same server, for a call with a deadline and one that carries a
// traceparent too:
//
//	cd internal/compare && go test -run x -bench 'GRPCInterceptor|GRPCOverhead' -count 5 -benchtime 2s
package compare
