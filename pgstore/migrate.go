package pgstore

import (
	"context"
	"embed"
	"fmt"
	"strings"
	"time"

	"github.com/heed-go/heed/internal/schema"
	"github.com/heed-go/heed/queue/jobstore"
	"github.com/jackc/pgx/v5"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrations is the embedded list, sorted by version; loading checks at
// init that versions are 1, 2, 3 ... without gaps. Migrations that need Go
// (data rewrites, schema.Rewrites) are attached by version.
var migrations = schema.MustLoad("pgstore", migrationFS, "migrations", schema.Rewrites(rewriteJobs))

// SchemaVersion returns the newest schema version this package knows: the
// number of its embedded migrations. A database at a higher version was
// migrated by a newer heed; [Store.Migrate] and [Open] refuse it with a
// [*jobstore.SchemaTooNewError].
func SchemaVersion() int { return len(migrations) }

// Check reads the database's schema version without changing anything: nil
// when it is [SchemaVersion], a [*jobstore.SchemaBehindError] when migrations
// are missing, a [*jobstore.SchemaTooNewError] when it is newer than this
// binary knows.
func (s *Store) Check(ctx context.Context) error {
	return schema.Check(ctx, "pgstore", pgDB{s.pool}, migrations)
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
// no-op when the schema is current, and returns a
// [*jobstore.SchemaTooNewError] (and changes nothing) when the schema is
// newer than this binary knows. Each migration is recorded with the time
// of the store's clock ([OpenOptions].Clock).
//
// Tables are created in the first schema of the connections' search_path,
// with names starting "heed_".
func (s *Store) Migrate(ctx context.Context) error {
	_, err := migrate(ctx, s.pool, migrations, s.clock.Now())
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

// CompatibleDownTo returns the oldest binary schema version ([SchemaVersion]
// of the heed that built it) that works on the database: the version of
// its last migration that older binaries cannot work with. Binaries that
// know an older schema refuse the database with a
// [*jobstore.SchemaTooNewError].
func (s *Store) CompatibleDownTo(ctx context.Context) (int, error) {
	l, err := level(ctx, s.pool)
	if err != nil {
		return 0, fmt.Errorf("pgstore: read schema version: %w", err)
	}
	return l.Floor, nil
}

// version reads the schema version without writing anything.
func version(ctx context.Context, q querier) (int, error) {
	l, err := level(ctx, q)
	return l.Version, err
}

// level reads the floor from heed_migrations (as every heed has) and the
// version from heed_expansions too when it exists, without writing
// anything.
func level(ctx context.Context, q querier) (schema.Level, error) {
	var ledger, expansions bool
	if err := q.QueryRow(ctx, `SELECT to_regclass('heed_migrations') IS NOT NULL, to_regclass('heed_expansions') IS NOT NULL`).Scan(&ledger, &expansions); err != nil || !ledger {
		return schema.Level{}, err
	}
	queryInt := func(ctx context.Context, sql string) (n int, err error) {
		err = q.QueryRow(ctx, sql).Scan(&n)
		return n, err
	}
	table := ""
	if expansions {
		table = "heed_expansions"
	}
	return schema.ReadLevel(ctx, queryInt, "heed_migrations", table)
}

// expansionTable records the migrations applied above the floor (see
// schema.Level), as versionTable does the others.
const expansionTable = `CREATE TABLE IF NOT EXISTS heed_expansions (
	version    integer PRIMARY KEY,
	name       text NOT NULL,
	applied_at timestamptz NOT NULL DEFAULT now()
)`

// migrate applies steps beyond the database's version, recorded at now,
// and returns the versions it applied.
func migrate(ctx context.Context, d db, steps []schema.Step, now time.Time) ([]int, error) {
	return schema.Run(ctx, "pgstore", pgDB{d}, steps, now)
}

// pgDB and pgTx are the store's side of the shared migration runner.
type pgDB struct{ d db }

func (p pgDB) Version(ctx context.Context) (schema.Level, error) { return level(ctx, p.d) }

func (p pgDB) Begin(ctx context.Context) (schema.Tx, error) {
	tx, err := p.d.Begin(ctx)
	if err != nil {
		return nil, err
	}
	for _, q := range []string{migrateLock, versionTable, expansionTable} {
		if _, err := tx.Exec(ctx, q); err != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
			return nil, err
		}
	}
	return pgTx{tx}, nil
}

type pgTx struct{ tx pgx.Tx }

func (t pgTx) Exec(ctx context.Context, sql string, args ...any) error {
	_, err := t.tx.Exec(ctx, sql, args...)
	return err
}

func (t pgTx) Version(ctx context.Context) (schema.Level, error) { return level(ctx, t.tx) }

// Record keeps the name without its number ("succeeded_index"), as heed
// always recorded it here.
func (t pgTx) Record(ctx context.Context, s schema.Step, at time.Time, ahead bool) error {
	table := "heed_migrations"
	if ahead {
		table = "heed_expansions"
	}
	_, name, _ := strings.Cut(s.Name, "_")
	_, err := t.tx.Exec(ctx, `INSERT INTO `+table+` (version, name, applied_at) VALUES ($1, $2, $3)`, s.Version, name, at)
	return err
}

func (t pgTx) Promote(ctx context.Context, floor int) error {
	if _, err := t.tx.Exec(ctx, `INSERT INTO heed_migrations SELECT * FROM heed_expansions WHERE version <= $1`, floor); err != nil {
		return err
	}
	_, err := t.tx.Exec(ctx, `DELETE FROM heed_expansions WHERE version <= $1`, floor)
	return err
}

func (t pgTx) Commit(ctx context.Context) error   { return t.tx.Commit(ctx) }
func (t pgTx) Rollback(ctx context.Context) error { return t.tx.Rollback(ctx) }

// rewriteJobs returns the Go step of the migrations that rewrite stored
// jobs (005: policies and histories in the stored forms with names and
// text durations; 008: history words, the outcome "ok" -> "success"; 010:
// runs of deferrals as one entry with a count): it
// rewrites, in the migration's transaction, every job's policy and history
// with schema.RewriteJobs, or only the jobs that match where (an SQL
// condition on the history as text) when it is not empty.
func rewriteJobs(where string) func(context.Context, schema.Tx) error {
	cond := ""
	if where != "" {
		cond = " AND (" + strings.ReplaceAll(where, "history", "history::text") + ")"
	}
	return func(ctx context.Context, stx schema.Tx) error {
		tx := stx.(pgTx).tx
		read := func(ctx context.Context, after int64, limit int) ([]schema.JobRow, error) {
			rows, err := tx.Query(ctx, `SELECT id, policy::text, history::text FROM heed_jobs WHERE id > $1`+cond+` ORDER BY id LIMIT $2`, after, limit)
			if err != nil {
				return nil, err
			}
			defer rows.Close()
			return schema.ScanJobs(rows)
		}
		write := func(ctx context.Context, r schema.JobRow) error {
			_, err := tx.Exec(ctx, `UPDATE heed_jobs SET policy = $2::jsonb, history = $3::json WHERE id = $1`, r.ID, string(r.Policy), string(r.History))
			return err
		}
		return schema.RewriteJobs(ctx, read, write)
	}
}

// The schema errors are queue's, shared by both stores.
var (
	_ error = (*jobstore.SchemaTooNewError)(nil)
	_ error = (*jobstore.SchemaBehindError)(nil)
)
