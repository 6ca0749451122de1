package clockctx_test

import (
	"testing"

	"github.com/heed-go/heed/internal/leakcheck"
)

// No test leaves a goroutine behind: the goroutine that watches a fake clock's deadline ends with its context.
func TestMain(m *testing.M) { leakcheck.Main(m) }
