package jobrun_test

import (
	"testing"

	"github.com/heed-go/heed/internal/leakcheck"
)

// No test leaves a goroutine behind: the worker, the metrics server and the signal watcher end with the run.
func TestMain(m *testing.M) { leakcheck.Main(m) }
