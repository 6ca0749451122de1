package queue

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/heed-go/heed/clock"
	"github.com/heed-go/heed/queue/jobstore"
)

// activity counts a worker's claims and jobs in flight, so that Drain
// knows when the worker is idle. The zero value is ready to use.
type activity struct {
	mu       sync.Mutex
	claims   uint64        // claims started
	claimed  int           // jobs claimed
	inflight int           // claims under way plus jobs running
	idle     chan struct{} // capacity 1; made by NewWorker
}

func (a *activity) claimStart() {
	a.mu.Lock()
	a.claims++
	a.inflight++
	a.mu.Unlock()
}

func (a *activity) claimEnd(jobs int) {
	a.mu.Lock()
	a.claimed += jobs
	a.inflight += jobs - 1
	a.signal()
	a.mu.Unlock()
}

func (a *activity) jobEnd() {
	a.mu.Lock()
	a.inflight--
	a.signal()
	a.mu.Unlock()
}

// signal wakes Drain when nothing is in flight (a.mu held).
func (a *activity) signal() {
	if a.inflight == 0 && a.idle != nil {
		select {
		case a.idle <- struct{}{}:
		default:
		}
	}
}

// snapshot returns the claims started and whether nothing is in flight.
func (a *activity) snapshot() (claims uint64, idle bool, claimed int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.claims, a.inflight == 0, a.claimed
}

// declines remembers the jobs a worker declined (see [Decline]) until it
// runs them or another outcome replaces the decline, so that a drain does
// not wait for them. The zero value is ready to use.
type declines struct {
	mu   sync.Mutex
	jobs map[int64]DeclinedJob
}

// maxDeclines bounds the jobs a worker remembers declining; past it, a
// drain waits for the others as for any due job.
const maxDeclines = 10_000

func (d *declines) set(j DeclinedJob) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.jobs == nil {
		d.jobs = map[int64]DeclinedJob{}
	}
	if _, ok := d.jobs[j.ID]; ok || len(d.jobs) < maxDeclines {
		d.jobs[j.ID] = j
	}
}

func (d *declines) remove(id int64) {
	d.mu.Lock()
	delete(d.jobs, id)
	d.mu.Unlock()
}

func (d *declines) has(id int64) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.jobs[id]
	return ok
}

func (d *declines) len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.jobs)
}

// all returns the jobs declined, by ID.
func (d *declines) all() []DeclinedJob {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]DeclinedJob, 0, len(d.jobs))
	for _, j := range d.jobs {
		out = append(out, j)
	}
	slices.SortFunc(out, func(a, b DeclinedJob) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// DeclinedJob is a job a worker gave back with [Decline], as a drain
// reports it.
type DeclinedJob struct {
	// ID, Queue and Kind are the job's.
	ID     int64
	Queue  string
	Kind   string
	Reason string // the reason given to Decline, as the history keeps it
}

// defaultDrainWithin is how far ahead a drain looks for due jobs by
// default (DrainOptions.Within): a retry with a short backoff is waited
// for, one scheduled further ahead is reported.
const defaultDrainWithin = time.Minute

// DrainOptions configures [Worker.Drain] and [Worker.WaitEmpty]. The
// zero value runs what is due now and within a minute, and
// returns when only jobs this worker will not run are left.
type DrainOptions struct {
	// Within also waits for the jobs of the worker's queues that are due
	// within this long (a retry with a short backoff, a job enqueued with
	// a short delay), checking again as they come due. Zero is
	// one minute; a negative value waits only for jobs due now.
	Within time.Duration
	// WaitScheduled waits for every job of the worker's queues, however
	// far ahead it is scheduled, and for those running on other workers:
	// the wait ends when the queues have no unfinished job at all.
	WaitScheduled bool
}

// DrainResult is what a drain left behind.
type DrainResult struct {
	// Claimed is how many jobs the worker claimed since it started
	// (attempts it started or deferred).
	Claimed int
	// Scheduled is how many jobs of the worker's queues are available but
	// due later (those in Declined not counted).
	Scheduled int
	// Paused lists the worker's queues that are paused and have jobs
	// waiting: a drain does not wait for them.
	Paused []string
	// Elsewhere counts the unfinished jobs of the queues the worker does
	// not serve (those with at least one available, scheduled or running
	// job), sorted by queue: jobs no drain of this worker will run.
	Elsewhere []jobstore.QueueStats
	// Declined lists the jobs of the worker's queues that it gave back
	// with [Decline] and that still wait, by ID: a drain does not wait for
	// them, since this worker will not run them.
	Declined []DeclinedJob
}

// Drain runs w until no job of its queues is due within opts.Within (by
// default one minute) and none it claimed is still running, nor
// any running on another worker whose lease ends by then (it may come
// back: a killed worker's job once its lease expires, or a retry), then
// shuts it down and reports what was left: jobs due later, paused queues,
// jobs it declined, jobs in queues it does not serve. It is Start,
// [Worker.WaitEmpty] and Shutdown: a program (a test, a batch run, a cron
// drain) runs the work there is and goes on. Jobs that become due while
// Drain runs (a release, a snooze, a retry due before it looks again) are
// run too; jobs due later are reported, not waited for, unless opts asks.
// Jobs this worker will not run are not waited for: those of paused
// queues, and those its handlers gave back with [Decline] (a job whose
// kind has no handler goes to the dead-letter at once).
//
// When ctx ends first, Drain shuts down (letting running jobs finish for
// up to ShutdownGrace) and returns ctx.Err() with the result. It returns
// ErrStopped when w was already started.
func (w *Worker) Drain(ctx context.Context, opts DrainOptions) (DrainResult, error) {
	if err := w.Start(ctx); err != nil {
		return DrainResult{}, err
	}
	res, runErr := w.WaitEmpty(ctx, opts)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.cfg.ShutdownGrace)
	defer cancel()
	if err := w.Shutdown(sctx); err != nil && runErr == nil {
		runErr = err
	}
	if errors.Is(runErr, ctx.Err()) {
		// Interrupted: describe what is left now that the worker stopped.
		if r, err := w.drainResult(context.WithoutCancel(ctx)); err == nil {
			res = r
		}
	}
	return res, runErr
}

// within returns how far ahead a drain waits for due jobs.
func (o *DrainOptions) within() time.Duration {
	switch {
	case o.Within == 0:
		return defaultDrainWithin
	case o.Within < 0:
		return 0
	}
	return o.Within
}

// WaitEmpty waits, on a started worker, until no job of its queues that
// it will run is due within opts.Within (with opts.WaitScheduled, until
// they have no such unfinished job) and none it claimed is running, and returns what
// was left, as [Worker.Drain] does, without stopping w. It returns
// ctx.Err() when ctx ends first, and ErrStopped when w is not running.
func (w *Worker) WaitEmpty(ctx context.Context, opts DrainOptions) (DrainResult, error) {
	w.mu.Lock()
	state := w.state
	w.mu.Unlock()
	if state != 1 {
		return DrainResult{}, ErrStopped
	}
	queues := make([]string, 0, len(w.cfg.Queues))
	for q := range w.cfg.Queues {
		queues = append(queues, q)
	}
	slices.Sort(queues)
	timer := clock.Or(w.cfg.Clock).NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return DrainResult{}, ctx.Err()
		case <-w.stopping:
			return DrainResult{}, ErrStopped
		case <-w.active.idle:
		case <-timer.C():
		}
		done, err := w.drained(ctx, queues, opts)
		if err != nil {
			w.storeFailed("drain: look for due jobs", err)
		}
		if done {
			return w.drainResult(ctx)
		}
		timer.Reset(w.jittered(w.cfg.PollInterval))
	}
}

// drained reports whether the worker is idle and its unpaused queues
// have nothing due (nor, with opts.WaitScheduled, anything unfinished).
// A queue with due jobs gets its claimer woken.
func (w *Worker) drained(ctx context.Context, queues []string, opts DrainOptions) (bool, error) {
	claims, idle, _ := w.active.snapshot()
	if !idle {
		return false, nil
	}
	paused, err := w.store.QueuesPaused(ctx)
	if err != nil {
		return false, err
	}
	now := w.now()
	empty := true
	for _, q := range queues {
		if slices.ContainsFunc(paused, func(p jobstore.PausedQueue) bool { return p.Queue == q }) {
			continue
		}
		by := now.Add(opts.within())
		f := JobFilter{State: StateAvailable, Queue: q, AvailableBy: by}
		if opts.WaitScheduled {
			f.AvailableBy = time.Time{}
		}
		due, err := w.queueDue(ctx, f, by, opts.WaitScheduled)
		if err != nil {
			return false, err
		}
		if due {
			empty = false
			select {
			case w.wake[q] <- struct{}{}:
			default:
			}
		}
	}
	// A claim that started meanwhile may have taken what the lists
	// missed: look again after it.
	after, idle, _ := w.active.snapshot()
	return empty && idle && after == claims, nil
}

// queueDue reports whether f's queue has a job w will run that is due by
// the time by (see drained): one available and not declined, or one
// running elsewhere that may come back. Jobs move between the two lists
// while it looks (a rescue makes a killed worker's job available, another
// worker claims one), so it looks at the running ones before and after the
// available ones: a job that moved in between is seen on one side.
func (w *Worker) queueDue(ctx context.Context, f JobFilter, by time.Time, all bool) (bool, error) {
	if due, err := w.runningDue(ctx, f.Queue, by, all); due || err != nil {
		return due, err
	}
	if due, err := w.undeclined(ctx, f); due || err != nil {
		return due, err
	}
	return w.runningDue(ctx, f.Queue, by, all)
}

// undeclined reports whether f lists a job that w has not declined.
func (w *Worker) undeclined(ctx context.Context, f JobFilter) (bool, error) {
	page := 500
	if w.declined.len() == 0 {
		page = 1
	}
	f.Limit = page
	for {
		jobs, err := w.store.JobList(ctx, f)
		if err != nil {
			return false, err
		}
		for _, j := range jobs {
			if !w.declined.has(j.ID) {
				return true, nil
			}
		}
		if len(jobs) < page {
			return false, nil
		}
		f.AfterID = jobs[len(jobs)-1].ID
	}
}

// runningDue reports whether queue q has a job running on another worker
// that may be due again by the time by: one whose lease ends by then (a
// killed worker's job is rescued once its lease has expired, and a retry
// may follow any attempt), or, with all, any running job.
func (w *Worker) runningDue(ctx context.Context, q string, by time.Time, all bool) (bool, error) {
	if all {
		jobs, err := w.store.JobList(ctx, JobFilter{State: StateRunning, Queue: q, Limit: 1})
		return len(jobs) > 0, err
	}
	const page = 500
	f := JobFilter{State: StateRunning, Queue: q, Limit: page}
	for {
		jobs, err := w.store.JobList(ctx, f)
		if err != nil {
			return false, err
		}
		for _, j := range jobs {
			if !j.LeaseUntil.After(by) {
				return true, nil
			}
		}
		if len(jobs) < page {
			return false, nil
		}
		f.AfterID = jobs[len(jobs)-1].ID
	}
}

// drainResult describes what a drain left behind.
func (w *Worker) drainResult(ctx context.Context) (DrainResult, error) {
	_, _, claimed := w.active.snapshot()
	res := DrainResult{Claimed: claimed}
	now := w.now()
	st, err := w.store.Stats(ctx, now)
	if err != nil {
		return res, err
	}
	paused, err := w.store.QueuesPaused(ctx)
	if err != nil {
		return res, err
	}
	for _, qs := range st.Queues {
		if _, ok := w.cfg.Queues[qs.Queue]; !ok {
			if qs.Available+qs.Scheduled+qs.Running > 0 {
				res.Elsewhere = append(res.Elsewhere, qs)
			}
			continue
		}
		res.Scheduled += qs.Scheduled
		if qs.Available > 0 && slices.ContainsFunc(paused, func(p jobstore.PausedQueue) bool { return p.Queue == qs.Queue }) {
			res.Paused = append(res.Paused, qs.Queue)
		}
	}
	if declined := w.declined.all(); len(declined) > 0 {
		ids := make([]int64, len(declined))
		for i, d := range declined {
			ids[i] = d.ID
		}
		waiting, err := w.store.JobList(ctx, JobFilter{IDs: ids, State: StateAvailable})
		if err != nil {
			return res, err
		}
		for _, d := range declined {
			i := slices.IndexFunc(waiting, func(j *Job) bool { return j.ID == d.ID })
			if i < 0 {
				continue
			}
			res.Declined = append(res.Declined, d)
			if waiting[i].AvailableAt.After(now) && res.Scheduled > 0 {
				res.Scheduled-- // reported as declined instead
			}
		}
	}
	return res, nil
}
