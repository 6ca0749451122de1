package pgstore

import (
	"context"
	"errors"
	"time"

	"github.com/heed-go/heed/queue/jobstore"
	"github.com/jackc/pgx/v5"
)

var _ jobstore.TickInserter = (*Store)(nil)

// recordTickSQL records a periodic job's tick unless it or a later one is
// recorded; it returns a row only when it recorded the tick. Workers racing
// for one tick wait on the row's lock, and all but the first find the tick
// recorded.
const recordTickSQL = `INSERT INTO heed_periodic (kind, queue, last_tick) VALUES ($1, $2, $3)
	ON CONFLICT (kind, queue) DO UPDATE SET last_tick = EXCLUDED.last_tick
		WHERE heed_periodic.last_tick < EXCLUDED.last_tick
	RETURNING last_tick`

// JobInsertTick implements jobstore.TickInserter: the tick's record (table
// heed_periodic) and the job in one transaction; listeners are notified
// after the commit when the job was inserted.
func (s *Store) JobInsertTick(ctx context.Context, in jobstore.JobInsert, tick time.Time) (*jobstore.Job, bool, error) {
	if err := in.Validate(); err != nil {
		return nil, false, err
	}
	var (
		job      *jobstore.Job
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

var _ jobstore.ScheduleRecorder = (*Store)(nil)

// JobScheduleRecord implements jobstore.ScheduleRecorder.
func (s *Store) JobScheduleRecord(ctx context.Context, ps jobstore.PeriodicSchedule) error {
	var next *time.Time
	if !ps.NextTick.IsZero() {
		next = &ps.NextTick
	}
	_, err := s.pool.Exec(ctx, `UPDATE heed_periodic SET schedule = $3, next_tick = $4, seen_at = $5 WHERE kind = $1 AND queue = $2`,
		ps.Kind, ps.Queue, ps.Schedule, next, ps.SeenAt)
	return behindErr("record schedule", 13, err)
}

// JobSchedules implements jobstore.ScheduleRecorder.
func (s *Store) JobSchedules(ctx context.Context) ([]jobstore.PeriodicSchedule, error) {
	rows, err := s.pool.Query(ctx, `SELECT kind, queue, coalesce(schedule, ''), last_tick, next_tick, seen_at
		FROM heed_periodic ORDER BY kind, queue`)
	if err != nil {
		return nil, behindErr("list schedules", 13, err)
	}
	var (
		out        []jobstore.PeriodicSchedule
		p          jobstore.PeriodicSchedule
		next, seen *time.Time
	)
	_, err = pgx.ForEachRow(rows, []any{&p.Kind, &p.Queue, &p.Schedule, &p.LastTick, &next, &seen}, func() error {
		q := p
		q.LastTick, q.NextTick, q.SeenAt = p.LastTick.UTC(), utcOrZero(next), utcOrZero(seen)
		out = append(out, q)
		return nil
	})
	if err != nil {
		return nil, behindErr("list schedules", 13, err)
	}
	return out, nil
}
