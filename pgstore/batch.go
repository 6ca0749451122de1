package pgstore

// The store's two combined writes, transitions (batcher) and inserts
// without a unique key (inserter), share one combiner.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heed-go/heed/queue/jobstore"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// maxBatch caps the number of calls one statement carries.
const maxBatch = 256

// batchTimeout bounds one batch's statement.
const batchTimeout = time.Minute

// request is one call waiting in a combiner.
type request interface {
	context() context.Context // the caller's context
	fail(err error)           // finish the call with err and no result
}

// combiner applies concurrent calls together: while one batch is in
// flight, the calls that arrive queue up and go out as the next one, in one
// statement and one commit. A lone call goes out at once, alone, so
// combining adds no delay; under load it saves a statement and a commit per
// call (River's batch completer, made invisible to the caller). Each call
// still returns only after its own work committed, with its own result.
// batcher (transitions) and inserter (inserts) are combiners.
type combiner[R request] struct {
	pool *pgxpool.Pool
	ctx  context.Context // ends on close

	// take splits pending into the next batch (at most maxBatch calls)
	// and the rest; one and many apply a batch of one or several live
	// calls, finishing each. many returns false, having applied and
	// finished none, when the server refused its statement: then each
	// call is applied alone by one, for its own result.
	take func(pending []R) (batch, rest []R)
	one  func(r R)
	many func(batch []R) bool

	mu      sync.Mutex
	pending []R
	busy    bool // a flush goroutine is running
	wg      sync.WaitGroup
	cancel  context.CancelFunc

	// batches and batched count the multi-row statements and the calls
	// they carried (for tests and benchmarks).
	batches, batched atomic.Int64
}

func (c *combiner[R]) init(pool *pgxpool.Pool) {
	c.pool = pool
	c.ctx, c.cancel = context.WithCancel(context.Background())
}

// submit queues r and waits until done is closed (r finished: nil), the
// store closes (ErrClosed) or r's context ends (its error; the work may or
// may not have been applied).
func (c *combiner[R]) submit(r R, done <-chan struct{}) error {
	c.mu.Lock()
	if c.ctx.Err() != nil {
		c.mu.Unlock()
		return ErrClosed
	}
	c.pending = append(c.pending, r)
	if !c.busy {
		c.busy = true
		c.wg.Add(1)
		go c.flush()
	}
	c.mu.Unlock()
	select {
	case <-done:
		return nil
	case <-r.context().Done():
		return r.context().Err()
	}
}

// close fails what is pending and waits for the flush goroutine.
func (c *combiner[R]) close() {
	c.mu.Lock()
	c.cancel()
	c.mu.Unlock()
	c.wg.Wait()
}

// next removes the next batch from pending, or returns nil (and marks the
// combiner idle) when nothing is pending.
func (c *combiner[R]) next() []R {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.pending) == 0 {
		c.busy = false
		return nil
	}
	batch, rest := c.take(c.pending)
	c.pending = rest
	return batch
}

func (c *combiner[R]) flush() {
	defer c.wg.Done()
	for {
		batch := c.next()
		if batch == nil {
			return
		}
		live := batch[:0]
		for _, r := range batch {
			switch {
			case c.ctx.Err() != nil:
				r.fail(ErrClosed)
			case r.context().Err() != nil:
				r.fail(r.context().Err()) // not applied
			default:
				live = append(live, r)
			}
		}
		if len(live) == 1 {
			c.one(live[0])
		} else if len(live) > 1 {
			c.batches.Add(1)
			c.batched.Add(int64(len(live)))
			if !c.many(live) {
				for _, r := range live {
					c.one(r)
				}
			}
		}
	}
}

// stmtCtx is the context of a batch's statement: it ends when the store
// closes or after batchTimeout, and carries no caller's cancellation (a
// batch serves several callers), but keeps parent's values.
func (c *combiner[R]) stmtCtx(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), batchTimeout)
	stop := context.AfterFunc(c.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}

// refused reports whether err is the server's refusal of a statement
// (nothing of it committed), as opposed to a failed connection or a
// closed store, whose outcome is unknown.
func refused(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr)
}

// transitionReq is one JobTransition waiting for its batch.
type transitionReq struct {
	ctx   context.Context
	t     *jobstore.Transition
	entry []byte
	done  chan struct{} // closed when queue and err are set
	queue string        // the job's queue, on success
	err   error
}

func (r *transitionReq) finish(queue string, err error) {
	r.queue, r.err = queue, err
	close(r.done)
}

func (r *transitionReq) context() context.Context { return r.ctx }
func (r *transitionReq) fail(err error)           { r.finish("", err) }

// batcher applies concurrent JobTransition calls together (see combiner).
type batcher struct {
	combiner[*transitionReq]
}

func newBatcher(pool *pgxpool.Pool) *batcher {
	b := &batcher{}
	b.init(pool)
	b.take, b.one, b.many = takeTransitions, b.applyOne, b.applyMany
	return b
}

// do applies r's transition and returns the job's queue, or
// queue.ErrLeaseLost, or an error. When r.ctx ends first it returns
// r.ctx.Err(); the transition may or may not have been applied.
func (b *batcher) do(r *transitionReq) (string, error) {
	r.done = make(chan struct{})
	if err := b.submit(r, r.done); err != nil {
		return "", err
	}
	return r.queue, r.err
}

// takeTransitions takes the next batch: at most maxBatch requests, at most
// one per job (a second transition of one job waits for the next batch, so
// that it sees the first's result, as it would run alone).
func takeTransitions(pending []*transitionReq) (batch, rest []*transitionReq) {
	seen := make(map[int64]bool, len(pending))
	for _, r := range pending {
		if len(batch) == maxBatch || seen[r.t.ID] {
			rest = append(rest, r)
			continue
		}
		seen[r.t.ID] = true
		batch = append(batch, r)
	}
	return batch, rest
}

// applyOne applies a lone transition with the single-row statement.
func (b *batcher) applyOne(r *transitionReq) {
	ctx, cancel := b.stmtCtx(r.ctx)
	defer cancel()
	t := r.t
	var q string
	err := b.pool.QueryRow(ctx, transitionSQL, t.ID, t.LeaseToken, string(t.State), t.Attempt,
		nullTime(t.AvailableAt), nullTime(t.FinishedAt), t.DeadReason, r.entry, t.ReplaceLast).Scan(&q)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		r.finish("", leaseLost(t))
	case err != nil:
		r.finish("", wrapErr(fmt.Sprintf("transition job %d to %s", t.ID, t.State), err))
	default:
		r.finish(q, nil)
	}
}

// batchSQL applies one transition per element of the arrays; each job is
// guarded by its own lease token, as in transitionSQL.
var batchSQL = `UPDATE heed_jobs j SET
	state = t.state,
	attempt = t.attempt,
	available_at = coalesce(t.available_at, j.available_at),
	finished_at = t.finished_at,
	dead_reason = t.dead_reason,
	history = ` + historyPut("j.history", "t.entry", "t.replace") + `,
	lease_token = NULL,
	lease_until = NULL
FROM unnest($1::bigint[], $2::text[], $3::text[], $4::int[], $5::timestamptz[], $6::timestamptz[], $7::text[], $8::text[], $9::bool[])
	AS t(id, token, state, attempt, available_at, finished_at, dead_reason, entry, replace)
WHERE j.id = t.id AND j.state = 'running' AND j.lease_token = t.token
RETURNING j.id, j.queue`

// applyMany applies several transitions in one statement, or returns
// false, having applied none, when the server refuses the statement (then
// the combiner tries each alone, so that one bad transition, a NUL byte in
// a dead reason, does not fail the others).
func (b *batcher) applyMany(batch []*transitionReq) bool {
	ctx, cancel := b.stmtCtx(batch[0].ctx)
	defer cancel()
	ts := make([]*jobstore.Transition, len(batch))
	entries := make([][]byte, len(batch))
	for i, r := range batch {
		ts[i], entries[i] = r.t, r.entry
	}
	done, err := applyBatch(ctx, b.pool, ts, entries)
	if refused(err) {
		return false
	}
	if err != nil {
		// The connection failed or the store closed: the outcome is
		// unknown, as for a lone statement.
		for _, r := range batch {
			r.finish("", wrapErr(fmt.Sprintf("transition job %d to %s", r.t.ID, r.t.State), err))
		}
		return true
	}
	for _, r := range batch {
		if q, ok := done[r.t.ID]; ok {
			r.finish(q, nil)
		} else {
			r.finish("", leaseLost(r.t))
		}
	}
	return true
}

func leaseLost(t *jobstore.Transition) error {
	return fmt.Errorf("pgstore: transition job %d to %s: %w", t.ID, t.State, jobstore.ErrLeaseLost)
}

// applyBatch runs batchSQL for ts (at most one per job) with their encoded
// history entries, and returns the queue of each job it changed, by ID.
func applyBatch(ctx context.Context, q querier, ts []*jobstore.Transition, entries [][]byte) (map[int64]string, error) {
	n := len(ts)
	var (
		ids       = make([]int64, n)
		tokens    = make([]string, n)
		states    = make([]string, n)
		attempts  = make([]int32, n)
		available = make([]pgtype.Timestamptz, n)
		finished  = make([]pgtype.Timestamptz, n)
		reasons   = make([]string, n)
		texts     = make([]string, n)
		replace   = make([]bool, n)
	)
	for i, t := range ts {
		ids[i], tokens[i], states[i], attempts[i] = t.ID, t.LeaseToken, string(t.State), int32(t.Attempt)
		available[i] = pgtype.Timestamptz{Time: t.AvailableAt, Valid: !t.AvailableAt.IsZero()}
		finished[i] = pgtype.Timestamptz{Time: t.FinishedAt, Valid: !t.FinishedAt.IsZero()}
		reasons[i], texts[i], replace[i] = t.DeadReason, string(entries[i]), t.ReplaceLast
	}
	rows, err := q.Query(ctx, batchSQL, ids, tokens, states, attempts, available, finished, reasons, texts, replace)
	if err != nil {
		return nil, err
	}
	done := make(map[int64]string, n)
	var (
		id    int64
		queue string
	)
	_, err = pgx.ForEachRow(rows, []any{&id, &queue}, func() error {
		done[id] = queue
		return nil
	})
	return done, err
}

// JobTransitions applies ts as JobTransition would, one after the other,
// all or none: one UPDATE for all of them when each is of a different job
// (the usual batch, a statement of its own), else in one transaction, one
// more UPDATE per repeated job. It returns one error per transition, in order: nil, or an error
// matching queue.ErrInvalid (bad input, or a value PostgreSQL refuses) or
// queue.ErrLeaseLost, which leaves that job unchanged and the others
// unaffected. err reports a failure of the whole batch (the connection,
// ctx); then none was applied.
func (s *Store) JobTransitions(ctx context.Context, ts []jobstore.Transition) (errs []error, err error) {
	errs = make([]error, len(ts))
	entries := make([][]byte, len(ts))
	// rounds[k] holds the k-th transition of each job, so that a job's
	// later transitions see its earlier ones, as if applied one by one.
	var rounds [][]int
	seen := map[int64]int{}
	for i := range ts {
		if errs[i] = ts[i].Validate(); errs[i] != nil {
			continue
		}
		if entries[i], errs[i] = encodeEntry(ts[i].Entry); errs[i] != nil {
			continue
		}
		k := seen[ts[i].ID]
		seen[ts[i].ID] = k + 1
		if k == len(rounds) {
			rounds = append(rounds, nil)
		}
		rounds[k] = append(rounds[k], i)
	}
	if len(rounds) == 0 {
		return errs, nil
	}
	queues := make([]string, len(ts))
	if len(rounds) == 1 {
		// One transition per job, the usual batch: one statement is
		// atomic by itself and needs no transaction nor savepoint (one
		// round trip instead of five). Only when PostgreSQL refuses it
		// is each transition tried under a savepoint of its own, below.
		done, err := s.applyAlone(ctx, ts, entries, rounds[0], errs, queues)
		if err != nil {
			return nil, err
		}
		if done {
			s.publishWakes(ts, errs, queues)
			return errs, nil
		}
	}
	tx, err := s.lazy.Begin(ctx)
	if err != nil {
		return nil, wrapErr("transition jobs: begin", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) // a no-op after Commit
	for _, round := range rounds {
		if err := s.applyRound(ctx, tx, ts, entries, round, errs, queues); err != nil {
			return nil, err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, wrapErr("transition jobs: commit", err)
	}
	s.publishWakes(ts, errs, queues)
	return errs, nil
}

// publishWakes wakes the workers of the queues of the applied transitions
// that make a job due now.
func (s *Store) publishWakes(ts []jobstore.Transition, errs []error, queues []string) {
	var wake []string
	for i := range ts {
		if errs[i] == nil && ts[i].Wakes() {
			wake = append(wake, queues[i])
		}
	}
	s.publish.publish(wake...)
}

// applyAlone applies the transitions ts[i] for i in round (distinct jobs)
// in one statement outside of any transaction, setting errs[i] and
// queues[i]. It returns false, having applied nothing, when PostgreSQL
// refused the statement, and an error when the batch as a whole failed.
func (s *Store) applyAlone(ctx context.Context, ts []jobstore.Transition, entries [][]byte, round []int, errs []error, queues []string) (bool, error) {
	done, err := applyRoundBatch(ctx, s.lazy, ts, entries, round)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return false, nil
	}
	if err != nil {
		return false, wrapErr("transition jobs", err)
	}
	settleRound(ts, round, done, errs, queues)
	return true, nil
}

// applyRoundBatch runs applyBatch through q for the transitions ts[i], i
// in round (distinct jobs).
func applyRoundBatch(ctx context.Context, q querier, ts []jobstore.Transition, entries [][]byte, round []int) (map[int64]string, error) {
	sub := make([]*jobstore.Transition, len(round))
	subEntries := make([][]byte, len(round))
	for k, i := range round {
		sub[k], subEntries[k] = &ts[i], entries[i]
	}
	return applyBatch(ctx, q, sub, subEntries)
}

// settleRound sets, for each i in round, queues[i] to the queue of the job
// applyBatch changed (done), or errs[i] to a lost lease.
func settleRound(ts []jobstore.Transition, round []int, done map[int64]string, errs []error, queues []string) {
	for _, i := range round {
		if q, ok := done[ts[i].ID]; ok {
			queues[i] = q
		} else {
			errs[i] = leaseLost(&ts[i])
		}
	}
}

// applyRound applies the transitions ts[i] for i in round (distinct jobs)
// in tx, setting errs[i] and queues[i]. When PostgreSQL refuses the
// statement, it applies them one by one, each under a savepoint, so that
// the refused one alone fails. It returns an error when the batch as a
// whole fails.
func (s *Store) applyRound(ctx context.Context, tx pgx.Tx, ts []jobstore.Transition, entries [][]byte, round []int, errs []error, queues []string) error {
	sp, err := tx.Begin(ctx) // savepoint
	if err != nil {
		return wrapErr("transition jobs: savepoint", err)
	}
	done, err := applyRoundBatch(ctx, sp, ts, entries, round)
	var pgErr *pgconn.PgError
	if err != nil && !errors.As(err, &pgErr) {
		return wrapErr("transition jobs", err)
	}
	if err == nil {
		if err := sp.Commit(ctx); err != nil { // release
			return wrapErr("transition jobs: release savepoint", err)
		}
		settleRound(ts, round, done, errs, queues)
		return nil
	}
	if err := sp.Rollback(ctx); err != nil {
		return wrapErr("transition jobs: roll back to savepoint", err)
	}
	for _, i := range round {
		sp, err := tx.Begin(ctx)
		if err != nil {
			return wrapErr("transition jobs: savepoint", err)
		}
		t := &ts[i]
		var q string
		err = sp.QueryRow(ctx, transitionSQL, t.ID, t.LeaseToken, string(t.State), t.Attempt,
			nullTime(t.AvailableAt), nullTime(t.FinishedAt), t.DeadReason, entries[i], t.ReplaceLast).Scan(&q)
		switch {
		case err == nil:
			if err := sp.Commit(ctx); err != nil {
				return wrapErr("transition jobs: release savepoint", err)
			}
			queues[i] = q
			continue
		case errors.Is(err, pgx.ErrNoRows):
			errs[i] = leaseLost(t)
		case errors.As(err, &pgErr):
			errs[i] = wrapErr(fmt.Sprintf("transition job %d to %s", t.ID, t.State), err)
		default:
			return wrapErr("transition jobs", err)
		}
		if err := sp.Rollback(ctx); err != nil {
			return wrapErr("transition jobs: roll back to savepoint", err)
		}
	}
	return nil
}

// insertReq is one JobInsert without a unique key, waiting for its batch.
type insertReq struct {
	ctx  context.Context
	in   *jobstore.JobInsert
	done chan struct{}
	job  *jobstore.Job
	err  error
}

func (r *insertReq) finish(job *jobstore.Job, err error) {
	r.job, r.err = job, err
	close(r.done)
}

func (r *insertReq) context() context.Context { return r.ctx }
func (r *insertReq) fail(err error)           { r.finish(nil, err) }

// inserter combines concurrent JobInsert calls without a unique key (see
// combiner): while one multi-row INSERT is in flight, the calls that arrive
// go out together in the next, in one commit. Inserts with a unique key are
// not combined (each needs its own conflict check and read).
type inserter struct {
	combiner[*insertReq]
}

func newInserter(pool *pgxpool.Pool) *inserter {
	b := &inserter{}
	b.init(pool)
	b.take, b.one, b.many = takeInserts, b.applyOne, b.applyMany
	return b
}

// do inserts r.in and returns the job. When r.ctx ends first it returns
// r.ctx.Err(); the job may or may not have been inserted.
func (b *inserter) do(r *insertReq) (*jobstore.Job, error) {
	r.done = make(chan struct{})
	if err := b.submit(r, r.done); err != nil {
		return nil, err
	}
	return r.job, r.err
}

// takeInserts takes the first maxBatch inserts.
func takeInserts(pending []*insertReq) (batch, rest []*insertReq) {
	n := min(len(pending), maxBatch)
	return pending[:n:n], append([]*insertReq(nil), pending[n:]...)
}

func (b *inserter) applyOne(r *insertReq) {
	ctx, cancel := b.stmtCtx(r.ctx)
	defer cancel()
	job, _, err := insertJob(ctx, b.pool, r.in)
	r.finish(job, err)
}

// insertManySQL inserts one job per element of the arrays, skipping the
// elements whose unique key is held (as insertSQL does). IDs are drawn
// first, in the CTE, so that each returned row can be matched to its
// element (ord) without relying on the order of RETURNING.
var insertManySQL = `WITH src AS (
	SELECT nextval(pg_get_serial_sequence('heed_jobs', 'id')) AS id, t.*
	FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::int[], $6::text[], $7::timestamptz[], $8::timestamptz[], $9::text[], $10::text[])
		WITH ORDINALITY AS t(kind, queue, args, priority, max_attempts, policy, available_at, created_at, unique_key, unique_states, ord)
), ins AS (
	INSERT INTO heed_jobs (id, kind, queue, args, state, priority, max_attempts, policy, available_at, created_at, unique_key, unique_states)
	OVERRIDING SYSTEM VALUE
	SELECT id, kind, queue, args::json, 'available', priority, max_attempts, policy::jsonb, available_at, created_at, unique_key, unique_states::text[]
	FROM src
	` + onUniqueConflict + `
	RETURNING ` + colsPlain + `
)
SELECT src.ord, ` + jobColumns("ins.") + ` FROM ins JOIN src USING (id)`

// insertMany inserts ins (validated) through q in one statement and
// returns one job per element, nil for those whose unique key was held
// (including by an earlier element of ins).
func insertMany(ctx context.Context, q querier, ins []*jobstore.JobInsert) ([]*jobstore.Job, error) {
	n := len(ins)
	var (
		kinds     = make([]string, n)
		queues    = make([]string, n)
		args      = make([]string, n)
		prios     = make([]int32, n)
		maxes     = make([]int32, n)
		policies  = make([]string, n)
		available = make([]pgtype.Timestamptz, n)
		created   = make([]pgtype.Timestamptz, n)
		keys      = make([]pgtype.Text, n)
		states    = make([]string, n)
	)
	for i, in := range ins {
		policies[i] = "{}"
		if !in.Policy.IsZero() {
			p, err := json.Marshal(in.Policy)
			if err != nil {
				return nil, fmt.Errorf("pgstore: insert jobs: encode policy: %w", err)
			}
			policies[i] = string(p)
		}
		kinds[i], queues[i], args[i] = in.Kind, in.Queue, string(in.Args)
		prios[i], maxes[i] = int32(in.Priority), int32(in.MaxAttempts)
		available[i] = pgtype.Timestamptz{Time: in.AvailableAt, Valid: true}
		created[i] = pgtype.Timestamptz{Time: in.CreatedAt, Valid: true}
		keys[i] = pgtype.Text{String: in.UniqueKey, Valid: in.UniqueKey != ""}
		states[i] = uniqueStates(in)
	}
	rows, err := q.Query(ctx, insertManySQL, kinds, queues, args, prios, maxes, policies, available, created, keys, states)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	jobs := make([]*jobstore.Job, n)
	for rows.Next() {
		var ord int64
		job, err := scanJob(ordRow{rows, &ord})
		if err != nil {
			return nil, err
		}
		if ord < 1 || ord > int64(n) {
			return nil, fmt.Errorf("row for element %d of %d", ord, n)
		}
		jobs[ord-1] = job
	}
	return jobs, rows.Err()
}

// applyMany inserts several jobs in one statement, or returns false,
// having inserted none, when the server refuses it (a NUL byte in one
// kind; then the combiner inserts each alone, for its own result).
func (b *inserter) applyMany(batch []*insertReq) bool {
	ctx, cancel := b.stmtCtx(batch[0].ctx)
	defer cancel()
	ins := make([]*jobstore.JobInsert, len(batch))
	for i, r := range batch {
		ins[i] = r.in
	}
	jobs, err := insertMany(ctx, b.pool, ins)
	if refused(err) {
		return false
	}
	for i, r := range batch {
		switch {
		case err != nil:
			r.finish(nil, wrapErr("insert job", err))
		case jobs[i] == nil:
			r.finish(nil, errors.New("pgstore: insert job: the batch returned no row for it"))
		default:
			r.finish(jobs[i], nil)
		}
	}
	return true
}

// ordRow scans a row whose first column is the element's ordinal, then the
// job's columns.
type ordRow struct {
	pgx.Row
	ord *int64
}

func (r ordRow) Scan(dest ...any) error {
	return r.Row.Scan(append([]any{r.ord}, dest...)...)
}
