package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/heed-go/heed/clock"
	"github.com/heed-go/heed/internal/cron"
	"github.com/heed-go/heed/internal/uniform"
	"github.com/heed-go/heed/queue/jobstore"
)

// Schedule says when a periodic job is due. Implementations must be
// deterministic (every worker computes the same ticks) and safe for
// concurrent use. [Every] and [Cron] make one.
type Schedule interface {
	// Next returns the first tick strictly after t, or the zero time when
	// there is none.
	Next(t time.Time) time.Time
}

// Every returns a schedule that ticks every d (at least a second), at the
// multiples of d counted from the Unix epoch in UTC: Every(time.Hour) ticks
// on the hour, Every(24*time.Hour) at midnight UTC, whatever time a worker
// starts. It panics if d is under a second (a programming error).
func Every(d time.Duration) Schedule {
	if d < time.Second {
		panic(fmt.Sprintf("queue: Every(%v): the period must be at least 1s", d))
	}
	return every(d)
}

type every time.Duration

func (e every) Next(t time.Time) time.Time {
	return periodStart(t, time.Duration(e)).Add(time.Duration(e))
}

func (e every) String() string { return "every " + time.Duration(e).String() }

// Cron parses a standard cron expression: five fields (minute, hour, day of
// month, month, day of week; "*", lists, ranges, steps, and the names jan-dec
// and sun-sat), or a descriptor (@yearly, @monthly, @weekly, @daily,
// @hourly). When both day fields are restricted, a day matches when either
// does, as in cron. It reads what github.com/robfig/cron/v3's standard parser
// read, which heed used before, and gives the same ticks. Times are
// in UTC unless the expression starts with CRON_TZ=Zone (such as
// "CRON_TZ=Europe/Paris 0 9 * * 1-5"), so that workers in different time
// zones agree. "@every" is refused: use [Every], whose ticks are aligned.
// Errors match ErrInvalid and quote the expression.
func Cron(expr string) (Schedule, error) {
	e := strings.TrimSpace(expr)
	if strings.HasPrefix(e, "@every") {
		return nil, &InputError{Field: "cron expression", Reason: fmt.Sprintf("%q: @every is not supported; use queue.Every, whose ticks are aligned", expr)}
	}
	s, err := cron.Parse(e, time.UTC)
	if err != nil {
		return nil, &InputError{Field: "cron expression", Reason: fmt.Sprintf("%q: %v", expr, err)}
	}
	return cronSchedule{s, expr}, nil
}

type cronSchedule struct {
	s    *cron.Schedule
	expr string
}

func (c cronSchedule) Next(t time.Time) time.Time { return c.s.Next(t) }
func (c cronSchedule) String() string             { return "cron " + c.expr }

// PeriodicJob is a job enqueued on a schedule by every [Worker] it is
// registered on ([Worker.Periodic]): however many workers run it, each tick
// makes exactly one job. Register the same PeriodicJob on every worker
// (workers that know it agree on its ticks; a worker that does not know it
// does nothing for it). The job of a tick is unique by its kind, queue and
// tick (its unique key is {"kind":K,"queue":Q,"period":TICK}) in every
// state, so a worker late to a tick, or restarted, finds it and enqueues
// nothing; and it is available at its tick (AvailableAt = the tick), so a
// worker whose clock runs ahead does not run it early.
//
// Missed ticks: a worker that starts (or wakes after being stalled) enqueues
// only the latest tick that has passed, if it was not enqueued yet: after
// downtime the job runs once, not once per missed tick. The stores heed
// ships remember the latest tick enqueued for each kind and queue apart from
// the jobs ([jobstore.TickInserter]), so a tick whose job retention (or an operator)
// deleted is never enqueued again, nor any earlier one. With a store that
// does not implement TickInserter, only the job marks its tick: keep
// succeeded jobs longer than the longest period there, or a restart within
// that period runs the latest tick again.
type PeriodicJob struct {
	// Kind selects the handler; not empty.
	Kind string
	// Args are the job's arguments, as for Enqueue (marshalled once, at
	// registration).
	Args any
	// Schedule says when it is due ([Every], [Cron]); not nil.
	Schedule Schedule
	// Options: Queue, Priority, MaxAttempts and Policy apply to each job.
	// At, In, UniqueKey and Unique must be zero: the schedule sets them.
	Options EnqueueOptions
	// SkipMissed makes a starting worker wait for the next tick instead of
	// enqueueing the latest one that passed.
	SkipMissed bool
}

// periodic is a registered PeriodicJob.
type periodic struct {
	PeriodicJob
	args json.RawMessage
}

// Periodic registers job on w (before Start). It returns an error matching
// ErrInvalid, naming the field, when job is invalid or a periodic job of
// the same kind and queue is already registered, and ErrStopped after
// Start.
func (w *Worker) Periodic(job PeriodicJob) error {
	raw, err := encodeArgs(job.Args)
	if err != nil {
		return err
	}
	o := job.Options
	switch {
	case job.Schedule == nil:
		return &InputError{Field: "PeriodicJob.Schedule", Reason: "is nil"}
	case !o.At.IsZero() || o.In != 0:
		return &InputError{Field: "PeriodicJob.Options", Reason: "sets At or In; the schedule sets when each job runs"}
	case o.UniqueKey != "" || !o.Unique.isZero():
		return &InputError{Field: "PeriodicJob.Options", Reason: "sets UniqueKey or Unique; each tick's job is unique by kind, queue and tick"}
	}
	if o.Queue == "" {
		job.Options.Queue = DefaultQueue
	}
	// Everything NewJobInsert checks, checked now.
	if _, err := periodicInsert(&periodic{job, raw}, time.Unix(0, 0), time.Unix(0, 0)); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.state != 0 {
		return ErrStopped
	}
	for _, p := range w.periodics {
		if p.Kind == job.Kind && p.Options.Queue == job.Options.Queue {
			return &InputError{Field: "PeriodicJob", Reason: fmt.Sprintf("of kind %q on queue %q is registered twice", job.Kind, job.Options.Queue)}
		}
	}
	w.periodics = append(w.periodics, &periodic{job, raw})
	return nil
}

// periodicStates: a tick's job marks the tick in every state.
var periodicStates = []State{StateAvailable, StateRunning, StateSucceeded, StateDead}

// periodicInsert is the job of p's tick, created at now.
func periodicInsert(p *periodic, tick, now time.Time) (jobstore.JobInsert, error) {
	opts := p.Options
	opts.At = tick
	in, err := NewJobInsert(p.Kind, p.args, opts, now)
	if err != nil {
		return jobstore.JobInsert{}, err
	}
	// The tick is the period (a cron tick does not start a period of fixed
	// length, so ByPeriod does not apply).
	if in.UniqueKey, err = keyText(p.Kind, in.Queue, tick.UTC().Format(time.RFC3339Nano), ""); err != nil {
		return jobstore.JobInsert{}, err
	}
	in.UniqueStates = periodicStates
	return in, in.Validate()
}

// latestTick returns the latest tick of s at or before now (zero if none
// within a year and a day).
func latestTick(s Schedule, now time.Time) time.Time {
	// Find a window (now-d, now] that holds a tick, doubling d from a
	// second, then walk its ticks to the last.
	for d := time.Second; d <= 367*24*time.Hour; d *= 2 {
		t := s.Next(now.Add(-d))
		if t.IsZero() {
			return time.Time{}
		}
		if !t.After(now) {
			for {
				n := s.Next(t)
				if n.IsZero() || n.After(now) {
					return t
				}
				t = n
			}
		}
	}
	return time.Time{}
}

// periodicLoop enqueues the ticks of w's periodic jobs until w stops.
func (w *Worker) periodicLoop() {
	now := w.now()
	next := make([]time.Time, len(w.periodics)) // each job's next tick to enqueue
	for i, p := range w.periodics {
		if t := latestTick(p.Schedule, now); !t.IsZero() && !p.SkipMissed {
			next[i] = t
		} else {
			next[i] = p.Schedule.Next(now)
		}
	}
	timer := clock.Or(w.cfg.Clock).NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-w.stopping:
			return
		case <-timer.C():
		}
		now = w.now()
		var wake time.Time // the earliest next tick, or retry
		earlier := func(t time.Time) {
			if wake.IsZero() || t.Before(wake) {
				wake = t
			}
		}
		for i, p := range w.periodics {
			if next[i].IsZero() {
				continue // the schedule has no more ticks
			}
			if !next[i].After(now) {
				// Due: enqueue the latest tick that passed (not every
				// one missed while this worker was stalled).
				tick := next[i]
				if t := latestTick(p.Schedule, now); t.After(tick) {
					tick = t
				}
				if !w.enqueueTick(p, tick) {
					// next[i] stays due: try again in 1-2 s.
					earlier(now.Add(time.Second + uniform.Duration(w.cfg.Rand, time.Second)))
					continue
				}
				next[i] = p.Schedule.Next(tick)
				w.recordSchedule(p, next[i])
				if next[i].IsZero() {
					continue
				}
			}
			earlier(next[i])
		}
		if wake.IsZero() {
			<-w.stopping // no schedule has a tick left
			return
		}
		timer.Reset(max(wake.Sub(w.now()), 0))
		// The clock may have passed wake while the timer was being set
		// (the timer then counts from the later time): look again now.
		if !w.now().Before(wake) {
			timer.Reset(0)
		}
	}
}

// enqueueTick inserts the job of p's tick, unless another worker (or this
// one, before a restart) did; it reports whether the store answered.
func (w *Worker) enqueueTick(p *periodic, tick time.Time) bool {
	in, err := periodicInsert(p, tick, w.now())
	if err != nil { // checked at registration: cannot happen
		w.log(fmt.Sprintf("periodic job %s", p.Kind), err)
		return true
	}
	ctx, cancel := context.WithTimeout(w.ctx, w.resultTimeout())
	defer cancel()
	var job *Job
	var inserted bool
	if ti, ok := w.store.(jobstore.TickInserter); ok {
		job, inserted, err = ti.JobInsertTick(ctx, in, tick)
	} else {
		job, inserted, err = w.store.JobInsert(ctx, in)
	}
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			w.storeFailed(fmt.Sprintf("enqueue periodic job %s for %s", p.Kind, tick.Format(time.RFC3339)), err)
		}
		return false
	}
	w.storeOK()
	if inserted {
		w.emit(Event{Kind: EventEnqueued, Job: job})
	}
	return true
}

// scheduleWords is s in words: its String method when it has one.
func scheduleWords(s Schedule) string {
	if str, ok := s.(fmt.Stringer); ok {
		return str.String()
	}
	return fmt.Sprintf("%T", s)
}

// recordSchedule writes p's schedule and next tick, best effort: a
// failure is logged, never retried (the next tick writes it again).
func (w *Worker) recordSchedule(p *periodic, next time.Time) {
	sr, ok := w.store.(jobstore.ScheduleRecorder)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(w.ctx, w.resultTimeout())
	defer cancel()
	err := sr.JobScheduleRecord(ctx, jobstore.PeriodicSchedule{Kind: p.Kind, Queue: p.Options.Queue,
		Schedule: scheduleWords(p.Schedule), NextTick: next, SeenAt: w.now()})
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, jobstore.ErrSchemaTooOld) {
		w.log(fmt.Sprintf("record the schedule of periodic job %s", p.Kind), err)
	}
}
