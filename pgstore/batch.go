package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/heed-go/heed/queue"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// transitionReq is one JobTransition waiting for its batch.
type transitionReq struct {
	ctx   context.Context
	t     *queue.Transition
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
		r.finish("", fmt.Errorf("pgstore: transition job %d to %s: %w", t.ID, t.State, queue.ErrLeaseLost))
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

// applyMany applies several transitions in one statement. If the server
// refuses the statement, each is tried alone, so that one bad transition
// (a NUL byte in a dead reason) does not fail the others.
func (b *batcher) applyMany(batch []*transitionReq) {
	ctx, cancel := b.stmtCtx(batch[0].ctx)
	defer cancel()
	b.batches.Add(1)
	b.batched.Add(int64(len(batch)))
	ts := make([]*queue.Transition, len(batch))
	entries := make([][]byte, len(batch))
	for i, r := range batch {
		ts[i], entries[i] = r.t, r.entry
	}
	done, err := applyBatch(ctx, b.pool, ts, entries)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// The server refused the statement, so nothing of it committed:
		// try each transition alone, for its own result.
		for _, r := range batch {
			b.one(r)
		}
		return
	}
	if err != nil {
		// The connection failed or the store closed: the outcome is
		// unknown, as for a lone statement.
		for _, r := range batch {
			r.finish("", wrapErr(fmt.Sprintf("transition job %d to %s", r.t.ID, r.t.State), err))
		}
		return
	}
	for _, r := range batch {
		if q, ok := done[r.t.ID]; ok {
			r.finish(q, nil)
		} else {
			r.finish("", leaseLost(r.t))
		}
	}
}

func leaseLost(t *queue.Transition) error {
	return fmt.Errorf("pgstore: transition job %d to %s: %w", t.ID, t.State, queue.ErrLeaseLost)
}

// applyBatch runs batchSQL for ts (at most one per job) with their encoded
// history entries, and returns the queue of each job it changed, by ID.
func applyBatch(ctx context.Context, q querier, ts []*queue.Transition, entries [][]byte) (map[int64]string, error) {
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
func (s *Store) JobTransitions(ctx context.Context, ts []queue.Transition) (errs []error, err error) {
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
func (s *Store) publishWakes(ts []queue.Transition, errs []error, queues []string) {
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
func (s *Store) applyAlone(ctx context.Context, ts []queue.Transition, entries [][]byte, round []int, errs []error, queues []string) (bool, error) {
	sub := make([]*queue.Transition, len(round))
	subEntries := make([][]byte, len(round))
	for k, i := range round {
		sub[k], subEntries[k] = &ts[i], entries[i]
	}
	done, err := applyBatch(ctx, s.lazy, sub, subEntries)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return false, nil
	}
	if err != nil {
		return false, wrapErr("transition jobs", err)
	}
	for _, i := range round {
		if q, ok := done[ts[i].ID]; ok {
			queues[i] = q
		} else {
			errs[i] = leaseLost(&ts[i])
		}
	}
	return true, nil
}

// applyRound applies the transitions ts[i] for i in round (distinct jobs)
// in tx, setting errs[i] and queues[i]. When PostgreSQL refuses the
// statement, it applies them one by one, each under a savepoint, so that
// the refused one alone fails. It returns an error when the batch as a
// whole fails.
func (s *Store) applyRound(ctx context.Context, tx pgx.Tx, ts []queue.Transition, entries [][]byte, round []int, errs []error, queues []string) error {
	sp, err := tx.Begin(ctx) // savepoint
	if err != nil {
		return wrapErr("transition jobs: savepoint", err)
	}
	sub := make([]*queue.Transition, len(round))
	subEntries := make([][]byte, len(round))
	for k, i := range round {
		sub[k], subEntries[k] = &ts[i], entries[i]
	}
	done, err := applyBatch(ctx, sp, sub, subEntries)
	var pgErr *pgconn.PgError
	if err != nil && !errors.As(err, &pgErr) {
		return wrapErr("transition jobs", err)
	}
	if err == nil {
		if err := sp.Commit(ctx); err != nil { // release
			return wrapErr("transition jobs: release savepoint", err)
		}
		for _, i := range round {
			if q, ok := done[ts[i].ID]; ok {
				queues[i] = q
			} else {
				errs[i] = leaseLost(&ts[i])
			}
		}
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
