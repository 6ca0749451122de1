package pgstore

import (
	"testing"

	"github.com/heed-go/heed/queue/jobstore"
	"github.com/heed-go/heed/queue/storetest"
)

// TestInspector runs jobstore.Inspector's conformance suite, each test in a
// fresh schema.
func TestInspector(t *testing.T) {
	testURL(t)
	storetest.RunInspector(t, func(t *testing.T) jobstore.Store {
		_, u := testSchema(t)
		s, err := Open(t.Context(), u)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return s
	})
}
