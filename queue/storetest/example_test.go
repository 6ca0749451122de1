package storetest_test

import (
	"path/filepath"
	"testing"

	"github.com/heed-go/heed/queue/jobstore"
	"github.com/heed-go/heed/queue/storetest"
	"github.com/heed-go/heed/sqlitestore"
)

// A store proves it keeps the queue's contract by running the suite from
// its own tests, with a fresh store for every subtest. This is how
// sqlitestore's test does it; pgstore's gives each subtest its own schema.
func ExampleRun() {
	testStore := func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) jobstore.Store {
			s, err := sqlitestore.Open(t.Context(), filepath.Join(t.TempDir(), "heed.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		})
	}
	_ = testStore // in a _test.go file: func TestStore(t *testing.T) { testStore(t) }
}
