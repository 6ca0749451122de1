package retry_test

import (
	"testing"

	"github.com/heed-go/heed/internal/leakcheck"
)

// No test leaves a goroutine behind: a hedged call's coordinator and its attempts end with the call.
func TestMain(m *testing.M) { leakcheck.Main(m) }
