package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/heed-go/heed/queue"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// insertReq is one JobInsert without a unique key, waiting for its batch.
type insertReq struct {
	ctx  context.Context
	in   *queue.JobInsert
	done chan struct{}
	job  *queue.Job
	err  error
}

func (r *insertReq) finish(job *queue.Job, err error) {
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
func (b *inserter) do(r *insertReq) (*queue.Job, error) {
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
func insertMany(ctx context.Context, q querier, ins []*queue.JobInsert) ([]*queue.Job, error) {
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
	jobs := make([]*queue.Job, n)
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

// many inserts several jobs in one statement. If the server refuses it
// (a NUL byte in one kind), each is inserted alone, for its own result.
func (b *inserter) applyMany(batch []*insertReq) {
	ctx, cancel := b.stmtCtx(batch[0].ctx)
	defer cancel()
	b.batches.Add(1)
	b.batched.Add(int64(len(batch)))
	ins := make([]*queue.JobInsert, len(batch))
	for i, r := range batch {
		ins[i] = r.in
	}
	jobs, err := insertMany(ctx, b.pool, ins)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		for _, r := range batch {
			b.one(r)
		}
		return
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
