package cli

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/heed-go/heed/sqlitestore"
)

// migrationFiles returns the SQL files of a store's migrations directory,
// in version order.
func migrationFiles(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", dir, "migrations", "*.sql"))
	if err != nil || len(files) < 2 {
		t.Fatalf("migrations of %s: %v, %v", dir, files, err)
	}
	sort.Strings(files)
	return files
}

// sqlitePrevious builds a SQLite database at the previous schema version
// from the first migrations, as the heed before the last migration left
// it, and returns its path and the name of the missing migration.
func sqlitePrevious(t *testing.T) (path, missing string) {
	t.Helper()
	files := migrationFiles(t, "sqlitestore")
	path = filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE heed_schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT`); err != nil {
		t.Fatal(err)
	}
	for _, f := range files[:len(files)-1] {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(f)
		v, _ := strconv.Atoi(name[:strings.IndexByte(name, '_')])
		if _, err := db.Exec(string(b)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := db.Exec(`INSERT INTO heed_schema_migrations VALUES (?, ?, 0)`, v, name); err != nil {
			t.Fatal(err)
		}
	}
	return path, strings.TrimSuffix(filepath.Base(files[len(files)-1]), ".sql")
}

// sqliteVersion reads the schema version of a SQLite file.
func sqliteVersion(t *testing.T, path string) int {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v int
	if err := db.QueryRow(`SELECT max(version) FROM heed_schema_migrations`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// Only migrate, work, demo and bench upgrade a schema: the other commands
// on a database at the previous version name the missing migration and how
// to apply it, and change nothing.
func TestJobsOldSchemaSQLite(t *testing.T) {
	path, missing := sqlitePrevious(t)
	t.Setenv(envDB, path)
	old := sqliteVersion(t, path)
	for _, args := range [][]string{
		{"jobs", "ls"}, {"jobs", "stats"}, {"jobs", "show", "1"}, {"jobs", "dead", "ls"},
		{"jobs", "dead", "requeue", "--all"}, {"jobs", "purge", "--succeeded-older-than", "1h"},
		{"jobs", "enqueue", "noop", "{}"}, {"jobs", "work", "--no-migrate", "--for", "1ms"},
	} {
		code, _, stderr := heed(t, "", args...)
		if code != 1 || !strings.Contains(stderr, missing+" not applied") || !strings.Contains(stderr, "heed jobs migrate") {
			t.Errorf("%v: exit %d, stderr %q; want 1 naming %s and heed jobs migrate", args, code, stderr, missing)
		}
		if v := sqliteVersion(t, path); v != old {
			t.Fatalf("%v upgraded the schema from %d to %d", args, old, v)
		}
	}
	mustHeed(t, 0, "jobs", "migrate")
	if v := sqliteVersion(t, path); v != sqlitestore.SchemaVersion() {
		t.Errorf("after migrate: version %d, want %d", v, sqlitestore.SchemaVersion())
	}
	mustHeed(t, 0, "jobs", "ls")
}

// heed jobs work migrates by default.
func TestJobsWorkMigrates(t *testing.T) {
	path, _ := sqlitePrevious(t)
	t.Setenv(envDB, path)
	mustHeed(t, 0, "jobs", "work", "--for", "1ms", "--quiet")
	if v := sqliteVersion(t, path); v != sqlitestore.SchemaVersion() {
		t.Errorf("after work: version %d, want %d", v, sqlitestore.SchemaVersion())
	}
}

// Open errors name their cause, and read-only commands create nothing.
func TestJobsOpenErrors(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"jobs", "ls", "--db", "mysql://heed:s3cret@db/heed"}, `unsupported database URL scheme "mysql"`},
		{[]string{"jobs", "enqueue", "noop", "{}", "--db", "mysql://heed:s3cret@db/heed"}, `unsupported database URL scheme "mysql"`},
		{[]string{"jobs", "enqueue", "noop", "{}", "--db", dir}, "is a directory"},
		{[]string{"jobs", "enqueue", "noop", "{}", "--db", filepath.Join(dir, "no", "jobs.db")}, "directory " + filepath.Join(dir, "no") + " does not exist"},
		{[]string{"jobs", "ls", "--db", "jobs.db"}, "does not exist, and nothing was created"},
		{[]string{"jobs", "stats", "--db", "jobs.db"}, "does not exist, and nothing was created"},
		{[]string{"jobs", "dead", "requeue", "--all", "--db", "jobs.db"}, "does not exist, and nothing was created"},
	} {
		code, _, stderr := heed(t, "", tc.args...)
		if code != 1 || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "s3cret") {
			t.Errorf("%v: exit %d, stderr %q; want 1 with %q", tc.args, code, stderr, tc.want)
		}
	}
	if es, _ := os.ReadDir(dir); len(es) != 0 {
		t.Errorf("failed commands created %v", es)
	}
}

// Read-only commands open a SQLite file read-only, so they work on a file
// the user may read but not write.
func TestJobsReadOnlyFile(t *testing.T) {
	path := jobsTestDB(t)
	mustHeed(t, 0, "jobs", "enqueue", "noop", "{}")
	if err := os.Chmod(path, 0o444); err != nil {
		t.Fatal(err)
	}
	if out := mustHeed(t, 0, "jobs", "ls"); !strings.Contains(out, "noop") {
		t.Errorf("ls: %q", out)
	}
	mustHeed(t, 0, "jobs", "stats")
	mustHeed(t, 0, "jobs", "show", "1")
}

// The same on PostgreSQL: a schema at the previous version, built from the
// first migrations.
func TestJobsOldSchemaPostgres(t *testing.T) {
	base := os.Getenv("HEED_TEST_POSTGRES_URL")
	if base == "" {
		t.Skip("HEED_TEST_POSTGRES_URL not set")
	}
	dsn := pgTestSchema(t, base)
	t.Setenv(envDB, dsn)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	files := migrationFiles(t, "pgstore")
	if _, err := conn.Exec(ctx, `CREATE TABLE heed_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		t.Fatal(err)
	}
	for i, f := range files[:len(files)-1] {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, string(b)); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if _, err := conn.Exec(ctx, `INSERT INTO heed_migrations (version, name) VALUES ($1, $2)`, i+1, "x"); err != nil {
			t.Fatal(err)
		}
	}
	missing := strings.TrimSuffix(filepath.Base(files[len(files)-1]), ".sql")
	version := func() (v int) {
		if err := conn.QueryRow(ctx, `SELECT max(version) FROM heed_migrations`).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, args := range [][]string{{"jobs", "ls"}, {"jobs", "stats"}, {"jobs", "enqueue", "noop", "{}"}} {
		code, _, stderr := heed(t, "", args...)
		if code != 1 || !strings.Contains(stderr, missing+" not applied") || !strings.Contains(stderr, "heed jobs migrate") {
			t.Errorf("%v: exit %d, stderr %q; want 1 naming %s", args, code, stderr, missing)
		}
		if v := version(); v != len(files)-1 {
			t.Fatalf("%v changed the schema version to %d", args, v)
		}
	}
	mustHeed(t, 0, "jobs", "migrate")
	if v := version(); v != len(files) {
		t.Errorf("after migrate: version %d, want %d", v, len(files))
	}
}
