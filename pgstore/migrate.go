package pgstore

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/heed-go/heed/queue"
	"github.com/jackc/pgx/v5"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migration is one embedded, numbered SQL file.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations is the embedded list, sorted by version; loadMigrations
// checks at init that versions are 1, 2, 3 ... without gaps.
var migrations = mustLoadMigrations(migrationFS)

func mustLoadMigrations(fsys fs.FS) []migration {
	ms, err := loadMigrations(fsys)
	if err != nil {
		panic(err)
	}
	return ms
}

// loadMigrations reads files named NNN_name.sql from fsys's migrations
// directory.
func loadMigrations(fsys fs.FS) ([]migration, error) {
	names, err := fs.Glob(fsys, "migrations/*.sql")
	if err != nil {
		return nil, fmt.Errorf("pgstore: list migrations: %w", err)
	}
	var ms []migration
	for _, name := range names {
		base := path.Base(name)
		num, rest, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("pgstore: migration %s: name must look like 001_name.sql", base)
		}
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("pgstore: read migration %s: %w", base, err)
		}
		ms = append(ms, migration{version: v, name: strings.TrimSuffix(rest, ".sql"), sql: string(b)})
	}
	slices.SortFunc(ms, func(a, b migration) int { return a.version - b.version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("pgstore: migration %d_%s: expected version %d (versions must be 1, 2, 3 ... without gaps)", m.version, m.name, i+1)
		}
	}
	return ms, nil
}

// SchemaVersion is the newest schema version this package knows: the
// number of its embedded migrations. A database at a higher version was
// migrated by a newer heed; [Store.Migrate] and [Open] refuse it with a
// [*VersionError].
const SchemaVersion = 7

func init() {
	if len(migrations) != SchemaVersion {
		panic(fmt.Sprintf("pgstore: SchemaVersion is %d but %d migrations are embedded", SchemaVersion, len(migrations)))
	}
}

// VersionError reports a database whose schema version is newer than the
// newest migration embedded in this binary: a newer heed migrated it, and
// this one could misread its tables. Upgrade heed, or point it at another
// database. It matches queue.ErrSchemaTooNew.
type VersionError struct {
	// Database is the schema version recorded in the database.
	Database int
	// Binary is the newest version this binary knows ([SchemaVersion]).
	Binary int
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("pgstore: database schema version %d is newer than this binary knows (version %d): upgrade heed", e.Database, e.Binary)
}

// Is reports whether target is queue.ErrSchemaTooNew.
func (e *VersionError) Is(target error) bool { return target == queue.ErrSchemaTooNew }

// SchemaBehindError reports a database whose schema lacks migrations this
// binary has, found by a store opened without migrating (see
// [OpenOptions]). Apply them with [Store.Migrate] (heed jobs migrate). It
// matches queue.ErrSchemaTooOld.
type SchemaBehindError struct {
	// Database is the schema version recorded in the database (0: no heed
	// tables at all).
	Database int
	// Binary is the newest version this binary knows ([SchemaVersion]).
	Binary int
	// Missing names the migrations not applied, in order
	// ("003_succeeded_index").
	Missing []string
}

func (e *SchemaBehindError) Error() string {
	if e.Database == 0 {
		return "pgstore: the database has no heed schema (no heed_migrations table in the search_path schema)"
	}
	return fmt.Sprintf("pgstore: database schema version %d is behind this binary's %d: %s %s not applied",
		e.Database, e.Binary, plural(len(e.Missing), "migration", "migrations"), strings.Join(e.Missing, ", "))
}

// plural is "migration" or "migrations".
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Is reports whether target is queue.ErrSchemaTooOld.
func (e *SchemaBehindError) Is(target error) bool { return target == queue.ErrSchemaTooOld }

// Check reads the database's schema version without changing anything: nil
// when it is [SchemaVersion], a [*SchemaBehindError] when migrations are
// missing, a [*VersionError] when it is newer than this binary knows.
func (s *Store) Check(ctx context.Context) error {
	return check(ctx, s.pool, migrations)
}

func check(ctx context.Context, q querier, ms []migration) error {
	v, err := version(ctx, q)
	if err != nil {
		return fmt.Errorf("pgstore: read schema version: %w", err)
	}
	switch {
	case v > len(ms):
		return &VersionError{Database: v, Binary: len(ms)}
	case v < len(ms):
		e := &SchemaBehindError{Database: v, Binary: len(ms)}
		for _, m := range ms[v:] {
			e.Missing = append(e.Missing, fmt.Sprintf("%03d_%s", m.version, m.name))
		}
		return e
	}
	return nil
}

// versionTable records applied migrations, one row per version.
const versionTable = `CREATE TABLE IF NOT EXISTS heed_migrations (
	version    integer PRIMARY KEY,
	name       text NOT NULL,
	applied_at timestamptz NOT NULL DEFAULT now()
)`

// migrateLock is taken (per schema) while migrating, so that two processes
// starting at once do not both apply the same migration.
const migrateLock = `SELECT pg_advisory_xact_lock(hashtext('heed_migrations'), hashtext(current_schema()))`

// Migrate brings the database schema up to [SchemaVersion], applying the
// missing embedded migrations in order, in one transaction, under an
// advisory lock, so that processes starting at once do not race. It is a
// no-op when the schema is current, and returns a [*VersionError] (and
// changes nothing) when the schema is newer than this binary knows.
//
// Tables are created in the first schema of the connections' search_path,
// with names starting "heed_".
func (s *Store) Migrate(ctx context.Context) error {
	_, err := migrate(ctx, s.pool, migrations)
	return err
}

// db is what migrate needs: the pool (or a connection).
type db interface {
	querier
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Version returns the schema version recorded in the database: 0 for a
// database never migrated.
func (s *Store) Version(ctx context.Context) (int, error) {
	v, err := version(ctx, s.pool)
	if err != nil {
		return 0, fmt.Errorf("pgstore: read schema version: %w", err)
	}
	return v, nil
}

// version reads the schema version without writing anything.
func version(ctx context.Context, q querier) (int, error) {
	var exists bool
	if err := q.QueryRow(ctx, `SELECT to_regclass('heed_migrations') IS NOT NULL`).Scan(&exists); err != nil || !exists {
		return 0, err
	}
	var v int
	err := q.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM heed_migrations`).Scan(&v)
	return v, err
}

// migrate applies ms beyond the database's version and returns the
// versions it applied.
func migrate(ctx context.Context, db db, ms []migration) (applied []int, err error) {
	// Fast path, without DDL or locks (so a role without CREATE rights can
	// open a current database).
	current, err := version(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("pgstore: migrate: read version: %w", err)
	}
	if current > len(ms) {
		return nil, &VersionError{Database: current, Binary: len(ms)}
	}
	if current == len(ms) {
		return nil, nil
	}
	tx, err := db.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("pgstore: migrate: begin: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	if _, err := tx.Exec(ctx, migrateLock); err != nil {
		return nil, fmt.Errorf("pgstore: migrate: take advisory lock: %w", err)
	}
	if _, err := tx.Exec(ctx, versionTable); err != nil {
		return nil, fmt.Errorf("pgstore: migrate: create heed_migrations: %w", err)
	}
	if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM heed_migrations`).Scan(&current); err != nil {
		return nil, fmt.Errorf("pgstore: migrate: read version: %w", err)
	}
	if current > len(ms) {
		return nil, &VersionError{Database: current, Binary: len(ms)}
	}
	for _, m := range ms[current:] {
		if _, err := tx.Exec(ctx, m.sql); err != nil {
			return nil, fmt.Errorf("pgstore: migrate: apply %03d_%s: %w", m.version, m.name, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO heed_migrations (version, name) VALUES ($1, $2)`, m.version, m.name); err != nil {
			return nil, fmt.Errorf("pgstore: migrate: record %03d_%s: %w", m.version, m.name, err)
		}
		applied = append(applied, m.version)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("pgstore: migrate: commit: %w", err)
	}
	return applied, nil
}
