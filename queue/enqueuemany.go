package queue

import (
	"context"
	"fmt"

	"github.com/heed-go/heed/clock"
	"github.com/heed-go/heed/queue/jobstore"
)

// EnqueueItem is one job for [Client.EnqueueMany]: what [Client.Enqueue]
// takes, as a value. The zero value is invalid (Kind is empty).
type EnqueueItem struct {
	Kind string // selects the handler; not empty
	// Args is marshalled with encoding/json, as Enqueue's args (a
	// json.RawMessage or []byte is used as is; nil is {}).
	Args    any
	Options EnqueueOptions // as for Enqueue
}

// EnqueueMany adds the jobs of items, validating them all first: a bad
// item returns an [*ItemError] naming its index (matching ErrInvalid), and
// nothing is written. It returns one result per item, in order; an item
// whose unique key is held returns the job holding it with Inserted false.
//
// With a store that is a [jobstore.BatchInserter] (sqlitestore, pgstore) the batch
// is one transaction: on an error no job of it was written. With any other
// store the jobs are inserted one by one, and an error leaves the jobs
// before the failing one written (their count is the length of the
// results returned with the error).
//
// One call holds all its jobs in memory and, on PostgreSQL, one
// transaction: load millions of jobs in calls of about 10,000.
func (c *Client) EnqueueMany(ctx context.Context, items []EnqueueItem) ([]jobstore.InsertResult, error) {
	now := clock.Now(c.cfg.Clock)
	ins := make([]jobstore.JobInsert, len(items))
	for i, it := range items {
		var err error
		if ins[i], err = NewJobInsert(it.Kind, it.Args, it.Options, now); err != nil {
			return nil, &ItemError{Index: i, Err: err}
		}
	}
	if len(ins) == 0 {
		return nil, nil
	}
	var (
		res []jobstore.InsertResult
		err error
	)
	if b, ok := c.store.(jobstore.BatchInserter); ok {
		res, err = b.JobInsertMany(ctx, ins)
		if err == nil && len(res) != len(ins) {
			err = fmt.Errorf("queue: store returned %d results for %d jobs", len(res), len(ins))
		}
		if err != nil {
			return nil, err
		}
	} else {
		res = make([]jobstore.InsertResult, 0, len(ins))
		for _, in := range ins {
			job, inserted, err := c.store.JobInsert(ctx, in)
			if err != nil {
				return res, err
			}
			res = append(res, jobstore.InsertResult{Job: job, Inserted: inserted})
		}
	}
	if c.cfg.Observe != nil {
		for _, r := range res {
			if r.Inserted {
				c.cfg.Observe(ctx, Event{Kind: EventEnqueued, Job: r.Job})
			}
		}
	}
	return res, nil
}
