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
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/heed-go/heed/pgstore/internal/pgtest"
)

// Schema creates a uniquely named, empty schema for t, dropped (with
// everything in it) when t ends. It returns the schema's name and a
// connection string whose connections use it: the server's, with
// search_path set as a run-time parameter (pgx sends connection-string
// parameters it does not know to the server as run-time parameters, so
// every connection of a pool opened with it uses the schema). It skips t
// when HEED_TEST_POSTGRES_URL is not set.
func Schema(t testing.TB) (name, connString string) {
	t.Helper()
	base := pgtest.ServerURL(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	name = "heed_test_" + hex.EncodeToString(b[:])
	ident := pgx.Identifier{name}.Sanitize()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("pgstoretest: connect to the server of %s: %v", pgtest.EnvURL, err)
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
	return name, pgtest.WithParam(t, base, "search_path", name)
}
