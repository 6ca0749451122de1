package pgstoretest_test

import (
	"testing"

	"github.com/heed-go/heed/pgstore"
	"github.com/heed-go/heed/pgstore/pgstoretest"
)

// A test that opens a store in a schema of its own. It skips, saying so,
// when HEED_TEST_POSTGRES_URL is not set.
func Example() {
	_ = func(t *testing.T) {
		_, url := pgstoretest.Schema(t) // dropped when t ends
		s, err := pgstore.Open(t.Context(), url)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		// ... use s ...
	}
	// Output:
}
