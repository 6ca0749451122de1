package pgstore

import (
	"testing"

	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/storetest"
)

// TestInspector runs queue.Inspector's conformance suite, each test in a
// fresh schema.
func TestInspector(t *testing.T) {
	testURL(t)
	storetest.RunInspector(t, func(t *testing.T) queue.Store {
		_, u := testSchema(t)
		s, err := Open(t.Context(), u)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return s
	})
}
