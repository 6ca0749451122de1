package pgstore

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/heed-go/heed/queue/jobstore"
	"github.com/jackc/pgx/v5/pgxpool"
)

// previousSchema returns a connection string for a fresh schema left at
// the previous schema version (the first SchemaVersion()-1 migrations), as
// an older heed leaves it.
func previousSchema(t *testing.T) string {
	t.Helper()
	_, u := testSchema(t)
	pool, err := pgxpool.New(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := migrate(t.Context(), pool, migrations[:SchemaVersion()-1], time.Now()); err != nil {
		t.Fatal(err)
	}
	return u
}

// TestOpenMigrateOff: a store opened without migrating changes nothing; it
// names the missing migrations of an older schema and refuses an empty
// one, unless told to create it.
func TestOpenMigrateOff(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	lastName := migrations[SchemaVersion()-1].Name

	u := previousSchema(t)
	for _, o := range []OpenOptions{{MigrateOff: true}, {MigrateOff: true, CreateEmpty: true}} {
		s, err := OpenWith(ctx, u, o)
		var behind *jobstore.SchemaBehindError
		if s != nil || !errors.As(err, &behind) || !errors.Is(err, jobstore.ErrSchemaTooOld) ||
			behind.Database != SchemaVersion()-1 || !slices.Equal(behind.Missing, []string{lastName}) {
			t.Fatalf("OpenWith(%+v) on the previous version = %v, %v; want a SchemaBehindError naming %s", o, s, err, lastName)
		}
		t.Logf("%+v: %v", o, err)
	}
	s, err := Open(ctx, u) // Open migrates
	if err != nil {
		t.Fatal(err)
	}
	if v, err := s.Version(ctx); err != nil || v != SchemaVersion() {
		t.Errorf("after Open: version %d, %v", v, err)
	}
	s.Close()

	_, empty := testSchema(t)
	s, err = OpenWith(ctx, empty, OpenOptions{MigrateOff: true})
	var behind *jobstore.SchemaBehindError
	if s != nil || !errors.As(err, &behind) || behind.Database != 0 {
		t.Fatalf("OpenWith(MigrateOff) on an empty schema = %v, %v; want a SchemaBehindError at version 0", s, err)
	}
	pool, err := pgxpool.New(ctx, empty)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var tables int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()`).Scan(&tables); err != nil || tables != 0 {
		t.Errorf("the empty schema has %d tables (%v) after a MigrateOff open, want 0", tables, err)
	}
	s, err = OpenWith(ctx, empty, OpenOptions{MigrateOff: true, CreateEmpty: true})
	if err != nil {
		t.Fatalf("OpenWith(CreateEmpty) on an empty schema: %v", err)
	}
	defer s.Close()
	if err := s.Check(ctx); err != nil {
		t.Errorf("Check after CreateEmpty: %v", err)
	}
}
