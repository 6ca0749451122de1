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
package compare
