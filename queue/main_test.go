package queue

import (
	"testing"

	"github.com/heed-go/heed/internal/leakcheck"
)

// No test leaves a goroutine behind (the worker's tests over a real store
// check the same in sqlitestore/internal/queuetest).
func TestMain(m *testing.M) { leakcheck.Main(m) }
