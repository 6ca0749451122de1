package sqlitestore_test

import (
	"testing"

	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/storetest"
)

func TestInspector(t *testing.T) {
	storetest.RunInspector(t, func(t *testing.T) queue.Store { return open(t) })
}
