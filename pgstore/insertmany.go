package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/heed-go/heed/queue/jobstore"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

var _ jobstore.BatchInserter = (*Store)(nil)

// insertManyChunk is the most jobs one statement of a batch insert
// carries: big enough that the round trips do not matter, small enough
// that one statement's arrays stay a few megabytes.
const insertManyChunk = 2000

// JobInsertMany inserts ins in one transaction, as [Store.JobInsert] would
// each, and returns one result per element, in order; on an error nothing
// is written. A batch without unique keys goes in one COPY (see copyJobs);
// one with unique keys in multi-row INSERTs of up to 2,000 rows, where a
// key that is held (by a live job or an earlier element) returns the job
// holding it. Listeners are notified once per queue after the commit.
// Errors match queue.ErrInvalid for bad input.
func (s *Store) JobInsertMany(ctx context.Context, ins []jobstore.JobInsert) ([]jobstore.InsertResult, error) {
	unique := false
	for i := range ins {
		if err := ins[i].Validate(); err != nil {
			return nil, &jobstore.ItemError{Index: i, Err: err}
		}
		unique = unique || ins[i].UniqueKey != ""
	}
	if len(ins) == 0 {
		return nil, nil
	}
	var (
		res []jobstore.InsertResult
		err error
	)
	if unique {
		err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			var err error
			res, err = insertManyTx(ctx, tx, ins)
			return err
		})
	} else {
		res, err = copyJobs(ctx, s.pool, ins)
	}
	if err != nil {
		return nil, err
	}
	var queues []string
	for _, r := range res {
		if r.Inserted {
			queues = append(queues, r.Job.Queue)
		}
	}
	slices.Sort(queues)
	s.publish.publish(slices.Compact(queues)...)
	return res, nil
}

// insertManyTx inserts ins through tx, in chunks. The rows of a chunk whose
// unique key was held are then inserted (or found held) one by one, as
// JobInsert does, within tx.
func insertManyTx(ctx context.Context, tx pgx.Tx, ins []jobstore.JobInsert) ([]jobstore.InsertResult, error) {
	res := make([]jobstore.InsertResult, len(ins))
	ptrs := make([]*jobstore.JobInsert, 0, min(len(ins), insertManyChunk))
	for lo := 0; lo < len(ins); lo += insertManyChunk {
		hi := min(lo+insertManyChunk, len(ins))
		ptrs = ptrs[:0]
		for i := lo; i < hi; i++ {
			ptrs = append(ptrs, &ins[i])
		}
		jobs, err := insertMany(ctx, tx, ptrs)
		if err != nil {
			return nil, wrapErr("insert jobs", err)
		}
		for i, job := range jobs {
			if job != nil {
				res[lo+i] = jobstore.InsertResult{Job: job, Inserted: true}
				continue
			}
			job, inserted, err := insertJob(ctx, tx, ptrs[i])
			if err != nil {
				return nil, &jobstore.ItemError{Index: lo + i, Err: err}
			}
			res[lo+i] = jobstore.InsertResult{Job: job, Inserted: inserted}
		}
	}
	return res, nil
}

// idsSQL draws $1 job IDs from heed_jobs' identity sequence.
const idsSQL = `SELECT nextval(pg_get_serial_sequence('heed_jobs', 'id')) FROM generate_series(1, $1)`

// copyColumns are the columns copyJobs writes; the others take their
// defaults (attempt 0, no lease, no worker, no dead reason, an empty
// history, the default unique states of a job without a key), as the jobs
// it returns say.
var copyColumns = []string{"id", "kind", "queue", "args", "state", "priority", "max_attempts", "policy",
	"available_at", "created_at"}

// copyJobs inserts ins (validated, none with a unique key) in one COPY,
// which is atomic as any one statement: all rows or none. COPY returns no
// rows, so the IDs are drawn first, in ascending order (a failed COPY
// leaves a gap in the sequence, as a failed INSERT does), and the jobs are
// built from what was written. On PostgreSQL COPY writes rows 2-3 times
// faster than a multi-row INSERT ... RETURNING, which spends its time
// building and reading back every row (internal/compare's
// BenchmarkQueueInsert).
func copyJobs(ctx context.Context, pool *pgxpool.Pool, ins []jobstore.JobInsert) ([]jobstore.InsertResult, error) {
	rows, err := pool.Query(ctx, idsSQL, len(ins))
	if err != nil {
		return nil, wrapErr("insert jobs: draw IDs", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err == nil && len(ids) != len(ins) {
		err = fmt.Errorf("%d IDs for %d jobs", len(ids), len(ins))
	}
	if err != nil {
		return nil, wrapErr("insert jobs: draw IDs", err)
	}
	slices.Sort(ids)
	policies := make([]string, len(ins))
	for i := range ins {
		policies[i] = "{}"
		if !ins[i].Policy.IsZero() {
			p, err := json.Marshal(ins[i].Policy)
			if err != nil {
				return nil, fmt.Errorf("pgstore: insert jobs: encode policy: %w", err)
			}
			policies[i] = string(p)
		}
	}
	_, err = pool.CopyFrom(ctx, pgx.Identifier{"heed_jobs"}, copyColumns, pgx.CopyFromSlice(len(ins), func(i int) ([]any, error) {
		in := &ins[i]
		return []any{ids[i], in.Kind, in.Queue, []byte(in.Args), string(jobstore.StateAvailable), int32(in.Priority),
			int32(in.MaxAttempts), policies[i], in.AvailableAt, in.CreatedAt}, nil
	}))
	if err != nil {
		return nil, wrapErr("insert jobs", err)
	}
	res := make([]jobstore.InsertResult, len(ins))
	jobs := make([]jobstore.Job, len(ins)) // one allocation for all
	for i := range ins {
		in := &ins[i]
		jobs[i] = jobstore.Job{ID: ids[i], Kind: in.Kind, Queue: in.Queue, Args: in.Args, State: jobstore.StateAvailable,
			Priority: in.Priority, MaxAttempts: in.MaxAttempts, Policy: in.Policy,
			AvailableAt: truncUTC(in.AvailableAt), CreatedAt: truncUTC(in.CreatedAt)}
		res[i] = jobstore.InsertResult{Job: &jobs[i], Inserted: true}
	}
	return res, nil
}
