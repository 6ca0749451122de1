package pgstore

import (
	"context"
	"slices"

	"github.com/heed-go/heed/queue"
	"github.com/jackc/pgx/v5"
)

var _ queue.BatchInserter = (*Store)(nil)

// insertManyChunk is the most jobs one statement of a batch insert
// carries: big enough that the round trips do not matter, small enough
// that one statement's arrays stay a few megabytes.
const insertManyChunk = 2000

// JobInsertMany inserts ins in one transaction, as [Store.JobInsert] would
// each, and returns one result per element, in order; on an error nothing
// is written. Jobs go in multi-row INSERTs of up to 2,000 rows; a unique
// key that is held (by a live job or an earlier element) returns the job
// holding it. Listeners are notified once per queue after the commit.
// Errors match queue.ErrInvalid for bad input.
func (s *Store) JobInsertMany(ctx context.Context, ins []queue.JobInsert) ([]queue.InsertResult, error) {
	for i := range ins {
		if err := ins[i].Validate(); err != nil {
			return nil, &queue.ItemError{Index: i, Err: err}
		}
	}
	var res []queue.InsertResult
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		res, err = insertManyTx(ctx, tx, ins)
		return err
	})
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
func insertManyTx(ctx context.Context, tx pgx.Tx, ins []queue.JobInsert) ([]queue.InsertResult, error) {
	res := make([]queue.InsertResult, len(ins))
	ptrs := make([]*queue.JobInsert, 0, min(len(ins), insertManyChunk))
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
				res[lo+i] = queue.InsertResult{Job: job, Inserted: true}
				continue
			}
			job, inserted, err := insertJob(ctx, tx, ptrs[i])
			if err != nil {
				return nil, &queue.ItemError{Index: lo + i, Err: err}
			}
			res[lo+i] = queue.InsertResult{Job: job, Inserted: inserted}
		}
	}
	return res, nil
}
