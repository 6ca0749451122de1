// Package compare benchmarks heed against other Go retry and breaker
// libraries side by side, in one run. It is a separate module so that those
// libraries never become dependencies of heed:
//
//	cd internal/compare && go test -run x -bench . -benchmem
package compare
