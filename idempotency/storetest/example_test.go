package storetest_test

import (
	"testing"

	"github.com/heed-go/heed/idempotency"
	"github.com/heed-go/heed/idempotency/keystore"
	"github.com/heed-go/heed/idempotency/storetest"
)

// A store proves it keeps the idempotency contract (atomic claims, replay,
// leases, expiry, scopes) by running the suite from its own tests, with a
// fresh store for every subtest.
func ExampleRun() {
	testStore := func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) keystore.Store {
			return idempotency.NewMemoryStore()
		})
	}
	_ = testStore // in a _test.go file: func TestStore(t *testing.T) { testStore(t) }
}
