// Package pgstoretest gives each test a PostgreSQL schema of its own, so
// that tests of code built on pgstore can run in parallel against one
// server and leave nothing behind.
//
// Tests run when the environment variable HEED_TEST_POSTGRES_URL names a
// server (for example postgres://postgres@127.0.0.1:5432/test?sslmode=disable)
// and skip, saying so, when it is not set.
package pgstoretest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
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

// Schema creates a uniquely named, empty schema for t, dropped (with
// everything in it) when t ends. It returns the schema's name and a
// connection string whose connections use it: the server's, with
// search_path set as a run-time parameter (pgx sends connection-string
// parameters it does not know to the server as run-time parameters, so
// every connection of a pool opened with it uses the schema). It skips t
// when EnvURL is not set.
func Schema(t testing.TB) (name, connString string) {
	t.Helper()
	base := ServerURL(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	name = "heed_test_" + hex.EncodeToString(b[:])
	ident := pgx.Identifier{name}.Sanitize()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("pgstoretest: connect to the server of %s: %v", EnvURL, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+ident); err != nil {
		t.Fatalf("pgstoretest: create schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("pgstoretest: drop schema %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+ident+" CASCADE"); err != nil {
			t.Errorf("pgstoretest: drop schema %s: %v", name, err)
		}
	})
	return name, WithParam(t, base, "search_path", name)
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
