package promexport_test

import (
	"testing"

	"github.com/heed-go/heed/internal/leakcheck"
)

// No test leaves a goroutine behind: the server's goroutine ends with Close or with Serve's context.
func TestMain(m *testing.M) { leakcheck.Main(m) }
