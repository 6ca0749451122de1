package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/heed-go/heed/queue/jobstore"
)

// limitCols are the columns of a queue's limit, as scanLimit reads them.
const limitCols = `concurrency_limit, rate_limit, rate_period, rate_tokens, rate_at`

// scanLimit reads limitCols, then dest.
func scanLimit(sc scanner, dest ...any) (jobstore.Limit, jobstore.RateBucket, error) {
	var (
		l      jobstore.Limit
		b      jobstore.RateBucket
		period int64
		at     sql.NullInt64
	)
	err := sc.Scan(append([]any{&l.Concurrency, &l.Rate, &period, &b.Tokens, &at}, dest...)...)
	l.RatePeriod = time.Duration(period) * time.Microsecond
	b.At = fromMicros(at)
	return l, b, err
}

// limitSQL reads a limited queue's limit and its running jobs.
const limitSQL = `SELECT ` + limitCols + `,
	(SELECT count(*) FROM heed_jobs WHERE state = 'running' AND queue = ?1)
FROM heed_queues WHERE name = ?1 AND paused_at IS NULL AND (concurrency_limit > 0 OR rate_limit > 0)`

// claimLimited claims for p from a limited queue: first a look on a read
// connection, so that while the queue is at its limit claims take no
// write lock and the jobs held back see no write; then one IMMEDIATE
// transaction (SQLite runs them one at a time in the file, whatever the
// process) that counts the running jobs, claims within the limit and
// takes the rate's tokens.
func (s *Store) claimLimited(ctx context.Context, p jobstore.ClaimParams, cond string) ([]*jobstore.Job, error) {
	peek, err := s.preparedRead(ctx, limitSQL)
	if err != nil {
		return nil, err
	}
	var running int
	l, b, err := scanLimit(peek.QueryRowContext(ctx, p.Queue), &running)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil // paused, or no longer limited: the next claim looks again
	}
	if err != nil || l.Claimable(p.Limit, running, b, p.Now) == 0 {
		return nil, err
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit, a no-op
	l, b, err = scanLimit(tx.QueryRowContext(ctx, limitSQL, p.Queue), &running)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	n := l.Claimable(p.Limit, running, b, p.Now)
	if n == 0 {
		return nil, nil
	}
	rows, err := tx.QueryContext(ctx, claimWhereSQL(cond), p.Queue, micros(p.Now), n, micros(p.LeaseUntil), p.Worker)
	if err != nil {
		return nil, err
	}
	jobs, err := scanJobs(rows)
	if err != nil || len(jobs) == 0 {
		return nil, err
	}
	if l.Rate > 0 {
		b = l.Took(b, p.Now, len(jobs))
		if _, err := tx.ExecContext(ctx, `UPDATE heed_queues SET rate_tokens = ?, rate_at = ? WHERE name = ?`,
			b.Tokens, micros(b.At), p.Queue); err != nil {
			return nil, err
		}
	}
	return jobs, tx.Commit()
}

// QueueLimit implements jobstore.QueueOps.
func (s *Store) QueueLimit(ctx context.Context, q string, l jobstore.Limit, now time.Time) error {
	if q == "" {
		return &jobstore.InputError{Field: "queue", Reason: "is empty"}
	}
	if err := l.Validate(); err != nil {
		return err
	}
	full := l.FullBucket(now)
	_, err := s.w.ExecContext(ctx, `INSERT INTO heed_queues (name, `+limitCols+`) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
		ON CONFLICT (name) DO UPDATE SET
			rate_tokens = CASE WHEN rate_limit = excluded.rate_limit AND rate_period = excluded.rate_period
				THEN rate_tokens ELSE excluded.rate_tokens END,
			rate_at = CASE WHEN rate_limit = excluded.rate_limit AND rate_period = excluded.rate_period
				THEN rate_at ELSE excluded.rate_at END,
			concurrency_limit = excluded.concurrency_limit,
			rate_limit = excluded.rate_limit,
			rate_period = excluded.rate_period`,
		q, l.Concurrency, l.Rate, l.RatePeriod.Microseconds(), full.Tokens, micros(full.At))
	if err != nil {
		return wrap("limit queue", err)
	}
	s.notify(q) // a raised limit has room for the jobs held back
	return nil
}

// QueuesLimited implements jobstore.QueueOps.
func (s *Store) QueuesLimited(ctx context.Context) ([]jobstore.QueueLimit, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+limitCols+`, name FROM heed_queues
		WHERE concurrency_limit > 0 OR rate_limit > 0 ORDER BY name`)
	if err != nil {
		return nil, wrap("limited queues", err)
	}
	defer rows.Close()
	var qs []jobstore.QueueLimit
	for rows.Next() {
		var ql jobstore.QueueLimit
		if ql.Limit, _, err = scanLimit(rows, &ql.Queue); err != nil {
			return nil, wrap("limited queues", err)
		}
		qs = append(qs, ql)
	}
	return qs, wrap("limited queues", rows.Err())
}

var _ jobstore.HeldClaimer = (*Store)(nil)
