package pgstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/heed-go/heed/internal/sqlfilter"
	"github.com/heed-go/heed/queue/jobstore"
	"github.com/jackc/pgx/v5"
)

// pausedOrLimited is true of the heed_queues row of a queue that claimSQL
// leaves alone: a paused one, or one with a limit.
const pausedOrLimited = `(paused_at IS NOT NULL OR concurrency_limit > 0 OR rate_limit > 0)`

// limitCols are the columns of a queue's limit, as scanLimit reads them.
const limitCols = `concurrency_limit, rate_limit, rate_period, rate_tokens, rate_at`

// limitRow is a queue's limit and rate bucket as stored.
type limitRow struct {
	limit  jobstore.Limit
	bucket jobstore.RateBucket
}

// scanLimit reads limitCols, then dest.
func scanLimit(row pgx.Row, dest ...any) (limitRow, error) {
	var (
		l      limitRow
		period int64
		at     *time.Time
	)
	err := row.Scan(append([]any{&l.limit.Concurrency, &l.limit.Rate, &period, &l.bucket.Tokens, &at}, dest...)...)
	l.limit.RatePeriod = time.Duration(period) * time.Microsecond
	l.bucket.At = utcOrZero(at)
	return l, err
}

// limitPeekSQL reads a limited queue's limit, its running jobs and whether
// a job is due, without locking or writing anything: while the queue is
// at its limit, claims end here, and the jobs held back see no write. (The
// first due job in claim order, rather than EXISTS, so that the plan walks
// heed_jobs_claim_idx: with EXISTS PostgreSQL may scan the table.)
func limitPeekSQL(cond string) string {
	return `SELECT ` + limitCols + `,
	CASE WHEN concurrency_limit > 0
		THEN (SELECT count(*) FROM heed_jobs WHERE state = 'running' AND queue = $1) ELSE 0 END,
	(SELECT id FROM heed_jobs WHERE state = 'available' AND queue = $1 AND available_at <= $2` + cond + `
		ORDER BY priority, available_at, id LIMIT 1) IS NOT NULL
FROM heed_queues WHERE name = $1 AND paused_at IS NULL AND (concurrency_limit > 0 OR rate_limit > 0)`
}

// limitLockSQL locks a limited queue's row for the claim's transaction,
// waiting for a claim that holds it: claims that found room in the peek
// take their turns, each counting what the ones before it claimed. (With
// SKIP LOCKED instead, the claimers that lost the race for the row went
// back to polling while places stood free: 1,000 claimers under a limit
// of 10 kept it full in 15% of samples, against 65% waiting.) The claim
// commits durably, as claimSQL's does.
const limitLockSQL = `SELECT ` + limitCols + `, set_config('synchronous_commit', 'on', true)
FROM heed_queues WHERE name = $1 AND paused_at IS NULL AND (concurrency_limit > 0 OR rate_limit > 0)
FOR UPDATE`

// claimLimitedSQL is claimSQL for a limited queue whose row the
// transaction has locked: the statement starts after the lock, so its
// count of running jobs sees every claim committed before, and no other
// claim of the queue commits until this one does. $6 is the concurrency
// limit (math.MaxInt32 for none), $3 the jobs wanted within the rate's
// tokens; the rate bucket becomes $7 tokens at $8, less the jobs claimed,
// when $9 (the queue has a rate) and a job was claimed.
func claimLimitedSQL(cond string) string {
	return `WITH due AS (
	SELECT id FROM heed_jobs
	WHERE state = 'available' AND queue = $1 AND available_at <= $2` + cond + `
	ORDER BY priority, available_at, id
	LIMIT greatest(0, least($3, $6::integer - (SELECT count(*) FROM heed_jobs WHERE state = 'running' AND queue = $1)))
	FOR UPDATE SKIP LOCKED
), claimed AS (
` + claimUpdate + `
), bucket AS (
	UPDATE heed_queues SET rate_tokens = $7::double precision - (SELECT count(*) FROM claimed), rate_at = $8
	WHERE name = $1 AND $9::boolean AND EXISTS (SELECT 1 FROM claimed)
)
SELECT * FROM claimed`
}

// claimLimited claims for p from a limited queue, and remembers whether
// the queue is limited. held reports that due jobs may have been left for
// the limit (jobstore.HeldClaimer). cached says that the caller skipped claimSQL,
// taking the queue for limited: when it is not, claimLimited claims with
// claimSQL.
func (s *Store) claimLimited(ctx context.Context, p jobstore.ClaimParams, cached bool) (jobs []*jobstore.Job, held bool, err error) {
	cond := sqlfilter.Claim(&p)
	var (
		running int
		due     bool
	)
	peek, err := scanLimit(s.lazy.QueryRow(ctx, limitPeekSQL(cond), p.Queue, p.Now), &running, &due)
	if errors.Is(err, pgx.ErrNoRows) {
		s.limited.Delete(p.Queue)
		if !cached {
			return nil, false, nil
		}
		jobs, err = collectJobs(s.lazy.Query(ctx, claimSQL(cond), p.Queue, p.Now, p.Limit, p.LeaseUntil, p.Worker))
		return jobs, false, err
	}
	if err != nil {
		return nil, false, err
	}
	s.limited.Store(p.Queue, struct{}{})
	if !due {
		return nil, false, nil
	}
	if peek.limit.Claimable(p.Limit, running, peek.bucket, p.Now) == 0 {
		return nil, true, nil
	}
	// READ COMMITTED whatever the connection's default: the claim's
	// statement must see every claim committed before the lock was
	// taken, which a snapshot taken at the transaction's start may not.
	tx, err := s.lazy.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return nil, false, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // after Commit, a no-op
	var sync string
	row, err := scanLimit(tx.QueryRow(ctx, limitLockSQL, p.Queue), &sync)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil // paused, or no longer limited, while it waited
	}
	if err != nil {
		return nil, false, err
	}
	l, b := row.limit, row.bucket
	want := l.Claimable(p.Limit, 0, b, p.Now) // the rate's part; the statement counts the running jobs
	if want == 0 {
		return nil, true, nil
	}
	conc := math.MaxInt32
	if l.Concurrency > 0 {
		conc = l.Concurrency
	}
	b = l.Took(b, p.Now, 0)
	jobs, err = collectJobs(tx.Query(ctx, claimLimitedSQL(cond), p.Queue, p.Now, want, p.LeaseUntil, p.Worker,
		conc, b.Tokens, b.At, l.Rate > 0))
	if err != nil {
		return nil, false, err
	}
	if len(jobs) == 0 {
		return nil, true, nil // nothing was written: roll back
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, false, fmt.Errorf("commit: %w", err)
	}
	return jobs, len(jobs) < p.Limit, nil
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
	_, err := s.pool.Exec(ctx, `INSERT INTO heed_queues AS q (name, `+limitCols+`) VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (name) DO UPDATE SET
	concurrency_limit = excluded.concurrency_limit,
	rate_limit = excluded.rate_limit,
	rate_period = excluded.rate_period,
	rate_tokens = CASE WHEN (q.rate_limit, q.rate_period) = (excluded.rate_limit, excluded.rate_period)
		THEN q.rate_tokens ELSE excluded.rate_tokens END,
	rate_at = CASE WHEN (q.rate_limit, q.rate_period) = (excluded.rate_limit, excluded.rate_period)
		THEN q.rate_at ELSE excluded.rate_at END`,
		q, l.Concurrency, l.Rate, l.RatePeriod.Microseconds(), full.Tokens, full.At)
	if err != nil {
		return wrapErr("limit queue", err)
	}
	// Workers that held back jobs look again at their next poll; wake
	// them now, in case the limit rose.
	s.publish.publish(q)
	return nil
}

// QueuesLimited implements jobstore.QueueOps, in byte order of the names.
func (s *Store) QueuesLimited(ctx context.Context) ([]jobstore.QueueLimit, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+limitCols+`, name FROM heed_queues
WHERE concurrency_limit > 0 OR rate_limit > 0 ORDER BY name COLLATE "C"`)
	if err != nil {
		return nil, wrapErr("limited queues", err)
	}
	qs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (jobstore.QueueLimit, error) {
		var name string
		l, err := scanLimit(r, &name)
		return jobstore.QueueLimit{Queue: name, Limit: l.limit}, err
	})
	if err != nil {
		return nil, wrapErr("limited queues", err)
	}
	return qs, nil
}
