// Package sqlitestore is heed's embedded store: jobs and idempotency keys
// (see [Store.KeyClaim]) in one SQLite file, through the pure-Go driver
// modernc.org/sqlite (no cgo).
//
// Most callers want [Open] and hand the [*Store] to queue.NewClient and
// queue.NewWorker:
//
//	st, err := sqlitestore.Open(ctx, "heed.db")
//
// The database runs in WAL mode with a busy timeout of 10 s and foreign keys
// on. The store checkpoints the WAL from a goroutine and a connection of its
// own, every quarter second, so that no write of the queue waits for a
// checkpoint (see checkpoint.go). Within one process, writes go through a single connection, one at a
// time: SQLite allows one writer per database anyway, and a single
// connection turns contention into a short queue in Go instead of
// SQLITE_BUSY retries. Reads (JobGet, JobList, Stats) use a separate pool of
// read-only connections and run beside the writer, as WAL allows. Several
// processes may share a file (a worker and the heed command, say): write
// transactions begin IMMEDIATE and wait up to the busy timeout for each
// other.
//
// Claims are one UPDATE ... WHERE id IN (SELECT ... LIMIT n) RETURNING
// statement, preceded by a cheap check on a read connection so that idle
// polling never queues behind writers. The Store also implements
// jobstore.TransitionBatcher (a worker's finished jobs in one transaction) and
// jobstore.Notifier (wake-ups for jobs inserted through this Store; other
// processes' jobs are found by polling). Hot statements are prepared once.
//
// The schema is created and upgraded by embedded, numbered migrations
// recorded in the table heed_schema_migrations; every table is prefixed
// heed_. Open applies pending migrations; [OpenWith] can open without
// creating or migrating anything (MigrateOff), or read-only (ReadOnly), and
// then names missing migrations in a [*jobstore.SchemaBehindError].
package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/heed-go/heed/clock"
	"github.com/heed-go/heed/internal/schema"
	"github.com/heed-go/heed/queue/jobstore"
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Store is a jobstore.Store (and jobstore.Notifier) over one SQLite database.
// Make one with [Open]; the zero value is not usable. It is safe for
// concurrent use by many goroutines. Close it when done.
type Store struct {
	w *sql.DB // writes: one connection
	r *sql.DB // reads: read-only pool (the same as w for :memory:)

	clock clock.Clock // see OpenOptions.Clock

	stmtMu sync.Mutex
	stmts  map[stmtKey]*sql.Stmt // prepared statements; nil once closed

	mu   sync.Mutex
	subs map[chan string]struct{} // nil once closed
	done chan struct{}            // closed by Close

	cancels cancelSubs // JobCancelNotify's subscribers (ops.go)

	ckptDone chan struct{} // closed when the checkpointer has stopped; nil without one (checkpoint.go)

	fullMu sync.Mutex
	full   map[string]bool // queues whose last JobClaim took its whole limit
}

var _ jobstore.Store = (*Store)(nil)
var _ jobstore.Notifier = (*Store)(nil)
var _ jobstore.CancelNotifier = (*Store)(nil)

// Open opens (creating it if needed) the SQLite database named by dsn and
// applies pending migrations. [OpenWith] opens without creating or
// migrating, or read-only.
//
// dsn is one of:
//   - a file path: "heed.db", "/var/lib/heed/jobs.db";
//   - a sqlite: URL: "sqlite:heed.db", "sqlite:///var/lib/heed/jobs.db";
//   - a SQLite URI: "file:heed.db?cache=private"; its parameters are kept;
//   - ":memory:": a private in-memory database for tests and examples
//     (one connection, gone on Close).
//
// Errors name the cause: a URL of another scheme (mysql://...), a path
// that is a directory, a parent directory that does not exist, a file
// that is read-only. It returns an error matching jobstore.ErrSchemaTooNew when the
// database was migrated by a newer heed.
func Open(ctx context.Context, dsn string) (*Store, error) {
	return OpenWith(ctx, dsn, OpenOptions{})
}

// OpenOptions configures [OpenWith]. The zero value opens as [Open] does.
type OpenOptions struct {
	// MigrateOff opens without creating the file or changing the schema,
	// as a program that only reads (or a fleet that upgrades with an
	// explicit step) wants: a newer binary must not upgrade a database
	// under older workers. A file that does not exist is an error matching
	// fs.ErrNotExist (and none is created); a schema behind the binary's
	// is refused with a [*jobstore.SchemaBehindError] naming the missing
	// migrations.
	MigrateOff bool
	// CreateEmpty, with MigrateOff, still creates a database that does not
	// exist yet, or the schema in a file that has no heed tables: nothing
	// older can be using it.
	CreateEmpty bool
	// ReadOnly opens the file read-only (SQLite's mode=ro), which works on
	// a file the process may not write; every write fails. It implies
	// MigrateOff without CreateEmpty.
	ReadOnly bool
	// ReadBehind, with MigrateOff, opens a schema one release behind
	// (schema 8 or later) as it is, without migrating: what
	// [queue.Client] reads and changes works on it (heed jobs ls, stats,
	// show and heed ui), so an operator can look before upgrading. A
	// worker must not run on it: open it without ReadBehind. A schema
	// further behind is refused as with MigrateOff alone.
	ReadBehind bool

	// Clock is the time of the few writes whose time no argument gives:
	// when a migration was applied (default: real time). Every other time
	// comes from the queue's arguments.
	Clock clock.Clock

	// stopAt, when set (by tests), migrates only up to this version, to
	// build a database as an older heed left it.
	stopAt int
}

// OpenWith is [Open] with options.
func OpenWith(ctx context.Context, dsn string, o OpenOptions) (*Store, error) {
	path, params, err := parseDSN(dsn)
	if err != nil {
		return nil, err
	}
	if o.ReadOnly {
		o.MigrateOff, o.CreateEmpty = true, false
	}
	fresh := false // the file does not exist yet: Open creates it
	if path != ":memory:" {
		if fresh, err = checkPath(path, !o.MigrateOff || o.CreateEmpty, o.ReadOnly); err != nil {
			return nil, err
		}
	}
	s := &Store{subs: map[chan string]struct{}{}, done: make(chan struct{}), stmts: map[stmtKey]*sql.Stmt{}, full: map[string]bool{}, clock: clock.Or(o.Clock)}
	common := "_busy_timeout=10000&_foreign_keys=1&_txlock=immediate"
	switch {
	case path == ":memory:":
		s.w, err = sql.Open("sqlite", "file::memory:?"+join(params, common))
		if err != nil {
			return nil, fmt.Errorf("sqlitestore: open %s: %w", dsn, err)
		}
		s.w.SetMaxOpenConns(1)
		s.w.SetMaxIdleConns(1)
		s.w.SetConnMaxLifetime(0)
		s.w.SetConnMaxIdleTime(0)
		s.r = s.w
	case o.ReadOnly:
		// One read-only pool serves both sides; writes fail.
		s.r, err = sql.Open("sqlite", uriOf(path, join(params, "mode=ro&_busy_timeout=10000&_query_only=1")))
		if err != nil {
			return nil, fmt.Errorf("sqlitestore: open %s: %w", path, err)
		}
		s.r.SetMaxOpenConns(4)
		s.r.SetMaxIdleConns(4)
		if err := s.r.PingContext(ctx); err != nil {
			s.r.Close()
			return nil, fmt.Errorf("sqlitestore: open %s read-only: %w", path, err)
		}
		s.w = s.r
	default:
		wdsn := uriOf(path, join(params, common+"&_journal_mode=WAL&_synchronous=NORMAL"+
			"&_pragma=wal_autocheckpoint("+strconv.Itoa(writerCheckpointPages)+")"))
		s.w, err = sql.Open("sqlite", wdsn)
		if err != nil {
			return nil, fmt.Errorf("sqlitestore: open %s: %w", path, err)
		}
		s.w.SetMaxOpenConns(1)
		s.w.SetMaxIdleConns(1)
		s.w.SetConnMaxIdleTime(0)
		s.w.SetConnMaxLifetime(0)
		// The writer connection sets WAL mode first, so readers find it.
		if err := s.w.PingContext(ctx); err != nil {
			s.w.Close()
			if fresh {
				os.Remove(path) // create nothing on failure
			}
			return nil, fmt.Errorf("sqlitestore: open %s: %w", path, err)
		}
		s.r, err = sql.Open("sqlite", uriOf(path, join(params, "_busy_timeout=10000&_query_only=1")))
		if err != nil {
			s.w.Close()
			return nil, fmt.Errorf("sqlitestore: open %s: %w", path, err)
		}
		s.r.SetMaxOpenConns(4)
		s.r.SetMaxIdleConns(4)
		if err := s.r.PingContext(ctx); err != nil { // open one reader now, not on the first claim
			s.w.Close()
			s.r.Close()
			return nil, fmt.Errorf("sqlitestore: open %s: %w", path, err)
		}
		ckpt, err := sql.Open("sqlite", uriOf(path, join(params, "_busy_timeout=10000")))
		if err != nil {
			s.w.Close()
			s.r.Close()
			return nil, fmt.Errorf("sqlitestore: open %s: %w", path, err)
		}
		ckpt.SetMaxOpenConns(1)
		s.ckptDone = make(chan struct{})
		go checkpointer(ckpt, s.done, s.ckptDone)
	}
	err = schema.Ready(ctx, schema.OpenMode{MigrateOff: o.MigrateOff, CreateEmpty: o.CreateEmpty, ReadBehind: o.ReadBehind}, s.Check, func(ctx context.Context) error { return s.migrate(ctx, o.stopAt) })
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// checkPath checks, before SQLite opens path, what would make the open
// fail or create something it should not, so that the error names the
// cause: a directory, a missing parent directory, a read-only file, a
// file that does not exist when create is false. It reports whether the
// file does not exist yet.
func checkPath(path string, create, readOnly bool) (fresh bool, err error) {
	fi, err := os.Stat(path)
	switch {
	case err == nil && fi.IsDir():
		return false, &pathError{fmt.Sprintf("sqlitestore: %s is a directory, not a database file", path), jobstore.ErrInvalid}
	case err == nil:
		if !readOnly {
			f, err := os.OpenFile(path, os.O_RDWR, 0)
			if err != nil {
				if errors.Is(err, fs.ErrPermission) {
					return false, fmt.Errorf("sqlitestore: %s is read-only (heed writes to it; open it read-only to read it): %w", path, err)
				}
				return false, fmt.Errorf("sqlitestore: open %s: %w", path, err)
			}
			f.Close()
		}
		return false, nil
	case !errors.Is(err, fs.ErrNotExist):
		return false, fmt.Errorf("sqlitestore: open %s: %w", path, err)
	case !create:
		return false, &pathError{fmt.Sprintf("sqlitestore: %s does not exist (nothing was created)", path), fs.ErrNotExist}
	}
	dir := filepath.Dir(path)
	di, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, &pathError{fmt.Sprintf("sqlitestore: cannot create %s: directory %s does not exist", path, dir), fs.ErrNotExist}
	case err != nil:
		return false, fmt.Errorf("sqlitestore: cannot create %s: %w", path, err)
	case !di.IsDir():
		return false, &pathError{fmt.Sprintf("sqlitestore: cannot create %s: %s is not a directory", path, dir), jobstore.ErrInvalid}
	}
	return true, nil
}

// pathError is an error about a database path that matches a sentinel
// (fs.ErrNotExist, queue.ErrInvalid) without repeating its text.
type pathError struct {
	msg string
	is  error
}

func (e *pathError) Error() string        { return e.msg }
func (e *pathError) Is(target error) bool { return target == e.is }

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "&" + b
}

func uriOf(path, params string) string {
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + params
}

// wantDSN says what parseDSN accepts, for its errors.
const wantDSN = "want a file path, a sqlite: URL or a file: URI"

// parseDSN returns the file path and the URI parameters of dsn.
func parseDSN(dsn string) (path, params string, err error) {
	orig := dsn
	switch {
	case dsn == "":
		return "", "", &pathError{"sqlitestore: the database name is empty: " + wantDSN, jobstore.ErrInvalid}
	case strings.HasPrefix(dsn, "sqlite://"):
		dsn = strings.TrimPrefix(dsn, "sqlite://")
	case strings.HasPrefix(dsn, "sqlite:"):
		dsn = strings.TrimPrefix(dsn, "sqlite:")
	case strings.HasPrefix(dsn, "file:"):
		dsn = strings.TrimPrefix(dsn, "file:")
		if i := strings.IndexByte(dsn, '?'); i >= 0 {
			dsn, params = dsn[:i], dsn[i+1:]
		}
		if p, perr := url.PathUnescape(dsn); perr == nil {
			dsn = p
		}
		if strings.HasPrefix(dsn, "//") { // file:///abs/path
			dsn = dsn[2:]
		}
	case strings.Contains(dsn, "://") && !strings.ContainsAny(dsn[:strings.Index(dsn, "://")], `/\.`):
		// Name only the scheme: the rest may hold a password.
		scheme := dsn[:strings.Index(dsn, "://")]
		return "", "", &pathError{fmt.Sprintf("sqlitestore: unsupported database URL scheme %q: %s", scheme, wantDSN), jobstore.ErrInvalid}
	}
	if dsn == "" || dsn == "file::memory:" {
		return "", "", &pathError{fmt.Sprintf("sqlitestore: no file path in %q: %s", orig, wantDSN), jobstore.ErrInvalid}
	}
	return dsn, params, nil
}

// Close closes the database and ends every JobNotify channel.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.subs == nil {
		s.mu.Unlock()
		return nil
	}
	for c := range s.subs {
		close(c)
	}
	s.subs = nil
	close(s.done)
	s.mu.Unlock()
	s.stmtMu.Lock()
	for _, st := range s.stmts {
		st.Close()
	}
	s.stmts = nil
	s.stmtMu.Unlock()
	if s.ckptDone != nil {
		<-s.ckptDone // s.done, closed above, stopped it
	}
	err := s.w.Close()
	if s.r != s.w {
		if rerr := s.r.Close(); err == nil {
			err = rerr
		}
	}
	return err
}

// JobNotify implements jobstore.Notifier for jobs inserted or requeued through
// this Store (other processes' inserts are found by polling). The channel
// has a small buffer; a notification that does not fit is dropped, as the
// worker polls anyway.
func (s *Store) JobNotify(ctx context.Context) (<-chan string, error) {
	c := make(chan string, 16)
	s.mu.Lock()
	if s.subs == nil {
		s.mu.Unlock()
		return nil, errors.New("sqlitestore: store is closed")
	}
	s.subs[c] = struct{}{}
	s.mu.Unlock()
	go func() {
		select {
		case <-ctx.Done():
		case <-s.done:
		}
		s.mu.Lock()
		if _, ok := s.subs[c]; ok {
			delete(s.subs, c)
			close(c)
		}
		s.mu.Unlock()
	}()
	return c, nil
}

func (s *Store) notify(queues ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.subs {
		for _, q := range queues {
			select {
			case c <- q:
			default:
			}
		}
	}
}
