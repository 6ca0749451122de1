package cli

import (
	"os"
	"sync"
	"testing"

	"github.com/heed-go/heed/internal/leakcheck"
)

// The heed binary the end-to-end tests build once (heedBinary), removed
// after the tests.
var (
	binOnce sync.Once
	binPath string
	binErr  error
	binDir  string
)

// No test leaves a goroutine behind: the workers, servers, pipes and
// signal watchers a command starts end when it returns.
func TestMain(m *testing.M) {
	code := leakcheck.Run(m)
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}
