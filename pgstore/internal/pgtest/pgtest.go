// Package pgtest finds the PostgreSQL server of heed's tests: the part of
// pgstoretest that only heed's own tests use.
package pgtest

import (
	"net/url"
	"os"
	"strings"
	"testing"
)

// EnvURL is the environment variable that names the test server.
const EnvURL = "HEED_TEST_POSTGRES_URL"

// SkipMessage is what tests say when they skip for want of a server.
const SkipMessage = EnvURL + " not set: skipping PostgreSQL tests"

// ServerURL returns the test server's connection string, or skips t when
// EnvURL is not set.
func ServerURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(EnvURL)
	if u == "" {
		t.Skip(SkipMessage)
	}
	return u
}

// WithParam returns the connection string conn (a URL or key=value
// string) with one more parameter.
func WithParam(t testing.TB, conn, key, value string) string {
	t.Helper()
	if strings.Contains(conn, "://") {
		u, err := url.Parse(conn)
		if err != nil {
			t.Fatalf("pgstoretest: %s is not a valid URL", EnvURL) // the error would show the password
		}
		q := u.Query()
		q.Set(key, value)
		u.RawQuery = q.Encode()
		return u.String()
	}
	return conn + " " + key + "='" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(value) + "'"
}
