package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/heed-go/heed/internal/sqlfilter"
	"github.com/heed-go/heed/queue/jobstore"
)

// Store implements jobstore.Inspector, the dashboard's questions (package ui).
var _ jobstore.Inspector = (*Store)(nil)

// JobSearch implements jobstore.Inspector. The text is matched with instr on
// lower-cased text: a scan of the jobs f selects, in ID order, that stops
// at f.Limit matches.
func (s *Store) JobSearch(ctx context.Context, params jobstore.SearchParams) ([]*jobstore.Job, error) {
	f, text, inArgs := params.Filter, params.Text, params.InArgs
	if err := f.Validate(); err != nil {
		return nil, err
	}
	w, args := where(&f, false)
	if text != "" {
		cond := `EXISTS (SELECT 1 FROM json_each(history) e
			WHERE instr(lower(json_extract(e.value, '$.error')), lower(?)) > 0)`
		args = append(args, text)
		if inArgs {
			cond = `(instr(lower(args), lower(?)) > 0 OR ` + cond + `)`
			args = append(args, text)
		}
		w += " AND " + cond
	}
	order := sqlfilter.Order(&f)
	rows, err := s.r.QueryContext(ctx, `SELECT `+jobColumns+` FROM heed_jobs WHERE `+w+order+limit(&f), args...)
	if err != nil {
		return nil, wrap("search", err)
	}
	jobs, err := scanJobs(rows)
	return jobs, wrap("search", err)
}

// QueueLags implements jobstore.Inspector with the claim index.
func (s *Store) QueueLags(ctx context.Context, now time.Time) (map[string]time.Time, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT queue, min(available_at) FROM heed_jobs
		WHERE state = 'available' AND available_at <= ? GROUP BY queue`, micros(now))
	if err != nil {
		return nil, wrap("queue lags", err)
	}
	defer rows.Close()
	lags := map[string]time.Time{}
	for rows.Next() {
		var (
			q  string
			at int64
		)
		if err := rows.Scan(&q, &at); err != nil {
			return nil, wrap("queue lags", err)
		}
		lags[q] = time.UnixMicro(at).UTC()
	}
	return lags, wrap("queue lags", rows.Err())
}

// throughputSQL lists the history entries that Throughput counts, with
// their queue and finish time as stored (RFC 3339 text, parsed in Go:
// SQLite's date functions keep milliseconds). It reads only the jobs that
// can hold an entry that finished at or after since: finished ones that
// finished since then (the last entry finishes with the job), running ones
// whose current attempt started since then (every earlier entry finished
// before it), and available ones due since then (a retry's entry finishes
// before the job is due again).
const throughputSQL = `SELECT j.queue, json_extract(e.value, '$.action'), json_extract(e.value, '$.finished_at')
	FROM heed_jobs j, json_each(j.history) e
	WHERE ((j.state IN ('succeeded', 'dead', 'cancelled') AND j.finished_at >= ?1)
		OR (j.state = 'running' AND j.attempted_at >= ?1)
		OR (j.state = 'available' AND j.available_at >= ?1))
	  AND json_extract(e.value, '$.action') IN ('done', 'retry', 'give_up', 'give up')`

// Throughput implements jobstore.Inspector.
func (s *Store) Throughput(ctx context.Context, since, until time.Time) ([]jobstore.Throughput, error) {
	rows, err := s.r.QueryContext(ctx, throughputSQL, micros(since))
	if err != nil {
		return nil, wrap("throughput", err)
	}
	defer rows.Close()
	counts := map[jobstore.Throughput]int{}
	for rows.Next() {
		var (
			k   jobstore.Throughput
			fin string
		)
		if err := rows.Scan(&k.Queue, &k.Action, &fin); err != nil {
			return nil, wrap("throughput", err)
		}
		at, err := time.Parse(time.RFC3339Nano, fin)
		if err != nil {
			return nil, fmt.Errorf("sqlitestore: throughput: history entry finished_at %q: %w", fin, err)
		}
		if at.Before(since) || !at.Before(until) {
			continue
		}
		k.Minute = at.UTC().Truncate(time.Minute)
		if k.Action == "give up" { // stored before actions had keys
			k.Action = "give_up"
		}
		counts[k]++
	}
	if err := rows.Err(); err != nil {
		return nil, wrap("throughput", err)
	}
	out := make([]jobstore.Throughput, 0, len(counts))
	for k, n := range counts {
		k.Count = n
		out = append(out, k)
	}
	return out, nil
}

// DeadCauses implements jobstore.Inspector.
func (s *Store) DeadCauses(ctx context.Context, f jobstore.JobFilter) ([]jobstore.DeadCause, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	w, args := where(&f, true)
	order := ` ORDER BY finished_at, id`
	if f.Newest {
		order = ` ORDER BY finished_at DESC, id DESC`
	}
	rows, err := s.r.QueryContext(ctx, `SELECT id, kind, queue, coalesce(dead_reason, ''), finished_at,
		coalesce(json_extract(history, '$[#-1].error'), '') FROM heed_jobs WHERE `+w+order+limit(&f), args...)
	if err != nil {
		return nil, wrap("dead causes", err)
	}
	defer rows.Close()
	var out []jobstore.DeadCause
	for rows.Next() {
		var (
			c   jobstore.DeadCause
			fin sql.NullInt64
		)
		if err := rows.Scan(&c.ID, &c.Kind, &c.Queue, &c.Reason, &fin, &c.Error); err != nil {
			return nil, wrap("dead causes", err)
		}
		c.FinishedAt = fromMicros(fin)
		out = append(out, c)
	}
	return out, wrap("dead causes", rows.Err())
}

// DeadCauseCounts implements jobstore.Inspector over the column dead_cause
// of migration 11, through its index.
func (s *Store) DeadCauseCounts(ctx context.Context, limit int) ([]jobstore.DeadCauseCount, error) {
	q := `SELECT kind, coalesce(dead_reason, ''), coalesce(dead_cause, ''), queue, count(*), min(finished_at), max(finished_at), max(id)
		FROM heed_jobs WHERE state = 'dead'
		GROUP BY kind, dead_reason, dead_cause, queue
		ORDER BY count(*) DESC, kind, dead_reason, dead_cause, queue`
	if limit > 0 {
		q += ` LIMIT ` + strconv.Itoa(limit)
	}
	rows, err := s.r.QueryContext(ctx, q)
	if err != nil {
		return nil, behindErr("dead cause counts", 11, err)
	}
	defer rows.Close()
	var out []jobstore.DeadCauseCount
	for rows.Next() {
		var (
			c         jobstore.DeadCauseCount
			first, la sql.NullInt64
		)
		if err := rows.Scan(&c.Kind, &c.Reason, &c.Cause, &c.Queue, &c.Count, &first, &la, &c.MaxID); err != nil {
			return nil, wrap("dead cause counts", err)
		}
		c.First, c.Last = fromMicros(first), fromMicros(la)
		out = append(out, c)
	}
	return out, wrap("dead cause counts", rows.Err())
}

// DeadOfCause implements jobstore.Inspector with the index of the causes
// alone (it covers the columns read), read backwards.
func (s *Store) DeadOfCause(ctx context.Context, key jobstore.CauseKey, limit int) ([]jobstore.DeadCause, error) {
	q := `SELECT id, kind, queue, coalesce(dead_reason, ''), finished_at
		FROM heed_jobs WHERE state = 'dead' AND kind = ? AND dead_reason = ? AND dead_cause = ?
		ORDER BY finished_at DESC, id DESC`
	if limit > 0 {
		q += ` LIMIT ` + strconv.Itoa(limit)
	}
	rows, err := s.r.QueryContext(ctx, q, key.Kind, key.Reason, key.Cause)
	if err != nil {
		return nil, behindErr("dead of cause", 11, err)
	}
	defer rows.Close()
	var out []jobstore.DeadCause
	for rows.Next() {
		var (
			c   jobstore.DeadCause
			fin sql.NullInt64
		)
		if err := rows.Scan(&c.ID, &c.Kind, &c.Queue, &c.Reason, &fin); err != nil {
			return nil, wrap("dead of cause", err)
		}
		c.FinishedAt = fromMicros(fin)
		out = append(out, c)
	}
	return out, wrap("dead of cause", rows.Err())
}

// behindErr wraps err; a missing column or table (a schema one release
// behind, opened to read, without the migration that added it) matches
// jobstore.ErrSchemaTooOld.
func behindErr(op string, migration int, err error) error {
	if err != nil && (strings.Contains(err.Error(), "no such column") || strings.Contains(err.Error(), "no such table: heed_")) {
		return fmt.Errorf("sqlitestore: %s: %w (migration %d not applied): %w", op, jobstore.ErrSchemaTooOld, migration, err)
	}
	return wrap(op, err)
}
