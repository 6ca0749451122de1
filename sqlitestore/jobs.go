package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/heed-go/heed/internal/sqlfilter"
	"github.com/heed-go/heed/queue/jobstore"
)

const jobColumns = `id, kind, queue, args, state, priority, attempt, max_attempts, policy,
	available_at, created_at, started_at, attempted_at, finished_at, unique_key,
	lease_token, lease_until, worker, dead_reason, history`

// appendHistory appends the JSON entry (the two parameters bound to it,
// both the entry) to the history array: see historyAppend.
var appendHistory = `history = ` + historyAppend

// prepared returns the writer's prepared statement for query, preparing
// it once: the hot statements skip SQLite's parse and plan on every call.
func (s *Store) prepared(ctx context.Context, query string) (*sql.Stmt, error) {
	return s.prepare(ctx, s.w, query)
}

// preparedRead is prepared for the read pool (database/sql prepares it
// again on each connection that runs it).
func (s *Store) preparedRead(ctx context.Context, query string) (*sql.Stmt, error) {
	return s.prepare(ctx, s.r, query)
}

func (s *Store) prepare(ctx context.Context, db *sql.DB, query string) (*sql.Stmt, error) {
	k := stmtKey{db, query}
	s.stmtMu.Lock()
	defer s.stmtMu.Unlock()
	if st := s.stmts[k]; st != nil {
		return st, nil
	}
	if s.stmts == nil {
		return nil, errors.New("sqlitestore: store is closed")
	}
	st, err := db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	s.stmts[k] = st
	return st, nil
}

type stmtKey struct {
	db    *sql.DB
	query string
}

func micros(t time.Time) int64 { return t.UnixMicro() }

func nullMicros(t time.Time) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixMicro(), Valid: true}
}

func nullString(s string) sql.NullString {
	return sql.NullString{String: s, Valid: s != ""}
}

func fromMicros(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return time.UnixMicro(v.Int64).UTC()
}

type scanner interface{ Scan(dest ...any) error }

func scanJob(sc scanner) (*jobstore.Job, error) {
	var (
		j                                        jobstore.Job
		args, policy, history                    string
		state                                    string
		avail, created                           int64
		started, attempted, finished, leaseUntil sql.NullInt64
		uniqueKey, leaseToken, deadReason        sql.NullString
	)
	if err := sc.Scan(&j.ID, &j.Kind, &j.Queue, &args, &state, &j.Priority, &j.Attempt, &j.MaxAttempts, &policy,
		&avail, &created, &started, &attempted, &finished, &uniqueKey,
		&leaseToken, &leaseUntil, &j.Worker, &deadReason, &history); err != nil {
		return nil, err
	}
	j.Args = json.RawMessage(args)
	j.State = jobstore.State(state)
	j.AvailableAt = time.UnixMicro(avail).UTC()
	j.CreatedAt = time.UnixMicro(created).UTC()
	j.StartedAt = fromMicros(started)
	j.AttemptedAt = fromMicros(attempted)
	j.FinishedAt = fromMicros(finished)
	j.LeaseUntil = fromMicros(leaseUntil)
	j.UniqueKey = uniqueKey.String
	j.LeaseToken = leaseToken.String
	j.DeadReason = deadReason.String
	if policy != "" && policy != "{}" {
		if err := json.Unmarshal([]byte(policy), &j.Policy); err != nil {
			return nil, fmt.Errorf("sqlitestore: job %d: policy: %w", j.ID, err)
		}
	}
	if history != "[]" {
		if err := json.Unmarshal([]byte(history), &j.History); err != nil {
			return nil, fmt.Errorf("sqlitestore: job %d: history: %w", j.ID, err)
		}
	}
	return &j, nil
}

func scanJobs(rows *sql.Rows) ([]*jobstore.Job, error) {
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

func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("sqlitestore: %s: %w", op, err)
}

// JobInsert implements jobstore.Store.
func (s *Store) JobInsert(ctx context.Context, in jobstore.JobInsert) (*jobstore.Job, bool, error) {
	if err := in.Validate(); err != nil {
		return nil, false, err
	}
	args, err := insertArgs(&in)
	if err != nil {
		return nil, false, wrap("insert", err)
	}
	if in.UniqueKey == "" {
		ins, err := s.prepared(ctx, insertSQL)
		if err != nil {
			return nil, false, wrap("insert", err)
		}
		j, err := scanJob(ins.QueryRowContext(ctx, args...))
		if err != nil {
			return nil, false, wrap("insert", err)
		}
		s.notify(j.Queue)
		return j, true, nil
	}
	// The lookup and the insert in one IMMEDIATE transaction: no other
	// writer, in this process or another, runs between them.
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, false, wrap("insert", err)
	}
	defer tx.Rollback()
	j, inserted, err := insertUnique(ctx, tx, &in, args)
	if err != nil || !inserted {
		return j, false, err
	}
	if err := tx.Commit(); err != nil {
		return nil, false, wrap("insert", err)
	}
	s.notify(j.Queue)
	return j, true, nil
}

// policyArg is the index of the policy's JSON (a string) in insertArgs.
const policyArg = 5

// insertArgs are the parameters of insertSQL for in.
func insertArgs(in *jobstore.JobInsert) ([]any, error) {
	policy := []byte("{}")
	if !in.Policy.IsZero() {
		var err error
		if policy, err = json.Marshal(in.Policy); err != nil {
			return nil, err
		}
	}
	return []any{in.Kind, in.Queue, string(in.Args), in.Priority, in.MaxAttempts, string(policy),
		micros(in.AvailableAt), micros(in.CreatedAt), nullString(in.UniqueKey), uniqueStates(in)}, nil
}

// uniqueStates is the unique_states column of in: a JSON array of state
// names.
func uniqueStates(in *jobstore.JobInsert) string {
	b, _ := json.Marshal(in.KeyStates()) // strings: cannot fail
	return string(b)
}

// insertUnique inserts in, whose unique key is set, through tx (a write
// transaction, so that nothing runs between the lookup and the insert), or
// returns the job holding its key with inserted false.
func insertUnique(ctx context.Context, tx *sql.Tx, in *jobstore.JobInsert, args []any) (*jobstore.Job, bool, error) {
	j, err := scanJob(tx.QueryRowContext(ctx, `SELECT `+jobColumns+` FROM heed_jobs
		WHERE unique_key = ? AND `+holdsKey, in.UniqueKey))
	if err == nil {
		return j, false, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return nil, false, wrap("insert", err)
	}
	if j, err = scanJob(tx.QueryRowContext(ctx, insertSQL, args...)); err != nil {
		return nil, false, wrap("insert", err)
	}
	return j, true, nil
}

// holdsKey is true of a job that holds its unique key: one whose state is
// in its unique_states (the condition of the index heed_jobs_unique).
const holdsKey = `unique_key IS NOT NULL AND instr(unique_states, '"' || state || '"') > 0`

const insertSQL = `INSERT INTO heed_jobs
	(kind, queue, args, state, priority, max_attempts, policy, available_at, created_at, unique_key, unique_states)
	VALUES (?, ?, ?, 'available', ?, ?, ?, ?, ?, ?, ?)
	RETURNING ` + jobColumns

// JobGet implements jobstore.Store.
func (s *Store) JobGet(ctx context.Context, id int64) (*jobstore.Job, error) {
	j, err := scanJob(s.r.QueryRowContext(ctx, `SELECT `+jobColumns+` FROM heed_jobs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sqlitestore: job %d: %w", id, jobstore.ErrNotFound)
	}
	return j, wrap("get", err)
}

// where renders f as a WHERE clause (without the keyword) and its
// arguments. dead forces state = 'dead'.
func where(f *jobstore.JobFilter, dead bool) (string, []any) {
	var args []any
	return sqlfilter.Where(dialect, f, dead, &args), args
}

// dialect binds times as Unix microseconds and ID lists as a JSON array.
var dialect = sqlfilter.Dialect{
	Placeholder: sqlfilter.Question,
	Time:        func(t time.Time) any { return micros(t) },
	IDs: func(ph string, ids []int64) (string, any) {
		b, _ := json.Marshal(ids)
		return "id IN (SELECT value FROM json_each(" + ph + "))", string(b)
	},
}

func limit(f *jobstore.JobFilter) string { return sqlfilter.Limit(f) }

// JobList implements jobstore.Store.
func (s *Store) JobList(ctx context.Context, f jobstore.JobFilter) ([]*jobstore.Job, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	w, args := where(&f, false)
	order := sqlfilter.Order(&f)
	rows, err := s.r.QueryContext(ctx, `SELECT `+jobColumns+` FROM heed_jobs WHERE `+w+order+limit(&f), args...)
	if err != nil {
		return nil, wrap("list", err)
	}
	jobs, err := scanJobs(rows)
	return jobs, wrap("list", err)
}

// notPausedOrLimited is the condition that the queue in parameter ?1 is
// neither paused nor limited: claimSQL claims from such queues only, and
// claimLimited (limit.go) from limited ones.
const notPausedOrLimited = `NOT EXISTS (SELECT 1 FROM heed_queues WHERE name = ?1 AND
	(paused_at IS NOT NULL OR concurrency_limit > 0 OR rate_limit > 0))`

// dueSQL tells whether a job is due in a queue that is not paused, and
// whether the queue is limited. dueSQL and claimSQL take the claim's own
// condition (sqlfilter.Claim).
func dueSQL(cond string) string {
	return `SELECT EXISTS (SELECT 1 FROM heed_jobs
	WHERE state = 'available' AND queue = ?1 AND available_at <= ?2` + cond + `)
		AND NOT EXISTS (SELECT 1 FROM heed_queues WHERE name = ?1 AND paused_at IS NOT NULL),
	EXISTS (SELECT 1 FROM heed_queues WHERE name = ?1 AND (concurrency_limit > 0 OR rate_limit > 0))`
}

// claimSQL claims up to ?3 due jobs of a queue that is neither paused
// nor limited; claimLimited's statement leaves out the condition on the
// queue, which it checked in its transaction.
func claimSQL(cond string) string { return claimWhereSQL(cond + ` AND ` + notPausedOrLimited) }

func claimWhereSQL(cond string) string {
	return `UPDATE heed_jobs SET
		state = 'running', attempt = attempt + 1,
		lease_token = lower(hex(randomblob(16))), lease_until = ?4, worker = ?5,
		attempted_at = ?2, started_at = coalesce(started_at, ?2)
	WHERE id IN (
		SELECT id FROM heed_jobs
		WHERE state = 'available' AND queue = ?1 AND available_at <= ?2` + cond + `
		ORDER BY priority, available_at, id LIMIT ?3)
	RETURNING ` + jobColumns
}

// JobClaim implements jobstore.Store with one UPDATE ... WHERE id IN (SELECT
// ... LIMIT n) RETURNING statement; the single writer makes it atomic. A
// limited queue's claim is a transaction (claimLimited).
func (s *Store) JobClaim(ctx context.Context, p jobstore.ClaimParams) ([]*jobstore.Job, error) {
	jobs, _, err := s.JobClaimHeld(ctx, p)
	return jobs, err
}

// JobClaimHeld implements jobstore.HeldClaimer: JobClaim that also reports
// whether the queue's limit held due jobs back.
func (s *Store) JobClaimHeld(ctx context.Context, p jobstore.ClaimParams) ([]*jobstore.Job, bool, error) {
	if err := p.Validate(); err != nil {
		return nil, false, err
	}
	now, cond := micros(p.Now), sqlfilter.Claim(&p)
	// Idle polling should not queue behind writers: look first on a read
	// connection (WAL readers do not block the writer, nor it them),
	// unless the queue's last claim took all it asked for (a busy queue
	// has due jobs, and the look would only delay the claim).
	s.fullMu.Lock()
	full := s.full[p.Queue]
	s.fullMu.Unlock()
	if !full {
		var due, limited bool
		check, err := s.preparedRead(ctx, dueSQL(cond))
		if err != nil {
			return nil, false, wrap("claim", err)
		}
		if err := check.QueryRowContext(ctx, p.Queue, now).Scan(&due, &limited); err != nil {
			return nil, false, wrap("claim", err)
		}
		if !due {
			return nil, false, nil
		}
		if limited {
			jobs, err := s.claimLimited(ctx, p, cond)
			return sortClaimed(jobs), err == nil && len(jobs) < p.Limit, wrap("claim", err)
		}
	}
	claim, err := s.prepared(ctx, claimSQL(cond))
	if err != nil {
		return nil, false, wrap("claim", err)
	}
	rows, err := claim.QueryContext(ctx, p.Queue, now, p.Limit, micros(p.LeaseUntil), p.Worker)
	if err != nil {
		return nil, false, wrap("claim", err)
	}
	jobs, err := scanJobs(rows)
	if err != nil {
		return nil, false, wrap("claim", err)
	}
	s.fullMu.Lock()
	if len(jobs) == p.Limit {
		s.full[p.Queue] = true
	} else {
		delete(s.full, p.Queue)
	}
	s.fullMu.Unlock()
	return sortClaimed(jobs), false, nil
}

// sortClaimed sorts jobs in claim order (RETURNING does not keep it).
func sortClaimed(jobs []*jobstore.Job) []*jobstore.Job {
	sort.Slice(jobs, func(i, j int) bool {
		a, b := jobs[i], jobs[j]
		if a.Priority != b.Priority {
			return a.Priority < b.Priority
		}
		if !a.AvailableAt.Equal(b.AvailableAt) {
			return a.AvailableAt.Before(b.AvailableAt)
		}
		return a.ID < b.ID
	})
	return jobs
}

// JobLeaseExtend implements jobstore.Store.
func (s *Store) JobLeaseExtend(ctx context.Context, p jobstore.LeaseParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	id, token, until := p.ID, p.LeaseToken, p.LeaseUntil
	res, err := s.w.ExecContext(ctx, `UPDATE heed_jobs SET lease_until = ?
		WHERE id = ? AND lease_token = ? AND state = 'running'`, micros(until), id, token)
	return leaseResult("extend", id, res, err)
}

func leaseResult(op string, id int64, res sql.Result, err error) error {
	if err != nil {
		return wrap(op, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return wrap(op, err)
	}
	if n == 0 {
		return fmt.Errorf("sqlitestore: %s job %d: %w", op, id, jobstore.ErrLeaseLost)
	}
	return nil
}

var transitionSQL = `UPDATE heed_jobs SET
			state = ?, attempt = ?, available_at = coalesce(?, available_at),
			finished_at = ?, dead_reason = ?, lease_token = NULL, lease_until = NULL,
			history = ` + historyPut + `
		WHERE id = ? AND lease_token = ? AND state = 'running'`

// JobTransition implements jobstore.Store.
func (s *Store) JobTransition(ctx context.Context, t jobstore.Transition) error {
	st, err := s.prepared(ctx, transitionSQL)
	if err != nil {
		return wrap("transition", err)
	}
	if err := transition(ctx, st, &t); err != nil {
		return err
	}
	if t.Wakes() {
		// A retry due now (or a release) can wake a worker at once.
		s.notifyJob(ctx, t.ID)
	}
	return nil
}

// JobTransitions implements jobstore.TransitionBatcher: one IMMEDIATE
// transaction, one commit. (One UPDATE for the whole batch, its
// transitions as a JSON array read with json_each, was slower: 5,300-7,800
// against 8,200-12,300 jobs/s in BenchmarkClaimTransitions.)
func (s *Store) JobTransitions(ctx context.Context, ts []jobstore.Transition) ([]error, error) {
	errs := make([]error, len(ts))
	if len(ts) == 0 {
		return errs, nil
	}
	prep, err := s.prepared(ctx, transitionSQL)
	if err != nil {
		return nil, wrap("transition", err)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, wrap("transition", err)
	}
	defer tx.Rollback()
	st := tx.StmtContext(ctx, prep)
	var wake []int64
	for i := range ts {
		errs[i] = transition(ctx, st, &ts[i])
		if errs[i] != nil && !errors.Is(errs[i], jobstore.ErrLeaseLost) && !errors.Is(errs[i], jobstore.ErrInvalid) {
			return nil, errs[i]
		}
		if errs[i] == nil && ts[i].Wakes() {
			wake = append(wake, ts[i].ID)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, wrap("transition", err)
	}
	for _, id := range wake {
		s.notifyJob(ctx, id)
	}
	return errs, nil
}

func transition(ctx context.Context, st *sql.Stmt, t *jobstore.Transition) error {
	if err := t.Validate(); err != nil {
		return err
	}
	entry, err := json.Marshal(t.Entry)
	if err != nil {
		return wrap("transition", err)
	}
	e := string(entry)
	res, err := st.ExecContext(ctx, string(t.State), t.Attempt, nullMicros(t.AvailableAt), nullMicros(t.FinishedAt),
		nullString(t.DeadReason), t.ReplaceLast, e, e, e, t.ID, t.LeaseToken)
	return leaseResult("transition", t.ID, res, err)
}

func (s *Store) notifyJob(ctx context.Context, id int64) {
	var q string
	if s.r.QueryRowContext(ctx, `SELECT queue FROM heed_jobs WHERE id = ?`, id).Scan(&q) == nil {
		s.notify(q)
	}
}

// JobRescue implements jobstore.Store.
func (s *Store) JobRescue(ctx context.Context, p jobstore.RescueParams) ([]*jobstore.Job, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var expired bool
	if err := s.r.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM heed_jobs
		WHERE state = 'running' AND lease_until < ?)`, micros(p.Now)).Scan(&expired); err != nil {
		return nil, wrap("rescue", err)
	}
	if !expired {
		return nil, nil
	}
	rows, err := s.w.QueryContext(ctx, `UPDATE heed_jobs SET
			lease_token = lower(hex(randomblob(16))), lease_until = ?
		WHERE id IN (
			SELECT id FROM heed_jobs WHERE state = 'running' AND lease_until < ?
			ORDER BY lease_until, id LIMIT ?)
		RETURNING `+jobColumns,
		micros(p.LeaseUntil), micros(p.Now), p.Limit)
	if err != nil {
		return nil, wrap("rescue", err)
	}
	jobs, err := scanJobs(rows)
	if err != nil {
		return nil, wrap("rescue", err)
	}
	sort.Slice(jobs, func(i, j int) bool { return jobs[i].ID < jobs[j].ID })
	return jobs, nil
}

// DeadRequeue implements jobstore.Store. A dead job whose unique key is taken
// by a live job is skipped (UPDATE OR IGNORE).
func (s *Store) DeadRequeue(ctx context.Context, p jobstore.OpParams) (int, error) {
	f, now, entry := p.Filter, p.Now, p.Entry
	if err := f.Validate(); err != nil {
		return 0, err
	}
	b, err := json.Marshal(entry)
	if err != nil {
		return 0, wrap("requeue", err)
	}
	e := string(b)
	w, args := where(&f, true)
	all := append([]any{micros(now), e, e}, args...)
	rows, err := s.w.QueryContext(ctx, `UPDATE OR IGNORE heed_jobs SET
			state = 'available', attempt = 0, available_at = ?, started_at = NULL,
			finished_at = NULL, dead_reason = NULL, lease_token = NULL, lease_until = NULL,
			`+appendHistory+`
		WHERE id IN (SELECT id FROM heed_jobs WHERE `+w+` ORDER BY id`+limit(&f)+`)
		RETURNING queue`, all...)
	if err != nil {
		return 0, wrap("requeue", err)
	}
	defer rows.Close()
	n, seen := 0, map[string]bool{}
	var qs []string
	for rows.Next() {
		var q string
		if err := rows.Scan(&q); err != nil {
			return n, wrap("requeue", err)
		}
		n++
		if !seen[q] {
			seen[q] = true
			qs = append(qs, q)
		}
	}
	if err := rows.Err(); err != nil {
		return n, wrap("requeue", err)
	}
	s.notify(qs...)
	return n, nil
}

// DeadDelete implements jobstore.Store.
func (s *Store) DeadDelete(ctx context.Context, f jobstore.JobFilter) (int, error) {
	return s.deleteJobs(ctx, f, jobstore.StateDead)
}

// deleteJobs deletes the jobs in state (dead or succeeded) that match f,
// whatever f.State says, and returns how many. The outer state test keeps a
// job that changed state since the inner select out of the delete (as
// pgstore's does; SQLite runs the statement alone, but the guard costs
// nothing and keeps the stores alike).
func (s *Store) deleteJobs(ctx context.Context, f jobstore.JobFilter, state jobstore.State) (int, error) {
	if err := f.Validate(); err != nil {
		return 0, err
	}
	f.State = state
	w, args := where(&f, state == jobstore.StateDead)
	res, err := s.w.ExecContext(ctx, `DELETE FROM heed_jobs
		WHERE state = ? AND id IN (SELECT id FROM heed_jobs WHERE `+w+` ORDER BY id`+limit(&f)+`)`, append([]any{string(state)}, args...)...)
	if err != nil {
		return 0, wrap("delete "+string(state), err)
	}
	n, err := res.RowsAffected()
	return int(n), wrap("delete "+string(state), err)
}

// Stats implements jobstore.Store.
func (s *Store) Stats(ctx context.Context, now time.Time) (jobstore.Stats, error) {
	var st jobstore.Stats
	rows, err := s.r.QueryContext(ctx, `SELECT queue, state, state = 'available' AND available_at > ?, count(*)
		FROM heed_jobs GROUP BY 1, 2, 3 ORDER BY 1`, micros(now))
	if err != nil {
		return st, wrap("stats", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			q, state  string
			scheduled bool
			n         int
		)
		if err := rows.Scan(&q, &state, &scheduled, &n); err != nil {
			return st, wrap("stats", err)
		}
		if len(st.Queues) == 0 || st.Queues[len(st.Queues)-1].Queue != q {
			st.Queues = append(st.Queues, jobstore.QueueStats{Queue: q})
		}
		qs := &st.Queues[len(st.Queues)-1]
		switch {
		case scheduled:
			qs.Scheduled += n
		case state == string(jobstore.StateAvailable):
			qs.Available += n
		case state == string(jobstore.StateRunning):
			qs.Running += n
		case state == string(jobstore.StateSucceeded):
			qs.Succeeded += n
		case state == string(jobstore.StateDead):
			qs.Dead += n
			st.Dead += n
		case state == string(jobstore.StateCancelled):
			qs.Cancelled += n
		}
	}
	if err := rows.Err(); err != nil {
		return st, wrap("stats", err)
	}
	var oldest sql.NullInt64
	if err := s.r.QueryRowContext(ctx, `SELECT min(finished_at) FROM heed_jobs WHERE state = 'dead'`).Scan(&oldest); err != nil {
		return st, wrap("stats", err)
	}
	st.OldestDead = fromMicros(oldest)
	return st, nil
}
