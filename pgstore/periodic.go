package pgstore

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/heed-go/heed/queue"
)

var _ queue.TickInserter = (*Store)(nil)

// recordTickSQL records a periodic job's tick unless it or a later one is
// recorded; it returns a row only when it recorded the tick. Workers racing
// for one tick wait on the row's lock, and all but the first find the tick
// recorded.
const recordTickSQL = `INSERT INTO heed_periodic (kind, queue, last_tick) VALUES ($1, $2, $3)
	ON CONFLICT (kind, queue) DO UPDATE SET last_tick = EXCLUDED.last_tick
		WHERE heed_periodic.last_tick < EXCLUDED.last_tick
	RETURNING last_tick`

// JobInsertTick implements queue.TickInserter: the tick's record (table
// heed_periodic) and the job in one transaction; listeners are notified
// after the commit when the job was inserted.
func (s *Store) JobInsertTick(ctx context.Context, in queue.JobInsert, tick time.Time) (*queue.Job, bool, error) {
	if err := in.Validate(); err != nil {
		return nil, false, err
	}
	var (
		job      *queue.Job
		inserted bool
	)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var last time.Time
		err := tx.QueryRow(ctx, recordTickSQL, in.Kind, in.Queue, tick).Scan(&last)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // this tick or a later one was enqueued
		}
		if err != nil {
			return wrapErr("insert tick", err)
		}
		job, inserted, err = insertJob(ctx, tx, &in)
		return err
	})
	if err != nil {
		return nil, false, err
	}
	if inserted {
		s.publish.publish(job.Queue)
	}
	return job, inserted, nil
}
