package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/heed-go/heed/internal/sqlfilter"
	"github.com/heed-go/heed/queue/jobstore"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Store implements jobstore.Inspector, the dashboard's questions (package ui).
var _ jobstore.Inspector = (*Store)(nil)

// JobSearch implements jobstore.Inspector. The text is matched with strpos on
// lower-cased text: a scan of the jobs f selects, in ID order, that stops
// at f.Limit matches.
func (s *Store) JobSearch(ctx context.Context, params jobstore.SearchParams) ([]*jobstore.Job, error) {
	f, text, inArgs := params.Filter, params.Text, params.InArgs
	if err := f.Validate(); err != nil {
		return nil, err
	}
	var args []any
	w := where(&f, false, &args)
	if text != "" {
		args = append(args, text)
		p := "$" + strconv.Itoa(len(args))
		cond := `EXISTS (SELECT 1 FROM json_array_elements(history) e WHERE strpos(lower(e->>'error'), lower(` + p + `)) > 0)`
		if inArgs {
			cond = `(strpos(lower(args::text), lower(` + p + `)) > 0 OR ` + cond + `)`
		}
		w += " AND " + cond
	}
	order := sqlfilter.Order(&f)
	jobs, err := collectJobs(s.pool.Query(ctx, `SELECT `+colsPlain+` FROM heed_jobs WHERE `+w+order+limit(&f), args...))
	if err != nil {
		return nil, wrapErr("search jobs", err)
	}
	return jobs, nil
}

// QueueLags implements jobstore.Inspector with the claim index.
func (s *Store) QueueLags(ctx context.Context, now time.Time) (map[string]time.Time, error) {
	rows, err := s.pool.Query(ctx, `SELECT queue, min(available_at) FROM heed_jobs
		WHERE state = 'available' AND available_at <= $1 GROUP BY queue`, now)
	if err != nil {
		return nil, wrapErr("queue lags", err)
	}
	lags := map[string]time.Time{}
	var (
		q  string
		at time.Time
	)
	_, err = pgx.ForEachRow(rows, []any{&q, &at}, func() error {
		lags[q] = at.UTC()
		return nil
	})
	if err != nil {
		return nil, wrapErr("queue lags", err)
	}
	return lags, nil
}

// throughputSQL counts history entries by queue, minute and action ("give
// up", as entries were stored before actions had keys, read as
// "give_up"). It
// reads only the jobs that can hold an entry that finished at or after
// $1, each branch through a partial index: finished jobs that finished
// since then (the last entry finishes with the job), running ones whose
// current attempt started since then (every earlier entry finished before
// it), and available ones due since then (a retry's entry finishes before
// the job is due again).
const throughputSQL = `WITH recent AS (
	SELECT queue, history FROM heed_jobs WHERE state = 'succeeded' AND finished_at >= $1
	UNION ALL SELECT queue, history FROM heed_jobs WHERE state = 'dead' AND finished_at >= $1
	UNION ALL SELECT queue, history FROM heed_jobs WHERE state = 'cancelled' AND finished_at >= $1
	UNION ALL SELECT queue, history FROM heed_jobs WHERE state = 'running' AND attempted_at >= $1
	UNION ALL SELECT queue, history FROM heed_jobs WHERE state = 'available' AND available_at >= $1
), entries AS (
	SELECT r.queue, replace(e->>'action', ' ', '_') AS action, (e->>'finished_at')::timestamptz AS fin
	FROM recent r, json_array_elements(r.history) e
)
SELECT queue, date_trunc('minute', fin AT TIME ZONE 'UTC'), action, count(*)
FROM entries WHERE fin >= $1 AND fin < $2 AND action IN ('done', 'retry', 'give_up')
GROUP BY 1, 2, 3`

// Throughput implements jobstore.Inspector.
func (s *Store) Throughput(ctx context.Context, since, until time.Time) ([]jobstore.Throughput, error) {
	rows, err := s.pool.Query(ctx, throughputSQL, since, until)
	if err != nil {
		return nil, wrapErr("throughput", err)
	}
	var (
		out []jobstore.Throughput
		t   jobstore.Throughput
	)
	_, err = pgx.ForEachRow(rows, []any{&t.Queue, &t.Minute, &t.Action, &t.Count}, func() error {
		u := t
		u.Minute = time.Date(t.Minute.Year(), t.Minute.Month(), t.Minute.Day(), t.Minute.Hour(), t.Minute.Minute(), 0, 0, time.UTC)
		out = append(out, u)
		return nil
	})
	if err != nil {
		return nil, wrapErr("throughput", err)
	}
	return out, nil
}

// DeadCauses implements jobstore.Inspector.
func (s *Store) DeadCauses(ctx context.Context, f jobstore.JobFilter) ([]jobstore.DeadCause, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	var args []any
	w := where(&f, true, &args)
	order := ` ORDER BY finished_at, id`
	if f.Newest {
		order = ` ORDER BY finished_at DESC, id DESC`
	}
	rows, err := s.pool.Query(ctx, `SELECT id, kind, queue, dead_reason, finished_at,
		coalesce(history->(json_array_length(history) - 1)->>'error', '')
		FROM heed_jobs WHERE `+w+order+limit(&f), args...)
	if err != nil {
		return nil, wrapErr("dead causes", err)
	}
	var (
		out []jobstore.DeadCause
		c   jobstore.DeadCause
		fin *time.Time
	)
	_, err = pgx.ForEachRow(rows, []any{&c.ID, &c.Kind, &c.Queue, &c.Reason, &fin, &c.Error}, func() error {
		d := c
		d.FinishedAt = utcOrZero(fin)
		out = append(out, d)
		return nil
	})
	if err != nil {
		return nil, wrapErr("dead causes", err)
	}
	return out, nil
}

// deadCauseCountsSQL groups the dead-letter through heed_jobs_dead_cause_idx
// (an index-only scan where the visibility map allows).
const deadCauseCountsSQL = `SELECT kind, dead_reason, dead_cause, queue, count(*), min(finished_at), max(finished_at), max(id)
	FROM heed_jobs WHERE state = 'dead'
	GROUP BY kind, dead_reason, dead_cause, queue
	ORDER BY count(*) DESC, kind, dead_reason, dead_cause, queue`

// DeadCauseCounts implements jobstore.Inspector over the column dead_cause
// of migration 11.
func (s *Store) DeadCauseCounts(ctx context.Context, limit int) ([]jobstore.DeadCauseCount, error) {
	q := deadCauseCountsSQL
	if limit > 0 {
		q += ` LIMIT ` + strconv.Itoa(limit)
	}
	rows, err := s.pool.Query(ctx, q)
	if err != nil {
		return nil, behindErr("dead cause counts", 11, err)
	}
	var (
		out       []jobstore.DeadCauseCount
		c         jobstore.DeadCauseCount
		first, la time.Time
	)
	_, err = pgx.ForEachRow(rows, []any{&c.Kind, &c.Reason, &c.Cause, &c.Queue, &c.Count, &first, &la, &c.MaxID}, func() error {
		d := c
		d.First, d.Last = first.UTC(), la.UTC()
		out = append(out, d)
		return nil
	})
	if err != nil {
		return nil, behindErr("dead cause counts", 11, err)
	}
	return out, nil
}

// DeadOfCause implements jobstore.Inspector with an index-only scan of
// heed_jobs_dead_cause_idx, read backwards.
func (s *Store) DeadOfCause(ctx context.Context, key jobstore.CauseKey, limit int) ([]jobstore.DeadCause, error) {
	q := `SELECT id, kind, queue, dead_reason, finished_at
		FROM heed_jobs WHERE state = 'dead' AND kind = $1 AND dead_reason = $2 AND dead_cause = $3
		ORDER BY finished_at DESC, id DESC`
	if limit > 0 {
		q += ` LIMIT ` + strconv.Itoa(limit)
	}
	rows, err := s.pool.Query(ctx, q, key.Kind, key.Reason, key.Cause)
	if err != nil {
		return nil, behindErr("dead of cause", 11, err)
	}
	var (
		out []jobstore.DeadCause
		c   jobstore.DeadCause
		fin *time.Time
	)
	_, err = pgx.ForEachRow(rows, []any{&c.ID, &c.Kind, &c.Queue, &c.Reason, &fin}, func() error {
		d := c
		d.FinishedAt = utcOrZero(fin)
		out = append(out, d)
		return nil
	})
	if err != nil {
		return nil, behindErr("dead of cause", 11, err)
	}
	return out, nil
}

// behindErr wraps err; a missing column or table (a schema one release
// behind, opened to read, without the migration that added it) matches
// jobstore.ErrSchemaTooOld.
func behindErr(op string, migration int, err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == "42703" || pgErr.Code == "42P01") { // undefined_column, undefined_table
		return fmt.Errorf("pgstore: %s: %w (migration %d not applied): %w", op, jobstore.ErrSchemaTooOld, migration, err)
	}
	return wrapErr(op, err)
}
