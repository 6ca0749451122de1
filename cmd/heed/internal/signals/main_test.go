package signals

import (
	"testing"

	"github.com/heed-go/heed/internal/leakcheck"
)

// No test leaves a goroutine behind: the goroutine that turns a signal into
// a cancel ends when its context does.
func TestMain(m *testing.M) { leakcheck.Main(m) }
