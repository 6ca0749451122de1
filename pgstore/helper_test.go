package pgstore

import (
	"context"
	"os"
	"testing"

	"github.com/heed-go/heed/internal/leakcheck"
	"github.com/heed-go/heed/pgstore/internal/pgtest"
	"github.com/heed-go/heed/pgstore/pgstoretest"
)

func TestMain(m *testing.M) {
	if os.Getenv(pgtest.EnvURL) == "" {
		// Shown by go test -v; each test also skips with this message.
		os.Stdout.WriteString("pgstore: " + pgtest.SkipMessage + "\n")
	}
	leakcheck.Main(m)
}

// testURL returns the server's URL, or skips t.
func testURL(t testing.TB) string {
	t.Helper()
	return pgtest.ServerURL(t)
}

// testSchema gives t a schema of its own: see pgstoretest.Schema.
func testSchema(t testing.TB) (schema, schemaURL string) {
	t.Helper()
	return pgstoretest.Schema(t)
}

// withParam adds a parameter to a connection string.
func withParam(t testing.TB, conn, key, value string) string {
	t.Helper()
	return pgtest.WithParam(t, conn, key, value)
}

// openTest opens a store in a fresh schema, closed when t ends.
func openTest(t testing.TB) *Store {
	t.Helper()
	_, u := testSchema(t)
	s, err := Open(context.Background(), u)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
