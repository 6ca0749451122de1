package jobstore

import (
	"context"
	"fmt"
	"strings"
)

// InsertResult is the outcome of one job of a batch insert: the job as
// stored and whether it was inserted. Inserted is false when the job's
// unique key was held ([queue.EnqueueOptions.UniqueKey], [queue.EnqueueOptions.Unique]);
// Job is then the job holding it, which may be an earlier job of the same
// batch.
type InsertResult struct {
	Job      *Job
	Inserted bool
}

// BatchInserter is implemented by stores that insert many jobs in one
// transaction (both stores heed ships). [queue.Client.EnqueueMany] uses it when
// its store has it.
type BatchInserter interface {
	// JobInsertMany inserts each of ins as [Store.JobInsert] would, in
	// order, all in one transaction: either every job is written (or
	// found holding its unique key) or, on an error, none is. It returns
	// one result per element of ins, in order. Later elements see earlier
	// ones: of two with the same unique key, the second returns the first
	// with Inserted false.
	JobInsertMany(ctx context.Context, ins []JobInsert) ([]InsertResult, error)
}

// ItemError reports an invalid item of a batch ([queue.Client.EnqueueMany], [BatchInserter.JobInsertMany]),
// naming it by its index. It unwraps to the item's error, which matches
// [ErrInvalid].
type ItemError struct {
	Index int   // from 0
	Err   error // what is wrong with it
}

// Error reads like "queue: item 3: kind is empty": Err's message without
// its own "queue: ", so that each prefix is said once.
func (e *ItemError) Error() string {
	return fmt.Sprintf("queue: item %d: %s", e.Index, strings.TrimPrefix(e.Err.Error(), "queue: "))
}

// Unwrap returns Err.
func (e *ItemError) Unwrap() error { return e.Err }
