package pgstore

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heed-go/heed/internal/schema"
	"github.com/heed-go/heed/queue/jobstore"
	"github.com/jackc/pgx/v5/pgxpool"
)

func TestMigrateIdempotent(t *testing.T) {
	t.Parallel()
	_, u := testSchema(t)
	ctx := t.Context()
	for range 2 {
		s, err := Open(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		v, err := s.Version(ctx)
		s.Close()
		if err != nil || v != SchemaVersion() {
			t.Fatalf("Version = %d, %v; want %d", v, err, SchemaVersion())
		}
	}
}

// TestMigrateConcurrent starts many migrations of one empty schema at
// once: the advisory lock makes them apply each migration exactly once.
func TestMigrateConcurrent(t *testing.T) {
	t.Parallel()
	_, u := testSchema(t)
	ctx := t.Context()
	pool, err := pgxpool.New(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	s, err := New(pool)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if err := s.Migrate(ctx); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	var rows int
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM heed_migrations) + (SELECT count(*) FROM heed_expansions)`).Scan(&rows); err != nil || rows != SchemaVersion() {
		t.Errorf("heed_migrations has %d rows (%v), want %d", rows, err, SchemaVersion())
	}
}

func TestSchemaTooNew(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := t.Context()
	newer := SchemaVersion() + 1
	if _, err := s.Pool().Exec(ctx, `INSERT INTO heed_migrations (version, name) VALUES ($1, 'from_the_future')`, newer); err != nil {
		t.Fatal(err)
	}
	err := s.Migrate(ctx)
	var ve *jobstore.SchemaTooNewError
	if !errors.As(err, &ve) || ve.Database != newer || ve.Binary != SchemaVersion() || !errors.Is(err, jobstore.ErrSchemaTooNew) {
		t.Fatalf("Migrate = %v, want a *queue.SchemaTooNewError matching jobstore.ErrSchemaTooNew", err)
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "pgstore: ") || !strings.Contains(msg, strconv.Itoa(newer)) || !strings.Contains(msg, strconv.Itoa(SchemaVersion())) {
		t.Errorf("error %q should name both versions", msg)
	}
	// Open refuses it too, and closes what it opened.
	var sp string
	if err := s.Pool().QueryRow(ctx, `SELECT current_schema()`).Scan(&sp); err != nil {
		t.Fatal(err)
	}
	if s2, err := Open(ctx, withParam(t, testURL(t), "search_path", sp)); !errors.Is(err, jobstore.ErrSchemaTooNew) {
		if s2 != nil {
			s2.Close()
		}
		t.Errorf("Open = %v, want ErrSchemaTooNew", err)
	}
}

func TestNewNilPool(t *testing.T) {
	if _, err := New(nil); err == nil {
		t.Error("New(nil) succeeded")
	}
}

// An empty URL is refused, not read as "every default" (which connects to
// whatever localhost serves), with an error that says what to give.
func TestOpenEmptyURL(t *testing.T) {
	for _, u := range []string{"", "  "} {
		s, err := Open(context.Background(), u)
		if s != nil || !errors.Is(err, jobstore.ErrInvalid) || err == nil ||
			!strings.HasPrefix(err.Error(), "pgstore: open: invalid input: the database URL is empty: want a postgres:// URL") ||
			strings.Count(err.Error(), "pgstore:") != 1 {
			t.Errorf("Open(%q) = %v, %v; want an error matching jobstore.ErrInvalid that says the URL is empty", u, s, err)
		}
	}
}

func TestOpenErrorsHidePassword(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, u := range []string{
		"postgres://heed:s3cr3t-pw@127.0.0.1:1/heed?sslmode=disable&connect_timeout=2", // nothing listens on port 1
		"postgres://heed:s3cr3t-pw@127.0.0.1:notaport/heed",                            // unparseable
		"postgres://heed:s3cr3t%2Dpw@[::1/heed",                                        // unparseable, escaped
		"host=127.0.0.1 port=1 user=heed password=s3cr3t-pw connect_timeout=2 sslmode=disable",
		"host=127.0.0.1 port=x user=heed password='s3cr3t-pw'",
	} {
		s, err := Open(ctx, u)
		if err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded", u)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "s3cr3t") || !strings.HasPrefix(msg, "pgstore: ") {
			t.Errorf("Open error shows the password or lacks the prefix: %s", msg)
		}
	}
}

func TestPassword(t *testing.T) {
	for conn, want := range map[string]string{
		"postgres://u:pw@h/db":          "pw",
		"postgresql://u:p@ss:w@h/db":    "p@ss:w",
		"postgres://u@h/db":             "",
		"postgres://h/db":               "",
		"host=h password=pw user=u":     "pw",
		"host=h password='p w\\'x' u=1": "p w\\'x",
		"host=h user=u":                 "",
		"password=pw":                   "pw",
	} {
		if got := password(conn); got != want {
			t.Errorf("password(%q) = %q, want %q", conn, got, want)
		}
	}
}

// TestMigrateUpgrade applies a later migration to a database at the
// current version: only the new one runs, and the version moves on.
func TestMigrateUpgrade(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := t.Context()
	next := append(slices.Clone(migrations), schema.Step{Version: SchemaVersion() + 1, Name: "900_extra",
		SQL: `CREATE TABLE heed_extra (x int); INSERT INTO heed_extra VALUES (1);`})
	applied, err := migrate(ctx, s.Pool(), next, time.Now())
	if err != nil || !slices.Equal(applied, []int{SchemaVersion() + 1}) {
		t.Fatalf("migrate = %v, %v; want [%d]", applied, err, SchemaVersion()+1)
	}
	if applied, err := migrate(ctx, s.Pool(), next, time.Now()); err != nil || len(applied) != 0 {
		t.Fatalf("second migrate = %v, %v; want nothing", applied, err)
	}
	if v, err := s.Version(ctx); err != nil || v != SchemaVersion()+1 {
		t.Errorf("Version = %d, %v", v, err)
	}
	// A failing migration changes nothing.
	bad := append(slices.Clone(next), schema.Step{Version: SchemaVersion() + 2, Name: "901_bad",
		SQL: `CREATE TABLE heed_more (x int); SELECT no_such_function();`})
	if _, err := migrate(ctx, s.Pool(), bad, time.Now()); err == nil || !strings.Contains(err.Error(), "bad") {
		t.Fatalf("bad migrate = %v, want an error naming the migration", err)
	}
	var exists bool
	if err := s.Pool().QueryRow(ctx, `SELECT to_regclass('heed_more') IS NOT NULL`).Scan(&exists); err != nil || exists {
		t.Errorf("a failed migration left its table (%v)", err)
	}
	if v, _ := s.Version(ctx); v != SchemaVersion()+1 {
		t.Errorf("Version after a failed migration = %d", v)
	}
}
