// Package pgstore is the PostgreSQL store of heed's durable job queue: many
// worker processes on many machines share one database.
//
// Most callers want [Open], then pass the store to the queue package
// (queue.NewClient, queue.NewWorker). It implements jobstore.Store,
// jobstore.Notifier and jobstore.TransitionBatcher, and idempotency/keystore.Store for
// the Idempotency-Key middleware (table heed_idempotency_keys).
//
//   - Claims lock due jobs with FOR UPDATE SKIP LOCKED in a CTE, in
//     (priority, available_at, id) order over a partial index, and mark
//     them running in the same statement: concurrent workers never wait
//     for each other nor take the same job.
//   - Unique keys are a partial unique index over available and running
//     jobs; an insert does ON CONFLICT DO NOTHING against it and then reads
//     the job holding the key, so duplicates are impossible even across
//     processes and transactions.
//   - Idle workers are woken through LISTEN/NOTIFY ([Store.JobNotify]) as
//     soon as a job is inserted or becomes available again; they poll as
//     well, so a lost notification costs only latency.
//   - [Store.EnqueueTx] enqueues a job inside the caller's own
//     transaction: the job exists, and is announced, exactly when the
//     caller's writes commit.
//   - Writes are batched: [Store.JobTransitions] applies many transitions
//     in one commit, and concurrent [Store.JobTransition] calls, and
//     concurrent [Store.JobInsert] calls without a unique key, are combined
//     the same way (calls arriving while one statement is in flight make up
//     the next; no timer delays any), each still getting its own result.
//     [Store.JobInsertMany] writes a batch without unique keys in one COPY.
//   - The schema is embedded as numbered migrations, recorded in the table
//     heed_migrations and applied under an advisory lock by [Open] (or
//     [Store.Migrate]); a database migrated by a newer heed is refused with
//     a [*jobstore.SchemaTooNewError]. [OpenWith] with MigrateOff only checks, and names
//     the missing migrations in a [*jobstore.SchemaBehindError]. Tables are named heed_* and live in the first
//     schema of the connections' search_path. PostgreSQL 13 or later.
package pgstore

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/heed-go/heed/clock"
	"github.com/heed-go/heed/internal/schema"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Store is a queue store in PostgreSQL. It is safe for concurrent use by
// any number of goroutines and processes. Create one with [Open] or [New];
// the zero value is not usable.
//
// Enqueues, requeues, deletes and migrations commit durably. A worker's
// claims, lease renewals, rescues and results commit with
// synchronous_commit=off, through a second, smaller pool the store opens
// over the same database: on this kind of machine a durable commit costs
// about a millisecond, and those writes are most of a busy queue's
// commits. A crash of the database server can lose the last fraction of a
// second of them, and no more than that: a lost claim leaves the job
// available, a lost result leaves it running under a lease that expires
// and is rescued as "lost", so the job runs again (the queue promises
// at-least-once) and is never lost. Enqueued jobs are never lost.
type Store struct {
	pool    *pgxpool.Pool
	ownPool bool // Close closes the pool only when Open created it
	// lazy is a second pool over the same database whose connections
	// commit with synchronous_commit=off, for a worker's claims, lease
	// renewals, rescues and results (see Store's doc). The store owns it.
	lazy *pgxpool.Pool

	notify  *notifier  // LISTEN side, for JobNotify
	publish *publisher // NOTIFY side, for inserts and retries
	batch   *batcher   // JobTransition
	insert  *inserter  // JobInsert without a unique key

	clock clock.Clock // see OpenOptions.Clock

	// pollTimeout bounds claims and rescues (see bounded); tests shorten
	// it before first use.
	pollTimeout time.Duration

	// limited holds the names of queues whose last claim found a limit
	// (limit.go): their claims skip the statement for queues without.
	limited sync.Map

	closeOnce sync.Once
}

// defaultPollTimeout bounds a claim or a rescue whose context has no
// earlier deadline (a worker's polls have none): a poll must not hang on a
// connection whose server vanished without closing it (a partition, a
// machine that lost power), which TCP notices only after many minutes.
// The statement fails, pgx discards the connection, and the next poll
// uses a new one.
const defaultPollTimeout = 30 * time.Second

// bounded returns ctx with the store's poll timeout, unless it ends
// sooner.
func (s *Store) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= s.pollTimeout {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, s.pollTimeout)
}

// ErrClosed is returned by [Store.JobNotify] and [Store.JobTransition]
// after [Store.Close]. Other methods called after Close fail with the
// closed pool's error when [Open] created the pool.
var ErrClosed = errors.New("pgstore: store is closed")

// Open connects to the PostgreSQL database at url (a postgres:// URL or a
// key=value connection string, as pgx accepts), checks that it is
// reachable, and migrates its schema to [SchemaVersion]. It returns a
// [*jobstore.SchemaTooNewError] when the database's schema is newer than this binary
// knows. Close the store when done: it closes the pool Open created.
// [OpenWith] opens without migrating.
//
// An empty url is refused (the defaults and the PG* environment variables
// alone are "postgres://"). Error messages never include the URL's
// password.
func Open(ctx context.Context, url string) (*Store, error) {
	return OpenWith(ctx, url, OpenOptions{})
}

// errEmptyURL says what Open wants when it is given no URL.
var errEmptyURL = errors.New(`the database URL is empty: want a postgres:// URL or a key=value connection string ("postgres://" alone takes the defaults and the PG* environment variables)`)

// OpenOptions configures [OpenWith]. The zero value opens as [Open] does.
type OpenOptions struct {
	// MigrateOff opens without changing the schema, as a program that only
	// reads (or a fleet that upgrades with an explicit step) wants: a
	// newer binary must not upgrade a database under older workers. A
	// schema behind [SchemaVersion] is refused with a
	// [*jobstore.SchemaBehindError] naming the missing migrations; one that
	// is newer, with a [*jobstore.SchemaTooNewError].
	MigrateOff bool
	// CreateEmpty, with MigrateOff, still creates the schema in a database
	// (search_path schema) that has no heed tables at all: nothing older
	// can be using it.
	CreateEmpty bool
	// ReadBehind, with MigrateOff, opens a schema one release behind
	// (schema 8 or later) as it is, without migrating: what
	// [queue.Client] reads and changes works on it (heed jobs ls, stats,
	// show and heed ui), so an operator can look before upgrading. A
	// worker must not run on it: open it without ReadBehind. A schema
	// further behind is refused as with MigrateOff alone.
	ReadBehind bool
	// Clock is the time of the few writes whose time no argument gives:
	// when a migration was applied, and the creation time of jobs
	// enqueued with [Store.EnqueueTx] (default: real time). Every other
	// time comes from the queue's arguments.
	Clock clock.Clock
}

// OpenWith is [Open] with options.
func OpenWith(ctx context.Context, url string, o OpenOptions) (*Store, error) {
	if strings.TrimSpace(url) == "" {
		// pgx would read an empty string as "every default": a URL left
		// unset by mistake would connect to whatever localhost serves.
		return nil, &invalidError{op: "open", err: errEmptyURL}
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("pgstore: parse connection string: %w", redact(err, url))
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgstore: open pool: %w", redact(err, url))
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgstore: connect to %s: %w", describe(cfg), redact(err, url))
	}
	s, err := newStore(pool, true)
	if err != nil {
		pool.Close()
		return nil, err
	}
	if o.Clock != nil {
		s.clock = o.Clock
	}
	err = schema.Ready(ctx, schema.OpenMode{MigrateOff: o.MigrateOff, CreateEmpty: o.CreateEmpty, ReadBehind: o.ReadBehind}, s.Check, s.Migrate)
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// New returns a store over an existing pool, which the caller keeps owning:
// [Store.Close] does not close it, but must still be called, to stop the
// store's own goroutines and close the worker pool it opens (see [Store]). New does not touch the database; call
// [Store.Migrate] before first use (it is cheap when the schema is
// current). The pool's connections must all share one search_path.
func New(pool *pgxpool.Pool) (*Store, error) {
	if pool == nil {
		return nil, errors.New("pgstore: New: pool is nil")
	}
	return newStore(pool, false)
}

func newStore(pool *pgxpool.Pool, own bool) (*Store, error) {
	cfg := pool.Config() // a copy
	if cfg.ConnConfig.RuntimeParams == nil {
		cfg.ConnConfig.RuntimeParams = map[string]string{}
	}
	cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	cfg.MaxConns = max(2, cfg.MaxConns/2)
	cfg.MinConns = 0
	lazy, err := pgxpool.NewWithConfig(context.Background(), cfg) // connects on first use
	if err != nil {
		return nil, fmt.Errorf("pgstore: open the worker pool: %w", err)
	}
	s := &Store{pool: pool, ownPool: own, lazy: lazy, pollTimeout: defaultPollTimeout, clock: clock.Real{}}
	s.notify = newNotifier(pool)
	s.publish = newPublisher(pool)
	s.batch = newBatcher(lazy)
	s.insert = newInserter(pool)
	return s, nil
}

// Pool returns the store's connection pool, for callers that want to begin
// transactions to pass to [Store.EnqueueTx].
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Close sends the notifications of jobs enqueued just before (waiting up to
// 2 s for the server, so that a producer that enqueues and exits still
// wakes the workers), stops the notification listener, waiting for it to
// exit, and closes the pool if [Open] created it. It is safe to call more
// than once.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.insert.close()
		s.batch.close()
		s.publish.close()
		s.notify.close()
		s.lazy.Close()
		if s.ownPool {
			s.pool.Close()
		}
	})
	return nil
}

// describe names the server of cfg for error messages: host, port,
// database and user, never the password.
func describe(cfg *pgxpool.Config) string {
	c := cfg.ConnConfig
	return fmt.Sprintf("%s:%d (database %q, user %q)", c.Host, c.Port, c.Database, c.User)
}

// redact wraps err so that its message does not show the password of the
// connection string conn. pgx redacts most messages already, but an
// unparseable URL is quoted whole by net/url.
func redact(err error, conn string) error {
	pw := password(conn)
	if pw == "" {
		return err
	}
	secrets := []string{pw, quoted(pw)}
	if u, uerr := url.PathUnescape(pw); uerr == nil && u != pw {
		secrets = append(secrets, u, quoted(u))
	}
	// Longest first, so that an escaped form is hidden whole.
	slices.SortFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	return &redactedError{err: err, secrets: secrets}
}

// redactedError is an error whose message hides secrets; it unwraps to the
// original error.
type redactedError struct {
	err     error
	secrets []string
}

func (e *redactedError) Error() string {
	msg := e.err.Error()
	for _, s := range e.secrets {
		if s != "" {
			msg = strings.ReplaceAll(msg, s, "xxxxx")
		}
	}
	return msg
}

func (e *redactedError) Unwrap() error { return e.err }

// quoted is pw as strconv.Quote escapes it inside a quoted string.
func quoted(pw string) string {
	q := strconv.Quote(pw)
	return q[1 : len(q)-1]
}

var kvPassword = regexp.MustCompile(`(?:^|\s)password\s*=\s*(?:'((?:[^'\\]|\\.)*)'|(\S+))`)

// password finds the password in a URL or key=value connection string, or
// returns "". In a URL it is everything between the first colon of the
// user information and its last "@", so that an unescaped "@" in a
// password is still found whole.
func password(conn string) string {
	if scheme, rest, ok := strings.Cut(conn, "://"); ok && !strings.ContainsAny(scheme, " =") {
		at := strings.LastIndex(rest, "@")
		if at < 0 {
			return ""
		}
		if _, pw, ok := strings.Cut(rest[:at], ":"); ok {
			return pw
		}
		return ""
	}
	if m := kvPassword.FindStringSubmatch(conn); m != nil {
		return m[1] + m[2]
	}
	return ""
}
