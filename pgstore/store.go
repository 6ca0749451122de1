package pgstore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/heed-go/heed/internal/sqlfilter"
	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Store implements jobstore.Store, jobstore.Notifier, jobstore.HeldClaimer and
// jobstore.TransitionBatcher.
var (
	_ jobstore.Store       = (*Store)(nil)
	_ jobstore.Notifier    = (*Store)(nil)
	_ jobstore.HeldClaimer = (*Store)(nil)

	_ jobstore.TransitionBatcher = (*Store)(nil)
)

// querier is what the job queries need: the pool, or a caller's
// transaction for EnqueueTx.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// jobColumns lists the columns scanJob reads, in its order, each prefixed
// with p (a table alias and a dot, or "").
func jobColumns(p string) string {
	cols := []string{"id", "kind", "queue", "args", "state", "priority", "attempt", "max_attempts",
		"policy", "available_at", "created_at", "started_at", "attempted_at", "finished_at",
		"unique_key", "lease_token", "lease_until", "worker", "dead_reason", "history"}
	for i, c := range cols {
		cols[i] = p + c
	}
	return strings.Join(cols, ", ")
}

var (
	colsPlain = jobColumns("")
	colsJ     = jobColumns("j.")
)

// scanJob reads one row of jobColumns.
func scanJob(row pgx.Row) (*jobstore.Job, error) {
	var (
		j                                           jobstore.Job
		state                                       string
		args, policy, history                       []byte
		startedAt, attemptedAt, finishedAt, leaseTo *time.Time
		uniqueKey, leaseToken                       *string
	)
	err := row.Scan(&j.ID, &j.Kind, &j.Queue, &args, &state, &j.Priority, &j.Attempt, &j.MaxAttempts,
		&policy, &j.AvailableAt, &j.CreatedAt, &startedAt, &attemptedAt, &finishedAt,
		&uniqueKey, &leaseToken, &leaseTo, &j.Worker, &j.DeadReason, &history)
	if err != nil {
		return nil, err
	}
	j.State = jobstore.State(state)
	j.Args = json.RawMessage(args)
	// Most jobs have no policy of their own, and a new one no history:
	// skip decoding those (a batch insert or claim reads thousands).
	if string(policy) != "{}" {
		if err := json.Unmarshal(policy, &j.Policy); err != nil {
			return nil, fmt.Errorf("job %d: decode policy: %w", j.ID, err)
		}
	}
	if string(history) != "[]" {
		if err := json.Unmarshal(history, &j.History); err != nil {
			return nil, fmt.Errorf("job %d: decode history: %w", j.ID, err)
		}
	}
	if len(j.History) == 0 {
		j.History = nil // as the zero Job has it
	}
	j.AvailableAt = j.AvailableAt.UTC()
	j.CreatedAt = j.CreatedAt.UTC()
	j.StartedAt = utcOrZero(startedAt)
	j.AttemptedAt = utcOrZero(attemptedAt)
	j.FinishedAt = utcOrZero(finishedAt)
	j.LeaseUntil = utcOrZero(leaseTo)
	if uniqueKey != nil {
		j.UniqueKey = *uniqueKey
	}
	if leaseToken != nil {
		j.LeaseToken = *leaseToken
	}
	return &j, nil
}

func utcOrZero(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

// collectJobs scans every row of rows.
func collectJobs(rows pgx.Rows, err error) ([]*jobstore.Job, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var jobs []*jobstore.Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, j)
	}
	return jobs, rows.Err()
}

// nullTime is t for a query parameter, or NULL when t is zero.
func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

// nullString is s for a query parameter, or NULL when s is "".
func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// wrapErr prefixes err with "pgstore: op: ". Errors PostgreSQL raises
// about the data itself (a NUL byte or invalid UTF-8 in a string, a value
// too large to index) also match queue.ErrInvalid.
func wrapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "22021", // character_not_in_repertoire: NUL or invalid UTF-8
			"22P05", // untranslatable_character
			"22P02", // invalid_text_representation (invalid JSON)
			"54000": // program_limit_exceeded (index row too large)
			return &invalidError{op: op, err: err}
		}
	}
	return fmt.Errorf("pgstore: %s: %w", op, err)
}

// invalidError is an error PostgreSQL raised about the data itself. It
// matches queue.ErrInvalid without that sentinel's words ("queue: invalid
// input") in its own, which would name a second package.
type invalidError struct {
	op  string
	err error // the *pgconn.PgError, which says what was wrong
}

func (e *invalidError) Error() string {
	return "pgstore: " + e.op + ": invalid input: " + e.err.Error()
}

func (e *invalidError) Unwrap() []error { return []error{jobstore.ErrInvalid, e.err} }

func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}

// encodeEntry is the JSON of a history entry as stored: times in UTC,
// truncated to the microsecond like every other time the store keeps.
func encodeEntry(a jobstore.Attempt) ([]byte, error) {
	a.StartedAt = truncUTC(a.StartedAt)
	a.FinishedAt = truncUTC(a.FinishedAt)
	// The same bytes as json.Marshal(a), without its second pass over
	// them (a tenth of a busy worker's CPU went to compacting them).
	b, err := a.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("pgstore: encode history entry: %w", err)
	}
	return b, nil
}

func truncUTC(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC().Truncate(time.Microsecond)
}

// appendHistory is the SQL expression of history with the JSON object in
// parameter $n appended. history is a json array written by this package;
// the splice keeps every existing entry byte for byte.
func appendHistory(n int) string {
	return historyAppend("history", "$"+strconv.Itoa(n)+"::text")
}

// insertSQL inserts a job unless its unique key is held by an available or
// running job: ON CONFLICT against the partial unique index makes the
// check and the insert one atomic step, even against concurrent inserts
// (the second waits for the first to commit, then does nothing).
var insertSQL = `INSERT INTO heed_jobs
	(kind, queue, args, state, priority, max_attempts, policy, available_at, created_at, unique_key, unique_states)
VALUES ($1, $2, $3, 'available', $4, $5, $6, $7, $8, $9, $10)
` + onUniqueConflict + `
RETURNING ` + colsPlain

// onUniqueConflict skips a row whose unique key is held, against the
// partial unique index heed_jobs_unique_key_idx: a job holds its key while
// its state is one of its unique_states.
const onUniqueConflict = `ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL AND state = ANY (unique_states) DO NOTHING`

// uniqueStates is the unique_states array of in, as a PostgreSQL array
// literal of state names (state names need no quoting).
func uniqueStates(in *jobstore.JobInsert) string {
	names := make([]string, 0, 4)
	for _, st := range in.KeyStates() {
		names = append(names, string(st))
	}
	return "{" + strings.Join(names, ",") + "}"
}

var selectUniqueSQL = `SELECT ` + colsPlain + ` FROM heed_jobs
WHERE unique_key = $1 AND state = ANY (unique_states)`

// maxUniqueRetries bounds the insert-or-select loop of a unique insert: a
// retry is needed only when the job holding the key finishes between the
// two statements.
const maxUniqueRetries = 10

// insertJob inserts in (validated) through q.
func insertJob(ctx context.Context, q querier, in *jobstore.JobInsert) (*jobstore.Job, bool, error) {
	policy, err := json.Marshal(in.Policy)
	if err != nil {
		return nil, false, fmt.Errorf("pgstore: insert job: encode policy: %w", err)
	}
	for range maxUniqueRetries {
		job, err := scanJob(q.QueryRow(ctx, insertSQL, in.Kind, in.Queue, []byte(in.Args), in.Priority,
			in.MaxAttempts, policy, in.AvailableAt, in.CreatedAt, nullString(in.UniqueKey), uniqueStates(in)))
		if err == nil {
			return job, true, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) || in.UniqueKey == "" {
			return nil, false, wrapErr("insert job", err)
		}
		// The key is held: return the job holding it, unless it finished
		// in between, in which case try the insert again.
		job, err = scanJob(q.QueryRow(ctx, selectUniqueSQL, in.UniqueKey))
		if err == nil {
			return job, false, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return nil, false, wrapErr("insert job: read job holding unique key", err)
		}
	}
	return nil, false, fmt.Errorf("pgstore: insert job: unique key %q: the job holding it kept changing state (%d tries)", in.UniqueKey, maxUniqueRetries)
}

// JobInsert inserts a new available job, or returns the available or
// running job that holds in.UniqueKey (with inserted false). The check is
// race-free across processes and transactions. Concurrent calls without a
// unique key are combined into one INSERT and one commit, each returning
// its own job. Listeners ([Store.JobNotify] in any process) are notified
// after the insert. Errors match queue.ErrInvalid for bad input.
func (s *Store) JobInsert(ctx context.Context, in jobstore.JobInsert) (*jobstore.Job, bool, error) {
	if err := in.Validate(); err != nil {
		return nil, false, err
	}
	var (
		job      *jobstore.Job
		inserted bool
		err      error
	)
	if in.UniqueKey == "" {
		job, err = s.insert.do(&insertReq{ctx: ctx, in: &in})
		inserted = err == nil
	} else {
		job, inserted, err = insertJob(ctx, s.pool, &in)
	}
	if inserted {
		s.publish.publish(job.Queue)
	}
	return job, inserted, err
}

// EnqueueTx enqueues a job inside the caller's transaction tx: the job
// exists, and idle workers are notified, exactly when tx commits; when tx
// rolls back there is no job. It takes what queue.Client.Enqueue takes:
// args is marshalled with encoding/json (a json.RawMessage or []byte is
// used as is and must be valid JSON; nil is {}), and bad input returns an
// error matching queue.ErrInvalid, writing nothing. Like [Store.JobInsert], a
// unique key held by an available or running job returns that job with
// inserted false; under a concurrent transaction that enqueues the same
// key, EnqueueTx waits for it to commit or roll back.
//
// tx must be on a connection to this store's database with the same
// search_path as the store's pool (any transaction begun on [Store.Pool]
// qualifies). PostgreSQL serialises the commits of transactions that
// notify, so many concurrent EnqueueTx transactions commit one at a time;
// [Store.JobInsert] notifies after its commit and has no such limit.
func (s *Store) EnqueueTx(ctx context.Context, tx pgx.Tx, kind string, args any, opts queue.EnqueueOptions) (job *jobstore.Job, inserted bool, err error) {
	in, err := queue.NewJobInsert(kind, args, opts, s.clock.Now())
	if err != nil {
		return nil, false, err
	}
	if err := in.Validate(); err != nil {
		return nil, false, err
	}
	job, inserted, err = insertJob(ctx, tx, &in)
	if err != nil || !inserted {
		return job, inserted, err
	}
	// Inside tx: NOTIFY is delivered if and when tx commits.
	if _, err := tx.Exec(ctx, notifyOneSQL, job.Queue); err != nil {
		return nil, false, wrapErr("enqueue: notify", err)
	}
	return job, true, nil
}

// JobGet returns the job with this ID, or an error matching
// queue.ErrNotFound.
func (s *Store) JobGet(ctx context.Context, id int64) (*jobstore.Job, error) {
	job, err := scanJob(s.pool.QueryRow(ctx, `SELECT `+colsPlain+` FROM heed_jobs WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("pgstore: job %d: %w", id, jobstore.ErrNotFound)
	}
	if err != nil {
		return nil, wrapErr("get job", err)
	}
	return job, nil
}

// where builds the WHERE conditions of f (without the state condition
// when dead is set: the caller adds state = 'dead'), appending parameters
// to args.
func where(f *jobstore.JobFilter, dead bool, args *[]any) string {
	return sqlfilter.Where(dialect, f, dead, args)
}

// dialect binds times as they are and ID lists as a bigint array.
var dialect = sqlfilter.Dialect{
	Placeholder: sqlfilter.Dollar,
	Time:        func(t time.Time) any { return t },
	IDs: func(ph string, ids []int64) (string, any) {
		return "id = ANY(" + ph + "::bigint[])", ids
	},
}

func limit(f *jobstore.JobFilter) string { return sqlfilter.Limit(f) }

// JobList returns the jobs that match f, in ascending ID order (descending
// with f.Newest).
func (s *Store) JobList(ctx context.Context, f jobstore.JobFilter) ([]*jobstore.Job, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	var args []any
	order := sqlfilter.Order(&f)
	sql := `SELECT ` + colsPlain + ` FROM heed_jobs WHERE ` + where(&f, false, &args) + order + limit(&f)
	jobs, err := collectJobs(s.pool.Query(ctx, sql, args...))
	if err != nil {
		return nil, wrapErr("list jobs", err)
	}
	return jobs, nil
}

// claimSQL leases due jobs: the CTE picks them in claim order and locks
// them, skipping rows other workers hold locked, so concurrent claimers
// never wait for each other nor take the same job; the UPDATE makes them
// running. heed_jobs_claim_idx serves the CTE. The UPDATE finds its rows
// with id = ANY(ARRAY(...)) rather than a join: pgx prepares statements,
// and PostgreSQL's generic plan for a join, not knowing that LIMIT $3 is
// small, hashes the whole table (65 ms instead of 1 ms at 100,000 jobs).
//
// A claim starts an attempt, and the attempt limit counts claims: the
// claim commits durably, though it runs on the worker pool whose commits
// are not (see [Store]), by setting synchronous_commit for its own
// transaction (set_config's third argument, as SET LOCAL). A claim lost
// in a crash of the server would leave the job available with its old
// count, and the handler, already started, would run once more than the
// limit allows: with synchronous_commit=off, 5 of 21,000 jobs ran a 4th
// time under a limit of 3 after an immediate stop. Results and lease
// renewals stay lazy: losing one makes a job run again as "lost", within
// its count. cond is the claim's own condition (sqlfilter.Claim). (A
// variable, so that BenchmarkClaimDurability can take the durable commit
// out.)
//
// This statement claims from queues without limits only (nor a pause);
// a limited queue's claim is claimLimited's (limit.go).
var claimSQL = func(cond string) string {
	return `WITH due AS (
	SELECT id FROM heed_jobs
	WHERE state = 'available' AND queue = $1 AND available_at <= $2` + cond + `
		AND NOT EXISTS (SELECT 1 FROM heed_queues WHERE name = $1 AND ` + pausedOrLimited + `)
		AND (SELECT set_config('synchronous_commit', 'on', true)) = 'on'
	ORDER BY priority, available_at, id
	LIMIT $3
	FOR UPDATE SKIP LOCKED
)
` + claimUpdate
}

// claimUpdate makes the jobs of the CTE due running.
var claimUpdate = `UPDATE heed_jobs j SET
	state = 'running',
	lease_token = gen_random_uuid()::text,
	lease_until = $4,
	worker = $5,
	attempt = j.attempt + 1,
	attempted_at = $2,
	started_at = coalesce(j.started_at, $2)
WHERE j.id = ANY(ARRAY(SELECT id FROM due))
RETURNING ` + colsJ

// JobClaim leases up to p.Limit due jobs of p.Queue in (Priority,
// AvailableAt, ID) order, with FOR UPDATE SKIP LOCKED.
func (s *Store) JobClaim(ctx context.Context, p jobstore.ClaimParams) ([]*jobstore.Job, error) {
	jobs, _, err := s.JobClaimHeld(ctx, p)
	return jobs, err
}

// JobClaimHeld is JobClaim that also reports whether the queue's limit
// held due jobs back (jobstore.HeldClaimer).
func (s *Store) JobClaimHeld(ctx context.Context, p jobstore.ClaimParams) (jobs []*jobstore.Job, held bool, err error) {
	if err := p.Validate(); err != nil {
		return nil, false, err
	}
	ctx, cancel := s.bounded(ctx)
	defer cancel()
	_, limited := s.limited.Load(p.Queue)
	if !limited {
		jobs, err = collectJobs(s.lazy.Query(ctx, claimSQL(sqlfilter.Claim(&p)), p.Queue, p.Now, p.Limit, p.LeaseUntil, p.Worker))
	}
	if err == nil && len(jobs) == 0 {
		// Nothing due, a pause, or a limit: look at the queue's limit.
		jobs, held, err = s.claimLimited(ctx, p, limited)
	}
	if err != nil {
		return nil, false, wrapErr("claim jobs", err)
	}
	// UPDATE ... RETURNING does not keep the CTE's order.
	slices.SortFunc(jobs, func(a, b *jobstore.Job) int {
		return cmp.Or(cmp.Compare(a.Priority, b.Priority), a.AvailableAt.Compare(b.AvailableAt), cmp.Compare(a.ID, b.ID))
	})
	return jobs, held, nil
}

// JobLeaseExtend moves the lease of the running job p.ID held with
// p.LeaseToken, or returns an error matching queue.ErrLeaseLost.
func (s *Store) JobLeaseExtend(ctx context.Context, p jobstore.LeaseParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	id, token, until := p.ID, p.LeaseToken, p.LeaseUntil
	tag, err := s.lazy.Exec(ctx, `UPDATE heed_jobs SET lease_until = $3
		WHERE id = $1 AND state = 'running' AND lease_token = $2
RETURNING queue`, id, token, until)
	if err != nil {
		return wrapErr("extend lease", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("pgstore: extend lease of job %d: %w", id, jobstore.ErrLeaseLost)
	}
	return nil
}

var transitionSQL = `UPDATE heed_jobs SET
	state = $3,
	attempt = $4,
	available_at = coalesce($5, available_at),
	finished_at = $6,
	dead_reason = $7,
	history = ` + historyPut("history", "$8::text", "$9::bool") + `,
	lease_token = NULL,
	lease_until = NULL
WHERE id = $1 AND state = 'running' AND lease_token = $2
RETURNING queue`

// JobTransition moves the running job t.ID held with t.LeaseToken out of
// running, or returns an error matching queue.ErrLeaseLost and changes
// nothing. Concurrent calls are applied together, in one statement and one
// commit, each returning once its own transition has committed.
func (s *Store) JobTransition(ctx context.Context, t jobstore.Transition) error {
	if err := t.Validate(); err != nil {
		return err
	}
	entry, err := encodeEntry(t.Entry)
	if err != nil {
		return err
	}
	queueName, err := s.batch.do(&transitionReq{ctx: ctx, t: &t, entry: entry})
	if err != nil {
		return err
	}
	// Wake workers for a job that is due now (a released or snoozed job, a
	// retry without delay); later retries are found by polling.
	if t.Wakes() {
		s.publish.publish(queueName)
	}
	return nil
}

var rescueSQL = `WITH lost AS (
	SELECT id FROM heed_jobs
	WHERE state = 'running' AND lease_until < $1
	ORDER BY lease_until, id
	LIMIT $3
	FOR UPDATE SKIP LOCKED
)
UPDATE heed_jobs j SET
	lease_token = gen_random_uuid()::text,
	lease_until = $2
WHERE j.id = ANY(ARRAY(SELECT id FROM lost))
RETURNING ` + colsJ

// JobRescue re-leases up to p.Limit running jobs whose lease ended before
// p.Now to the caller, in ascending ID order. Rescuers in several
// processes skip each other's rows.
func (s *Store) JobRescue(ctx context.Context, p jobstore.RescueParams) ([]*jobstore.Job, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	ctx, cancel := s.bounded(ctx)
	defer cancel()
	jobs, err := collectJobs(s.lazy.Query(ctx, rescueSQL, p.Now, p.LeaseUntil, p.Limit))
	if err != nil {
		return nil, wrapErr("rescue jobs", err)
	}
	slices.SortFunc(jobs, func(a, b *jobstore.Job) int { return cmp.Compare(a.ID, b.ID) })
	return jobs, nil
}

// maxRequeueRetries bounds DeadRequeue's retries after a concurrent insert
// took a unique key between its check and its update.
const maxRequeueRetries = 5

// DeadRequeue makes the dead jobs that match f available again at now,
// with entry appended to their history. A dead job whose unique key is
// held by an available or running job stays dead, and of several dead
// jobs sharing a key only the oldest is requeued.
func (s *Store) DeadRequeue(ctx context.Context, p jobstore.OpParams) (int, error) {
	f, now, entry := p.Filter, p.Now, p.Entry
	if err := f.Validate(); err != nil {
		return 0, err
	}
	if now.IsZero() {
		return 0, &jobstore.InputError{Field: "now", Reason: "is zero"}
	}
	e, err := encodeEntry(entry)
	if err != nil {
		return 0, err
	}
	args := []any{now, e}
	sql := `WITH cand AS (
	SELECT id, unique_key FROM heed_jobs d
	WHERE ` + where(&f, true, &args) + `
	AND (unique_key IS NULL OR NOT EXISTS (
		SELECT 1 FROM heed_jobs o
		WHERE o.unique_key = d.unique_key AND o.state = ANY (o.unique_states) AND o.id <> d.id))
), pick AS (
	SELECT id FROM cand WHERE unique_key IS NULL
	UNION ALL
	SELECT min(id) FROM cand WHERE unique_key IS NOT NULL GROUP BY unique_key
), chosen AS (
	SELECT id FROM pick ORDER BY id` + limit(&f) + `
)
UPDATE heed_jobs j SET
	state = 'available',
	attempt = 0,
	available_at = $1,
	started_at = NULL,
	finished_at = NULL,
	dead_reason = '',
	history = ` + appendHistory(2) + `
WHERE j.id = ANY(ARRAY(SELECT id FROM chosen)) AND j.state = 'dead'
RETURNING j.queue`
	for try := 1; ; try++ {
		rows, err := s.pool.Query(ctx, sql, args...)
		var queues []string
		if err == nil {
			queues, err = pgx.CollectRows(rows, pgx.RowTo[string])
		}
		if err == nil {
			slices.Sort(queues)
			s.publish.publish(slices.Compact(queues)...)
			return len(queues), nil
		}
		if !isUniqueViolation(err) || try == maxRequeueRetries {
			return 0, wrapErr("requeue dead jobs", err)
		}
		// A job with the same unique key was inserted concurrently: look
		// again, and leave that job's dead twin dead.
	}
}

// DeadDelete deletes the dead jobs that match f and returns how many.
func (s *Store) DeadDelete(ctx context.Context, f jobstore.JobFilter) (int, error) {
	return s.deleteJobs(ctx, f, jobstore.StateDead)
}

// deleteJobs deletes the jobs in state (dead or succeeded) that match f,
// whatever f.State says, and returns how many. The outer state test keeps a
// job that changed state since the inner select out of the delete.
func (s *Store) deleteJobs(ctx context.Context, f jobstore.JobFilter, state jobstore.State) (int, error) {
	if err := f.Validate(); err != nil {
		return 0, err
	}
	f.State = state
	args := []any{string(state)}
	sql := `DELETE FROM heed_jobs WHERE state = $1 AND id = ANY(ARRAY(
	SELECT id FROM heed_jobs WHERE ` + where(&f, state == jobstore.StateDead, &args) + ` ORDER BY id` + limit(&f) + `))`
	tag, err := s.pool.Exec(ctx, sql, args...)
	if err != nil {
		return 0, wrapErr("delete "+string(state)+" jobs", err)
	}
	return int(tag.RowsAffected()), nil
}

// Stats counts jobs per queue and state, now splitting available from
// scheduled, and sizes the dead-letter.
func (s *Store) Stats(ctx context.Context, now time.Time) (jobstore.Stats, error) {
	var st jobstore.Stats
	rows, err := s.pool.Query(ctx, `SELECT queue,
	count(*) FILTER (WHERE state = 'available' AND available_at <= $1),
	count(*) FILTER (WHERE state = 'available' AND available_at > $1),
	count(*) FILTER (WHERE state = 'running'),
	count(*) FILTER (WHERE state = 'succeeded'),
	count(*) FILTER (WHERE state = 'dead'),
	count(*) FILTER (WHERE state = 'cancelled')
FROM heed_jobs GROUP BY queue`, now)
	if err != nil {
		return st, wrapErr("stats", err)
	}
	for rows.Next() {
		var q jobstore.QueueStats
		if err := rows.Scan(&q.Queue, &q.Available, &q.Scheduled, &q.Running, &q.Succeeded, &q.Dead, &q.Cancelled); err != nil {
			rows.Close()
			return st, wrapErr("stats", err)
		}
		st.Queues = append(st.Queues, q)
	}
	if err := rows.Err(); err != nil {
		return st, wrapErr("stats", err)
	}
	// Byte order, as Go sorts, whatever the database's collation.
	slices.SortFunc(st.Queues, func(a, b jobstore.QueueStats) int { return strings.Compare(a.Queue, b.Queue) })
	var oldest *time.Time
	if err := s.pool.QueryRow(ctx, `SELECT count(*), min(finished_at) FROM heed_jobs WHERE state = 'dead'`).
		Scan(&st.Dead, &oldest); err != nil {
		return st, wrapErr("stats", err)
	}
	st.OldestDead = utcOrZero(oldest)
	return st, nil
}
