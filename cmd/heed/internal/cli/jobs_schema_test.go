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
	files, err := filepath.Glob(filepath.Join("..", "..", "..", "..", dir, "migrations", "*.sql"))
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
	var v, ahead int
	if err := db.QueryRow(`SELECT max(version) FROM heed_schema_migrations`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	// Migrations above the floor, in a table older heeds did not make.
	if db.QueryRow(`SELECT coalesce(max(version), 0) FROM heed_schema_expansions`).Scan(&ahead) == nil {
		v = max(v, ahead)
	}
	return v
}

// Only migrate, work, demo and bench upgrade a schema. The commands that
// read (ls, show, stats, dead ls) read a database at the previous version
// as it is, with a note; the others name the missing migration and how to
// apply it. None changes the schema.
func TestJobsOldSchemaSQLite(t *testing.T) {
	path, missing := sqlitePrevious(t)
	t.Setenv(envDB, path)
	old := sqliteVersion(t, path)
	for _, args := range [][]string{{"jobs", "ls"}, {"jobs", "stats"}, {"jobs", "show", "1"}, {"jobs", "dead", "ls"}} {
		code, _, stderr := heed(t, "", args...)
		want := exitOK
		if args[1] == "show" {
			want = exitNoJob // read: the job does not exist
		}
		if code != want || !strings.Contains(stderr, "behind this heed's") || !strings.Contains(stderr, "read as it is, nothing changed") {
			t.Errorf("%v: exit %d, stderr %q; want %d and a note that the schema is behind", args, code, stderr, want)
		}
		if v := sqliteVersion(t, path); v != old {
			t.Fatalf("%v upgraded the schema from %d to %d", args, old, v)
		}
	}
	for _, args := range [][]string{
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
	// migrate says what it applied and whom it leaves behind.
	out := mustHeed(t, 0, "jobs", "migrate")
	if !strings.Contains(out, "applied "+missing+"\n") || !strings.Contains(out, "now refuse this database") && !strings.Contains(out, "Nothing is left behind") ||
		!strings.Contains(out, "compatible down to ") {
		t.Errorf("migrate:\n%s", out)
	}
	if v := sqliteVersion(t, path); v != sqlitestore.SchemaVersion() {
		t.Errorf("after migrate: version %d, want %d", v, sqlitestore.SchemaVersion())
	}
	if _, _, stderr := heed(t, "", "jobs", "ls"); strings.Contains(stderr, "behind") {
		t.Errorf("jobs ls after migrate: %q", stderr)
	}
	if out := mustHeed(t, 0, "jobs", "migrate"); strings.Contains(out, "applied") {
		t.Errorf("migrate again:\n%s", out)
	}
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
	// A search_path naming a schema without heed's tables (a typo of
	// the jobs' schema) is not told to migrate it.
	if code, _, stderr := heed(t, "", "jobs", "ls"); code != 1 || !strings.Contains(stderr, "search_path is not the one meant") ||
		strings.Contains(stderr, "apply it with") {
		t.Errorf("jobs ls on an empty schema: exit %d, stderr %q", code, stderr)
	}
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
		if err := conn.QueryRow(ctx, `SELECT greatest((SELECT max(version) FROM heed_migrations),
			CASE WHEN to_regclass('heed_expansions') IS NOT NULL THEN (xpath('/row/m/text()', query_to_xml('SELECT max(version) AS m FROM heed_expansions', false, true, '')))[1]::text::int END)`).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, args := range [][]string{{"jobs", "ls"}, {"jobs", "stats"}} {
		if code, _, stderr := heed(t, "", args...); code != 0 || !strings.Contains(stderr, "read as it is, nothing changed") {
			t.Errorf("%v on the previous schema: exit %d, stderr %q; want it read as it is", args, code, stderr)
		}
	}
	for _, args := range [][]string{{"jobs", "enqueue", "noop", "{}"}, {"jobs", "dead", "requeue", "--all"}} {
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
