// Package storeurl opens heed's job and idempotency-key database by URL, so
// that a program (the heed command, a dashboard) takes one setting and gets
// the store interfaces, whichever store the URL names:
//
//	heed.db, /var/lib/heed/jobs.db, sqlite:heed.db, file:heed.db  SQLite (sqlitestore)
//	postgres://user:pass@host:5432/db?sslmode=disable             PostgreSQL (pgstore)
//	host=db user=heed dbname=heed                                 PostgreSQL, libpq keyword/value
//
// Most callers want [Open], then [DB.Jobs] for queue.NewClient or
// queue.NewWorker and [DB.Keys] for the idempotency middleware. [Name] names
// a database for messages without its password.
package storeurl

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/heed-go/heed/idempotency/keystore"
	"github.com/heed-go/heed/internal/redact"
	"github.com/heed-go/heed/pgstore"
	"github.com/heed-go/heed/queue/jobstore"
	"github.com/heed-go/heed/sqlitestore"
)

// Mode says what [Open] may do to a database. The zero value is [Read].
type Mode int

const (
	// Read opens a database that must exist at the current schema: a
	// SQLite file is opened read-only, nothing is created or upgraded.
	Read Mode = iota
	// Write is Read, writable.
	Write
	// Create creates a database that does not exist yet (a missing SQLite
	// file, or a PostgreSQL schema with no heed tables) but never upgrades
	// an existing one, which older workers may be using.
	Create
	// Migrate creates the database or upgrades it to the current schema.
	Migrate
)

// Options configures [Open]. The zero value opens read-only.
type Options struct {
	// Mode says what Open may do to the database (default Read).
	Mode Mode
	// PoolSize, when positive, is the size of a PostgreSQL connection pool
	// (pgx's pool_max_conns) unless the URL sets pool_max_conns itself;
	// 0 keeps pgx's default (4, or the number of CPUs). SQLite ignores it.
	PoolSize int
	// ReadBehind opens a schema one release behind this heed's as it is,
	// without migrating, for commands that read and operate, not for
	// workers (see sqlitestore.OpenOptions.ReadBehind). [DB.SchemaVersion]
	// tells.
	ReadBehind bool
}

// ErrNoSchema is matched (errors.Is) by the error of [Open] when a
// PostgreSQL URL's search_path names no existing schema (SQLSTATE 3F000):
// the schema must be created before heed can create its tables in it.
var ErrNoSchema = errors.New("storeurl: the schema of search_path does not exist")

// SchemeError is the error of [Open] for a URL whose scheme names no store
// heed has. It names only the scheme: the rest of the URL may hold a
// password.
type SchemeError struct {
	Scheme string
}

func (e *SchemeError) Error() string {
	return fmt.Sprintf("unsupported database URL scheme %q: heed uses SQLite (a file path, sqlite:PATH, file:PATH) or PostgreSQL (postgres://...)", e.Scheme)
}

// DB is a database opened by [Open]: a SQLite file or a PostgreSQL
// database. Its methods are safe for concurrent use; the zero value is not
// usable.
type DB struct {
	name string
	lite *sqlitestore.Store
	pg   *pgstore.Store
}

// Open opens the database at url as o allows. It returns the store's own
// error (wrapped) when it cannot: one matching fs.ErrNotExist for a SQLite
// file that does not exist and may not be created (every mode but Create and
// Migrate), jobstore.ErrSchemaTooOld for a schema behind this heed that the
// mode may not upgrade, jobstore.ErrSchemaTooNew for one ahead of it,
// [ErrNoSchema], or a [*SchemeError]. Error messages never include a
// password. Close the DB when done.
func Open(ctx context.Context, rawURL string, o Options) (*DB, error) {
	if scheme, _, ok := strings.Cut(rawURL, "://"); ok && !IsPostgres(rawURL) && !strings.ContainsAny(scheme, `/\.`) &&
		scheme != "sqlite" && scheme != "file" {
		return nil, &SchemeError{Scheme: scheme}
	}
	d := &DB{name: Name(rawURL)}
	if IsPostgres(rawURL) {
		if o.PoolSize > 0 {
			rawURL = withPoolSize(rawURL, o.PoolSize)
		}
		st, err := pgstore.OpenWith(ctx, rawURL, pgstore.OpenOptions{MigrateOff: o.Mode != Migrate, CreateEmpty: o.Mode == Create,
			ReadBehind: o.ReadBehind})
		if err != nil {
			if pe, ok := errors.AsType[*pgconn.PgError](err); ok && pe.Code == "3F000" {
				// invalid_schema_name
				return nil, &noSchemaError{err}
			}
			return nil, err
		}
		d.pg = st
		return d, nil
	}
	st, err := sqlitestore.OpenWith(ctx, rawURL, sqlitestore.OpenOptions{
		MigrateOff: o.Mode != Migrate, CreateEmpty: o.Mode == Create, ReadOnly: o.Mode == Read, ReadBehind: o.ReadBehind})
	if err != nil {
		return nil, err
	}
	d.lite = st
	return d, nil
}

// noSchemaError is a PostgreSQL error that matches ErrNoSchema.
type noSchemaError struct{ err error }

func (e *noSchemaError) Error() string        { return e.err.Error() }
func (e *noSchemaError) Unwrap() error        { return e.err }
func (e *noSchemaError) Is(target error) bool { return target == ErrNoSchema }

// Jobs returns the job store, for queue.NewClient and queue.NewWorker.
func (d *DB) Jobs() jobstore.Store {
	if d.pg != nil {
		return d.pg
	}
	return d.lite
}

// Keys returns the idempotency-key store, for the idempotency middleware.
func (d *DB) Keys() keystore.Store {
	if d.pg != nil {
		return d.pg
	}
	return d.lite
}

// Name names the database for messages, as [Name] does.
func (d *DB) Name() string { return d.name }

// Postgres returns the PostgreSQL store, for what only it offers (such as
// pgstore.Store.EnqueueTx in the caller's transaction), or nil for SQLite.
func (d *DB) Postgres() *pgstore.Store { return d.pg }

// Check returns nil when the database is reachable and its schema is the
// one this heed knows, or the store's error: jobstore.ErrSchemaTooOld,
// jobstore.ErrSchemaTooNew, or the connection's.
func (d *DB) Check(ctx context.Context) error {
	if d.pg != nil {
		return d.pg.Check(ctx)
	}
	return d.lite.Check(ctx)
}

// SchemaVersion returns the schema version recorded in the database and the
// newest one this heed knows.
func (d *DB) SchemaVersion(ctx context.Context) (have, known int, err error) {
	if d.pg != nil {
		have, err = d.pg.Version(ctx)
		return have, pgstore.SchemaVersion(), err
	}
	known = sqlitestore.SchemaVersion()
	have, err = d.lite.Version(ctx)
	return have, known, err
}

// CompatibleDownTo returns the oldest schema version a heed binary must
// know to work on the database (see sqlitestore.Store.CompatibleDownTo).
func (d *DB) CompatibleDownTo(ctx context.Context) (int, error) {
	if d.pg != nil {
		return d.pg.CompatibleDownTo(ctx)
	}
	return d.lite.CompatibleDownTo(ctx)
}

// Close closes the database.
func (d *DB) Close() error {
	if d.pg != nil {
		return d.pg.Close()
	}
	return d.lite.Close()
}

// IsPostgres reports whether url names a PostgreSQL database: a
// postgres:// or postgresql:// URL, or a libpq keyword/value string
// ("host=db user=heed password=..."). Anything else is a SQLite file.
func IsPostgres(rawURL string) bool {
	return strings.HasPrefix(rawURL, "postgres://") || strings.HasPrefix(rawURL, "postgresql://") || isKeywordValue(rawURL)
}

// isKeywordValue reports whether dsn is a libpq keyword/value connection
// string, which pgx reads as well as a URL: it starts with one of the libpq
// keywords and "=". Such a string was once taken for a SQLite file name,
// and echoed, password and all.
func isKeywordValue(dsn string) bool {
	key, _, ok := strings.Cut(strings.TrimSpace(dsn), "=")
	if !ok {
		return false
	}
	switch strings.TrimSpace(key) {
	case "host", "hostaddr", "port", "dbname", "user", "password", "passfile", "sslmode", "service", "connect_timeout", "options", "application_name", "target_session_attrs", "search_path":
		return true
	}
	return false
}

// File returns the file path of a SQLite url, as sqlitestore reads it, and
// true; or false for a PostgreSQL URL or one with no file path.
func File(rawURL string) (string, bool) {
	if IsPostgres(rawURL) {
		return "", false
	}
	path, err := sqlitestore.ParsePath(rawURL)
	return path, err == nil
}

// Name names the database at url for messages, without its password or
// other secrets: "sqlite heed.db", "postgres postgres://REDACTED@db/heed".
func Name(rawURL string) string {
	if !IsPostgres(rawURL) {
		path, ok := File(rawURL)
		if !ok {
			path = rawURL
		}
		return "sqlite " + redact.DSN(path)
	}
	if !isKeywordValue(rawURL) {
		if _, err := url.Parse(rawURL); err != nil {
			return "postgres (unparseable URL)"
		}
	}
	return "postgres " + redact.DSN(rawURL)
}

// withPoolSize returns a PostgreSQL dsn with pool_max_conns=n added, unless
// it sets the pool's size itself.
func withPoolSize(dsn string, n int) string {
	if isKeywordValue(dsn) {
		if strings.Contains(dsn, "pool_max_conns") {
			return dsn
		}
		return dsn + " pool_max_conns=" + strconv.Itoa(n)
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return dsn // pgstore.OpenWith reports it
	}
	q := u.Query()
	if q.Has("pool_max_conns") {
		return dsn
	}
	q.Set("pool_max_conns", strconv.Itoa(n))
	u.RawQuery = q.Encode()
	return u.String()
}
