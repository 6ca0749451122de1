package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/heed-go/heed/queue/jobstore"
)

// cancelSubs are the subscribers of JobCancelNotify. The zero value is
// ready to use.
type cancelSubs struct {
	mu   sync.Mutex
	subs map[chan int64]struct{}
}

// opArgs checks an operator's change (ferr is its filter's check) and
// returns its parameters (now, then the history entry twice, then f's) and
// f's WHERE clause.
func opArgs(ferr error, f *jobstore.JobFilter, now time.Time, entry jobstore.Attempt, op string) ([]any, string, error) {
	if ferr != nil {
		return nil, "", ferr
	}
	if now.IsZero() {
		return nil, "", &jobstore.InputError{Field: "now", Reason: "is zero"}
	}
	b, err := json.Marshal(entry)
	if err != nil {
		return nil, "", wrap(op, err)
	}
	e := string(b)
	w, args := where(f, false)
	return append([]any{micros(now), e, e}, args...), w, nil
}

// JobCancel implements jobstore.JobOps. Workers of this process that run a
// cancelled job hear of it through JobCancelNotify at once; those of other
// processes within [cancelPoll] (their JobCancelNotify looks for jobs
// cancelled elsewhere), or at their next lease renewal when they do not
// listen.
func (s *Store) JobCancel(ctx context.Context, params jobstore.OpParams) (int, error) {
	f, now, entry := params.Filter, params.Now, params.Entry
	all, w, err := opArgs(jobstore.CancelFilter(f), &f, now, entry, "cancel")
	if err != nil {
		return 0, err
	}
	rows, err := s.w.QueryContext(ctx, `UPDATE heed_jobs SET
			state = 'cancelled', finished_at = ?, lease_token = NULL, lease_until = NULL,
			`+appendHistory+`
		WHERE id IN (SELECT id FROM heed_jobs WHERE `+w+` AND state IN ('available', 'running')
			ORDER BY id`+limit(&f)+`)
		RETURNING id`, all...)
	if err != nil {
		return 0, wrap("cancel", err)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, wrap("cancel", err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, wrap("cancel", err)
	}
	s.cancels.notify(ids)
	return len(ids), nil
}

// JobRunNow implements jobstore.JobOps.
func (s *Store) JobRunNow(ctx context.Context, params jobstore.OpParams) (int, error) {
	f, now, entry := params.Filter, params.Now, params.Entry
	all, w, err := opArgs(jobstore.RunNowFilter(f), &f, now, entry, "run now")
	if err != nil {
		return 0, err
	}
	all = append(all, micros(now))
	rows, err := s.w.QueryContext(ctx, `UPDATE heed_jobs SET available_at = ?, `+appendHistory+`
		WHERE id IN (SELECT id FROM heed_jobs WHERE `+w+` AND state = 'available' AND available_at > ?
			ORDER BY id`+limit(&f)+`)
		RETURNING queue`, all...)
	if err != nil {
		return 0, wrap("run now", err)
	}
	n, seen := 0, map[string]bool{}
	var qs []string
	for rows.Next() {
		var q string
		if err := rows.Scan(&q); err != nil {
			rows.Close()
			return 0, wrap("run now", err)
		}
		n++
		if !seen[q] {
			seen[q] = true
			qs = append(qs, q)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, wrap("run now", err)
	}
	s.notify(qs...)
	return n, nil
}

// JobDelete implements jobstore.JobOps.
func (s *Store) JobDelete(ctx context.Context, f jobstore.JobFilter) (int, error) {
	if err := jobstore.DeleteFilter(f); err != nil {
		return 0, err
	}
	w, args := where(&f, false)
	res, err := s.w.ExecContext(ctx, `DELETE FROM heed_jobs
		WHERE id IN (SELECT id FROM heed_jobs WHERE `+w+` AND state IN ('succeeded', 'dead', 'cancelled')
			ORDER BY id`+limit(&f)+`)`, args...)
	if err != nil {
		return 0, wrap("delete", err)
	}
	n, err := res.RowsAffected()
	return int(n), wrap("delete", err)
}

// JobPrune implements jobstore.JobOps: one DELETE of at most limit rows,
// found through the state's partial index on finished_at.
func (s *Store) JobPrune(ctx context.Context, params jobstore.PruneParams) (int, error) {
	state, before, limit := params.State, params.Before, params.Limit
	if err := params.Validate(); err != nil {
		return 0, err
	}
	// The state is a literal, not a parameter: SQLite uses a partial
	// index only when the query's condition matches it as written.
	res, err := s.w.ExecContext(ctx, `DELETE FROM heed_jobs WHERE id IN (SELECT id FROM heed_jobs
		WHERE state = '`+string(state)+`' AND finished_at < ? ORDER BY finished_at LIMIT ?)`, micros(before), limit)
	if err != nil {
		return 0, wrap("prune "+string(state), err)
	}
	n, err := res.RowsAffected()
	return int(n), wrap("prune "+string(state), err)
}

// QueuePause implements jobstore.QueueOps.
func (s *Store) QueuePause(ctx context.Context, q string, now time.Time) (bool, error) {
	if q == "" {
		return false, &jobstore.InputError{Field: "queue", Reason: "is empty"}
	}
	res, err := s.w.ExecContext(ctx, `INSERT INTO heed_queues (name, paused_at) VALUES (?, ?)
		ON CONFLICT (name) DO UPDATE SET paused_at = excluded.paused_at WHERE paused_at IS NULL`, q, micros(now))
	return changed("pause", res, err)
}

// QueueResume implements jobstore.QueueOps.
func (s *Store) QueueResume(ctx context.Context, q string) (bool, error) {
	res, err := s.w.ExecContext(ctx, `UPDATE heed_queues SET paused_at = NULL WHERE name = ? AND paused_at IS NOT NULL`, q)
	ok, err := changed("resume", res, err)
	if ok {
		s.notify(q)
	}
	return ok, err
}

func changed(op string, res sql.Result, err error) (bool, error) {
	if err != nil {
		return false, wrap(op, err)
	}
	n, err := res.RowsAffected()
	return n > 0, wrap(op, err)
}

// QueuesPaused implements jobstore.QueueOps.
func (s *Store) QueuesPaused(ctx context.Context) ([]jobstore.PausedQueue, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT name, paused_at FROM heed_queues WHERE paused_at IS NOT NULL ORDER BY name`)
	if err != nil {
		return nil, wrap("paused queues", err)
	}
	defer rows.Close()
	var qs []jobstore.PausedQueue
	for rows.Next() {
		var (
			p  jobstore.PausedQueue
			at int64
		)
		if err := rows.Scan(&p.Queue, &at); err != nil {
			return nil, wrap("paused queues", err)
		}
		p.PausedAt = time.UnixMicro(at).UTC()
		qs = append(qs, p)
	}
	return qs, wrap("paused queues", rows.Err())
}

// JobCancelNotify implements jobstore.CancelNotifier for jobs cancelled
// through this Store (a worker in another process notices at its next
// lease renewal). A notification that does not fit the channel's small
// buffer is dropped.
func (s *Store) JobCancelNotify(ctx context.Context) (<-chan int64, error) {
	c := make(chan int64, 16)
	s.mu.Lock()
	closed := s.subs == nil
	s.mu.Unlock()
	if closed {
		return nil, errors.New("sqlitestore: store is closed")
	}
	s.cancels.mu.Lock()
	if s.cancels.subs == nil {
		s.cancels.subs = map[chan int64]struct{}{}
	}
	s.cancels.subs[c] = struct{}{}
	s.cancels.mu.Unlock()
	// Jobs cancelled by other processes, which this one is not told of:
	// looked for every cancelPoll, from a second before now (a cancel
	// that raced this call), by the index of cancelled jobs.
	since := micros(s.clock.Now().Add(-time.Second))
	go func() {
		tick := time.NewTicker(cancelPoll)
		defer tick.Stop()
	poll:
		for {
			select {
			case <-ctx.Done():
				break poll
			case <-s.done:
				break poll
			case <-tick.C:
				since = s.cancelledSince(ctx, since, c)
			}
		}
		s.cancels.mu.Lock()
		if _, ok := s.cancels.subs[c]; ok {
			delete(s.cancels.subs, c)
			close(c)
		}
		s.cancels.mu.Unlock()
	}()
	return c, nil
}

// cancelPoll is how often a JobCancelNotify subscriber looks for jobs
// cancelled by other processes: a cross-process cancel takes effect
// within it.
const cancelPoll = 250 * time.Millisecond

// cancelledSince sends c the jobs cancelled after since (Unix
// microseconds), without blocking, and returns the newest cancel time
// seen (since when none). An error leaves it to the next look.
func (s *Store) cancelledSince(ctx context.Context, since int64, c chan int64) int64 {
	rows, err := s.r.QueryContext(ctx, `SELECT id, finished_at FROM heed_jobs
		WHERE state = 'cancelled' AND finished_at > ? ORDER BY finished_at LIMIT 1000`, since)
	if err != nil {
		return since
	}
	defer rows.Close()
	for rows.Next() {
		var id, at int64
		if rows.Scan(&id, &at) != nil {
			return since
		}
		select {
		case c <- id:
		default:
		}
		since = max(since, at)
	}
	return since
}

func (c *cancelSubs) notify(ids []int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for ch := range c.subs {
		for _, id := range ids {
			select {
			case ch <- id:
			default:
			}
		}
	}
}
