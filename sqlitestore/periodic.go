package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/heed-go/heed/queue/jobstore"
)

var _ jobstore.TickInserter = (*Store)(nil)

// recordTickSQL records a periodic job's tick unless it or a later one is
// recorded; it returns a row only when it recorded the tick.
const recordTickSQL = `INSERT INTO heed_periodic (kind, queue, last_tick) VALUES (?1, ?2, ?3)
	ON CONFLICT (kind, queue) DO UPDATE SET last_tick = excluded.last_tick
		WHERE heed_periodic.last_tick < excluded.last_tick
	RETURNING last_tick`

// JobInsertTick implements jobstore.TickInserter: the tick's record (table
// heed_periodic) and the job in one IMMEDIATE transaction.
func (s *Store) JobInsertTick(ctx context.Context, in jobstore.JobInsert, tick time.Time) (*jobstore.Job, bool, error) {
	if err := in.Validate(); err != nil {
		return nil, false, err
	}
	args, err := insertArgs(&in)
	if err != nil {
		return nil, false, wrap("insert tick", err)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, false, wrap("insert tick", err)
	}
	defer tx.Rollback()
	var last int64
	err = tx.QueryRowContext(ctx, recordTickSQL, in.Kind, in.Queue, micros(tick)).Scan(&last)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil // this tick or a later one was enqueued
	}
	if err != nil {
		return nil, false, wrap("insert tick", err)
	}
	var (
		j        *jobstore.Job
		inserted bool
	)
	if in.UniqueKey != "" {
		if j, inserted, err = insertUnique(ctx, tx, &in, args); err != nil {
			return nil, false, err
		}
	} else {
		if j, err = scanJob(tx.QueryRowContext(ctx, insertSQL, args...)); err != nil {
			return nil, false, wrap("insert tick", err)
		}
		inserted = true
	}
	if err := tx.Commit(); err != nil { // the record, even when the job was there
		return nil, false, wrap("insert tick", err)
	}
	if inserted {
		s.notify(j.Queue)
	}
	return j, inserted, nil
}

var _ jobstore.ScheduleRecorder = (*Store)(nil)

// JobScheduleRecord implements jobstore.ScheduleRecorder.
func (s *Store) JobScheduleRecord(ctx context.Context, ps jobstore.PeriodicSchedule) error {
	_, err := s.w.ExecContext(ctx, `UPDATE heed_periodic SET schedule = ?3, next_tick = ?4, seen_at = ?5 WHERE kind = ?1 AND queue = ?2`,
		ps.Kind, ps.Queue, ps.Schedule, nullMicros(ps.NextTick), nullMicros(ps.SeenAt))
	return behindErr("record schedule", 13, err)
}

// JobSchedules implements jobstore.ScheduleRecorder.
func (s *Store) JobSchedules(ctx context.Context) ([]jobstore.PeriodicSchedule, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT kind, queue, coalesce(schedule, ''), last_tick, next_tick, seen_at
		FROM heed_periodic ORDER BY kind, queue`)
	if err != nil {
		return nil, behindErr("list schedules", 13, err)
	}
	defer rows.Close()
	var out []jobstore.PeriodicSchedule
	for rows.Next() {
		var (
			p          jobstore.PeriodicSchedule
			last       int64
			next, seen sql.NullInt64
		)
		if err := rows.Scan(&p.Kind, &p.Queue, &p.Schedule, &last, &next, &seen); err != nil {
			return nil, wrap("list schedules", err)
		}
		p.LastTick, p.NextTick, p.SeenAt = time.UnixMicro(last).UTC(), fromMicros(next), fromMicros(seen)
		out = append(out, p)
	}
	return out, wrap("list schedules", rows.Err())
}
