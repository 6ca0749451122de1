package pgstore

import (
	"context"
	"sync"
	"time"

	"github.com/heed-go/heed/queue/jobstore"
	"github.com/jackc/pgx/v5"
)

var _ jobstore.CancelNotifier = (*Store)(nil)

// notifyCancelSQL notifies, on the jobs channel and from the session's
// schema, that each job of the array $1 was cancelled while running.
const notifyCancelSQL = `SELECT pg_notify('heed_jobs', json_build_object('s', current_schema(), 'c', id)::text)
FROM unnest($1::bigint[]) AS id`

// cancelFan gives the IDs of cancelled jobs to JobCancelNotify's
// subscribers. The zero value is ready to use.
type cancelFan struct {
	mu   sync.Mutex
	subs map[chan int64]struct{}
}

func (f *cancelFan) add(c chan int64) {
	f.mu.Lock()
	if f.subs == nil {
		f.subs = map[chan int64]struct{}{}
	}
	f.subs[c] = struct{}{}
	f.mu.Unlock()
}

// remove unsubscribes c and closes it.
func (f *cancelFan) remove(c chan int64) {
	f.mu.Lock()
	delete(f.subs, c)
	close(c)
	f.mu.Unlock()
}

func (f *cancelFan) send(id int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for c := range f.subs {
		select {
		case c <- id:
		default: // full: the worker notices at the lease renewal
		}
	}
}

// opArgs checks an operator's change (ferr is its filter's check) and
// returns its first two parameters: now ($1) and the history entry ($2).
func opArgs(ferr error, now time.Time, entry jobstore.Attempt) ([]any, error) {
	if ferr != nil {
		return nil, ferr
	}
	if now.IsZero() {
		return nil, &jobstore.InputError{Field: "now", Reason: "is zero"}
	}
	e, err := encodeEntry(entry)
	if err != nil {
		return nil, err
	}
	return []any{now, e}, nil
}

// JobCancel implements jobstore.JobOps, in one transaction that also
// NOTIFYs the IDs of the jobs that were running: their workers, in any
// process listening on this database and schema, hear of it when the
// cancel commits (see [Store.JobCancelNotify]).
func (s *Store) JobCancel(ctx context.Context, params jobstore.OpParams) (int, error) {
	f, now, entry := params.Filter, params.Now, params.Entry
	args, err := opArgs(jobstore.CancelFilter(f), now, entry)
	if err != nil {
		return 0, err
	}
	sql := `WITH c AS (
	SELECT id, state FROM heed_jobs
	WHERE ` + where(&f, false, &args) + ` AND state IN ('available', 'running')
	ORDER BY id` + limit(&f) + `
	FOR UPDATE
), u AS (
	UPDATE heed_jobs j SET
		state = 'cancelled',
		finished_at = $1,
		lease_token = NULL,
		lease_until = NULL,
		history = ` + appendHistory(2) + `
	FROM c WHERE j.id = c.id
	RETURNING j.id, c.state = 'running' AS running
)
SELECT id, running FROM u`
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, wrapErr("cancel jobs", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	rows, err := tx.Query(ctx, sql, args...)
	if err != nil {
		return 0, wrapErr("cancel jobs", err)
	}
	var (
		n       int
		running []int64
	)
	for rows.Next() {
		var (
			id  int64
			was bool
		)
		if err := rows.Scan(&id, &was); err != nil {
			rows.Close()
			return 0, wrapErr("cancel jobs", err)
		}
		n++
		if was {
			running = append(running, id)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, wrapErr("cancel jobs", err)
	}
	if len(running) > 0 {
		if _, err := tx.Exec(ctx, notifyCancelSQL, running); err != nil {
			return 0, wrapErr("cancel jobs: notify", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, wrapErr("cancel jobs", err)
	}
	return n, nil
}

// JobRunNow implements jobstore.JobOps, and notifies the workers of the
// queues of the jobs it changed.
func (s *Store) JobRunNow(ctx context.Context, params jobstore.OpParams) (int, error) {
	f, now, entry := params.Filter, params.Now, params.Entry
	args, err := opArgs(jobstore.RunNowFilter(f), now, entry)
	if err != nil {
		return 0, err
	}
	sql := `UPDATE heed_jobs SET available_at = $1, history = ` + appendHistory(2) + `
WHERE id = ANY(ARRAY(
	SELECT id FROM heed_jobs
	WHERE ` + where(&f, false, &args) + ` AND state = 'available' AND available_at > $1
	ORDER BY id` + limit(&f) + `))
	AND state = 'available' AND available_at > $1
RETURNING queue`
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return 0, wrapErr("run jobs now", err)
	}
	queues, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, wrapErr("run jobs now", err)
	}
	seen := map[string]bool{}
	var qs []string
	for _, q := range queues {
		if !seen[q] {
			seen[q] = true
			qs = append(qs, q)
		}
	}
	s.publish.publish(qs...)
	return len(queues), nil
}

// JobDelete implements jobstore.JobOps.
func (s *Store) JobDelete(ctx context.Context, f jobstore.JobFilter) (int, error) {
	if err := jobstore.DeleteFilter(f); err != nil {
		return 0, err
	}
	var args []any
	sql := `DELETE FROM heed_jobs WHERE state IN ('succeeded', 'dead', 'cancelled') AND id = ANY(ARRAY(
	SELECT id FROM heed_jobs WHERE ` + where(&f, false, &args) + ` AND state IN ('succeeded', 'dead', 'cancelled')
	ORDER BY id` + limit(&f) + `))`
	tag, err := s.pool.Exec(ctx, sql, args...)
	if err != nil {
		return 0, wrapErr("delete jobs", err)
	}
	return int(tag.RowsAffected()), nil
}

// JobPrune implements jobstore.JobOps: one DELETE of at most limit rows,
// found through the state's partial index on (finished_at, id), skipping
// rows another pruner holds.
func (s *Store) JobPrune(ctx context.Context, params jobstore.PruneParams) (int, error) {
	state, before, limit := params.State, params.Before, params.Limit
	if err := params.Validate(); err != nil {
		return 0, err
	}
	// The state is a literal, not a parameter, so that a generic plan
	// still matches the partial index.
	lit := "'" + string(state) + "'"
	tag, err := s.pool.Exec(ctx, `DELETE FROM heed_jobs WHERE state = `+lit+` AND id = ANY(ARRAY(
	SELECT id FROM heed_jobs WHERE state = `+lit+` AND finished_at < $1
	ORDER BY finished_at, id LIMIT $2 FOR UPDATE SKIP LOCKED))`, before, limit)
	if err != nil {
		return 0, wrapErr("prune "+string(state)+" jobs", err)
	}
	return int(tag.RowsAffected()), nil
}

// QueuePause implements jobstore.QueueOps.
func (s *Store) QueuePause(ctx context.Context, q string, now time.Time) (bool, error) {
	if q == "" {
		return false, &jobstore.InputError{Field: "queue", Reason: "is empty"}
	}
	tag, err := s.pool.Exec(ctx, `INSERT INTO heed_queues (name, paused_at) VALUES ($1, $2)
ON CONFLICT (name) DO UPDATE SET paused_at = excluded.paused_at WHERE heed_queues.paused_at IS NULL`, q, now)
	if err != nil {
		return false, wrapErr("pause queue", err)
	}
	return tag.RowsAffected() > 0, nil
}

// QueueResume implements jobstore.QueueOps, and notifies the queue's
// workers.
func (s *Store) QueueResume(ctx context.Context, q string) (bool, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE heed_queues SET paused_at = NULL WHERE name = $1 AND paused_at IS NOT NULL`, q)
	if err != nil {
		return false, wrapErr("resume queue", err)
	}
	if tag.RowsAffected() == 0 {
		return false, nil
	}
	s.publish.publish(q)
	return true, nil
}

// QueuesPaused implements jobstore.QueueOps, in byte order of the names.
func (s *Store) QueuesPaused(ctx context.Context) ([]jobstore.PausedQueue, error) {
	rows, err := s.pool.Query(ctx, `SELECT name, paused_at FROM heed_queues WHERE paused_at IS NOT NULL ORDER BY name COLLATE "C"`)
	if err != nil {
		return nil, wrapErr("paused queues", err)
	}
	qs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (jobstore.PausedQueue, error) {
		var p jobstore.PausedQueue
		err := r.Scan(&p.Queue, &p.PausedAt)
		p.PausedAt = p.PausedAt.UTC()
		return p, err
	})
	if err != nil {
		return nil, wrapErr("paused queues", err)
	}
	return qs, nil
}

// JobCancelNotify implements jobstore.CancelNotifier: the channel receives
// the ID of each running job that [Store.JobCancel], in any process using
// this database and schema, cancelled, shortly after the cancel commits.
// It shares JobNotify's LISTEN connection (opening it if needed), and like
// it drops notifications for a receiver 64 behind and loses those sent
// while it is disconnected: a worker also notices a cancellation at its
// next lease renewal. The channel is closed when ctx ends or the store is
// closed; JobCancelNotify returns [ErrClosed] after Close.
func (s *Store) JobCancelNotify(ctx context.Context) (<-chan int64, error) {
	qs := s.notify.subscribe(ctx)
	if qs == nil {
		return nil, ErrClosed
	}
	c := make(chan int64, subscriptionBuffer)
	s.notify.cancels.add(c)
	go func() {
		for range qs { // the subscription keeps the listener up; its queues are not needed
		}
		s.notify.cancels.remove(c)
	}()
	return c, nil
}
