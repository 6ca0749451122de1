package storetest_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/heed-go/heed/queue/jobstore"
	"github.com/heed-go/heed/queue/storetest"
)

// openStore stands for your store's constructor (sqlitestore.Open, say).
var openStore func(ctx context.Context, path string) (interface {
	jobstore.Store
	Close() error
}, error)

// A store proves it keeps the queue's contract by running the suite from
// its own tests, with a fresh store for every subtest. This is how
// sqlitestore's test does it (with sqlitestore.Open); pgstore's gives each
// subtest its own schema.
func ExampleRun() {
	testStore := func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) jobstore.Store {
			s, err := openStore(t.Context(), filepath.Join(t.TempDir(), "heed.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		})
	}
	_ = testStore // in a _test.go file: func TestStore(t *testing.T) { testStore(t) }
}
