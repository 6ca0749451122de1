package jobbench_test

import (
	"testing"

	"github.com/heed-go/heed/internal/leakcheck"
)

// No test leaves a goroutine behind: the bench's producers and workers end with the run.
func TestMain(m *testing.M) { leakcheck.Main(m) }
