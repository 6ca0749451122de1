package cmdrun_test

import (
	"testing"

	"github.com/heed-go/heed/internal/leakcheck"
)

// No test leaves a goroutine behind: the command's pipes and its kill timer end with the command.
func TestMain(m *testing.M) { leakcheck.Main(m) }
