package sqlitestore

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"time"

	"github.com/heed-go/heed/internal/schema"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrations is the embedded list, sorted by version; loading checks at
// init that versions are 1, 2, 3 ... without gaps. Migrations that need Go
// (data rewrites, schema.Rewrites) are attached by version.
var migrations = schema.MustLoad("sqlitestore", migrationFS, "migrations", schema.Rewrites(rewriteJobs))

// SchemaVersion returns the newest schema version this binary knows.
func SchemaVersion() int { return len(migrations) }

// CompatibleDownTo returns the oldest binary schema version ([SchemaVersion]
// of the heed that built it) that works on the database: the version of
// its last migration that older binaries cannot work with. Binaries that
// know an older schema refuse the database with a
// [*queue.SchemaTooNewError].
func (s *Store) CompatibleDownTo(ctx context.Context) (int, error) {
	l, err := liteDB{s, s.r}.Version(ctx)
	return l.Floor, err
}

// Version returns the schema version recorded in the database: 0 for a
// database never migrated.
func (s *Store) Version(ctx context.Context) (int, error) {
	l, err := liteDB{s, s.r}.Version(ctx)
	if err != nil {
		return 0, fmt.Errorf("sqlitestore: read schema version: %w", err)
	}
	return l.Version, nil
}

// Check reads the schema version without changing anything: nil when it
// is [SchemaVersion], a [*queue.SchemaBehindError] when migrations are
// missing, a [*queue.SchemaTooNewError] (matching jobstore.ErrSchemaTooNew) when it
// is newer.
func (s *Store) Check(ctx context.Context) error {
	return schema.Check(ctx, "sqlitestore", liteDB{s, s.r}, migrations)
}

// Migrate applies the pending embedded migrations in one transaction and
// records them in heed_schema_migrations, with the time of the store's
// clock ([OpenOptions].Clock). It is safe to call again (a no-op when none
// is pending) and from several processes at once. It returns a
// [*queue.SchemaTooNewError] (matching jobstore.ErrSchemaTooNew), and changes
// nothing, when the database is newer than this binary.
func (s *Store) Migrate(ctx context.Context) error { return s.migrate(ctx, 0) }

// migrate applies the pending migrations up to version stopAt (0: all).
func (s *Store) migrate(ctx context.Context, stopAt int) error {
	steps := migrations
	if stopAt > 0 {
		steps = steps[:stopAt]
	}
	_, err := schema.Run(ctx, "sqlitestore", liteDB{s, s.w}, steps, s.clock.Now())
	return err
}

// liteDB and liteTx are the store's side of the shared migration runner.
// The writer's transactions begin IMMEDIATE (see Open), which is the
// migration lock between processes.
type liteDB struct {
	s  *Store
	db *sql.DB
}

// Version reads the level: the floor from heed_schema_migrations (as
// every heed has), the version from heed_schema_expansions too when it
// exists.
func (d liteDB) Version(ctx context.Context) (schema.Level, error) {
	var n int
	if err := d.db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'heed_schema_migrations'`).Scan(&n); err != nil || n == 0 {
		return schema.Level{}, err
	}
	if err := d.db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'heed_schema_expansions'`).Scan(&n); err != nil {
		return schema.Level{}, err
	}
	return level(ctx, d.db, n > 0)
}

// level reads the floor and the version; the expansions table exists
// when expansions is true.
func level(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, expansions bool) (schema.Level, error) {
	queryInt := func(ctx context.Context, sql string) (n int, err error) {
		err = q.QueryRowContext(ctx, sql).Scan(&n)
		return n, err
	}
	table := ""
	if expansions {
		table = "heed_schema_expansions"
	}
	return schema.ReadLevel(ctx, queryInt, "heed_schema_migrations", table)
}

// ledgerColumns are the columns of both bookkeeping tables.
const ledgerColumns = `(
		version    INTEGER PRIMARY KEY,
		name       TEXT    NOT NULL,
		applied_at INTEGER NOT NULL
	) STRICT`

func (d liteDB) Begin(ctx context.Context) (schema.Tx, error) {
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	for _, t := range []string{"heed_schema_migrations", "heed_schema_expansions"} {
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+t+` `+ledgerColumns); err != nil {
			tx.Rollback()
			return nil, err
		}
	}
	return liteTx{tx}, nil
}

type liteTx struct{ tx *sql.Tx }

func (t liteTx) Exec(ctx context.Context, q string, args ...any) error {
	_, err := t.tx.ExecContext(ctx, q, args...)
	return err
}

func (t liteTx) Version(ctx context.Context) (schema.Level, error) {
	return level(ctx, t.tx, true)
}

// Record keeps the file's name ("0003_succeeded_index.sql"), as heed always
// recorded it here, and the time in Unix microseconds.
func (t liteTx) Record(ctx context.Context, s schema.Step, at time.Time, ahead bool) error {
	table := "heed_schema_migrations"
	if ahead {
		table = "heed_schema_expansions"
	}
	_, err := t.tx.ExecContext(ctx, `INSERT INTO `+table+` (version, name, applied_at) VALUES (?, ?, ?)`,
		s.Version, s.Name+".sql", at.UnixMicro())
	return err
}

func (t liteTx) Promote(ctx context.Context, floor int) error {
	if _, err := t.tx.ExecContext(ctx, `INSERT INTO heed_schema_migrations SELECT * FROM heed_schema_expansions WHERE version <= ?`, floor); err != nil {
		return err
	}
	_, err := t.tx.ExecContext(ctx, `DELETE FROM heed_schema_expansions WHERE version <= ?`, floor)
	return err
}

func (t liteTx) Commit(context.Context) error   { return t.tx.Commit() }
func (t liteTx) Rollback(context.Context) error { return t.tx.Rollback() }

// rewriteJobs returns the Go step of the migrations that rewrite stored
// jobs (0005: policies and histories in the stored forms with names and
// text durations; 0008: history words, the outcome "ok" -> "success"; 0010:
// runs of deferrals as one entry with a count): it
// rewrites, in the migration's transaction, every job's policy and history
// with schema.RewriteJobs, or only the jobs that match where (an SQL
// condition) when it is not empty.
func rewriteJobs(where string) func(context.Context, schema.Tx) error {
	cond := ""
	if where != "" {
		cond = " AND (" + where + ")"
	}
	return func(ctx context.Context, stx schema.Tx) error {
		tx := stx.(liteTx).tx
		read := func(ctx context.Context, after int64, limit int) ([]schema.JobRow, error) {
			rows, err := tx.QueryContext(ctx, `SELECT id, policy, history FROM heed_jobs WHERE id > ?`+cond+` ORDER BY id LIMIT ?`, after, limit)
			if err != nil {
				return nil, err
			}
			defer rows.Close()
			return schema.ScanJobs(rows)
		}
		write := func(ctx context.Context, r schema.JobRow) error {
			_, err := tx.ExecContext(ctx, `UPDATE heed_jobs SET policy = ?, history = ? WHERE id = ?`, string(r.Policy), string(r.History), r.ID)
			return err
		}
		return schema.RewriteJobs(ctx, read, write)
	}
}
