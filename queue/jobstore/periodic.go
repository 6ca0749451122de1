package jobstore

import (
	"context"
	"time"
)

// TickInserter is implemented by stores that
// remember, for each periodic job (a kind and a queue), the latest tick
// whose job they inserted, in a record that outlives the jobs: retention
// deletes a succeeded job after a day, and without that record a worker
// restarted later in a longer period (a weekly report) would find no job
// for the latest tick and run it again. A Worker's periodic jobs use it
// when the store implements it (sqlitestore and pgstore do), and
// Store.JobInsert otherwise.
type TickInserter interface {
	// JobInsertTick inserts in, the job of the tick of the periodic job
	// in.Kind on in.Queue, unless that tick or a later one is recorded
	// for them: then it writes nothing and returns a nil job with
	// inserted false. Otherwise it records tick and inserts in as
	// JobInsert does (returning the job that holds in.UniqueKey, with
	// inserted false, when there is one), both in one transaction, so
	// that of many workers racing for one tick exactly one inserts its
	// job. Errors match ErrInvalid for bad input.
	JobInsertTick(ctx context.Context, in JobInsert, tick time.Time) (job *Job, inserted bool, err error)
}

// Schedule records (for stores and dashboards).

// PeriodicSchedule is a periodic job as the store records it
// ([ScheduleRecorder]): what a dashboard shows of it.
type PeriodicSchedule struct {
	Kind, Queue string
	// Schedule is the schedule in words ("every 1h0m0s", "cron 0 9 * *
	// 1-5"), as the workers running it wrote it; "" when none did (a
	// worker one release behind ticked it).
	Schedule string
	// LastTick is the latest tick whose job was enqueued.
	LastTick time.Time
	// NextTick is the tick after it, as the workers computed it (zero when
	// not recorded, or when the schedule has no more ticks).
	NextTick time.Time
	// SeenAt is when a worker running it last recorded it (zero: never).
	SeenAt time.Time
}

// ScheduleRecorder is implemented by stores that
// keep, beside each periodic job's latest tick ([TickInserter]), its
// schedule and next tick, so that a dashboard or a CLI in another process
// can show them. sqlitestore and pgstore implement it. A [queue.Worker] records
// each periodic job after enqueueing a tick (the record of a job that
// never ticked is written with its first tick).
type ScheduleRecorder interface {
	// JobScheduleRecord writes s.Schedule, s.NextTick and s.SeenAt for
	// the periodic job s.Kind on s.Queue, when its tick is recorded
	// (otherwise it writes nothing); s.LastTick is ignored.
	JobScheduleRecord(ctx context.Context, s PeriodicSchedule) error
	// JobSchedules returns every recorded periodic job, by kind then
	// queue. A database whose schema predates the schedules returns an
	// error matching [ErrSchemaTooOld].
	JobSchedules(ctx context.Context) ([]PeriodicSchedule, error)
}
