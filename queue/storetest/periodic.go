package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/heed-go/heed/clock"
	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
	"github.com/heed-go/heed/retry"
)

// periodicTicks is how many periods RunPeriodic runs.
const periodicTicks = 20

// countingStore counts the JobInsert calls per unique key, to see that
// every worker tried each tick.
type countingStore struct {
	jobstore.Store
	mu    *sync.Mutex
	calls map[string]int
	tried *sync.Cond
}

// JobNotify passes the store's notifications on: with the clock fake, the
// workers' claim loops wake on them, not on polls.
func (c countingStore) JobNotify(ctx context.Context) (<-chan string, error) {
	return c.Store.(jobstore.Notifier).JobNotify(ctx)
}

func (c countingStore) JobInsert(ctx context.Context, in jobstore.JobInsert) (*jobstore.Job, bool, error) {
	j, ok, err := c.Store.JobInsert(ctx, in)
	c.count(in.UniqueKey)
	return j, ok, err
}

// JobInsertTick passes the call on to the store's, when it is a
// jobstore.TickInserter (as the worker would), and to JobInsert otherwise.
func (c countingStore) JobInsertTick(ctx context.Context, in jobstore.JobInsert, tick time.Time) (*jobstore.Job, bool, error) {
	ti, ok := c.Store.(jobstore.TickInserter)
	if !ok {
		return c.JobInsert(ctx, in)
	}
	j, ok, err := ti.JobInsertTick(ctx, in, tick)
	c.count(in.UniqueKey)
	return j, ok, err
}

// JobScheduleRecord and JobSchedules pass the calls on to the store's,
// when it is a jobstore.ScheduleRecorder.
func (c countingStore) JobScheduleRecord(ctx context.Context, ps jobstore.PeriodicSchedule) error {
	if sr, ok := c.Store.(jobstore.ScheduleRecorder); ok {
		return sr.JobScheduleRecord(ctx, ps)
	}
	return nil
}

func (c countingStore) JobSchedules(ctx context.Context) ([]jobstore.PeriodicSchedule, error) {
	if sr, ok := c.Store.(jobstore.ScheduleRecorder); ok {
		return sr.JobSchedules(ctx)
	}
	return nil, nil
}

func (c countingStore) count(key string) {
	c.mu.Lock()
	c.calls[key]++
	c.tried.Broadcast()
	c.mu.Unlock()
}

// FakeClock is the clock RunPeriodic sets: clock/clocktest's Clock is one.
type FakeClock interface {
	clock.Clock
	Set(t time.Time) // moves the clock to t, firing the timers due
}

// RunPeriodic runs one worker per store of stores (stores over one
// database: the same store several times, or stores opened separately, as
// processes would), all with the same periodic job every minute on a fake
// clock (clk, not yet set past 2026-03-04T05:06:30Z), for 20 periods: the
// first tick is the one that passed before the
// workers started (caught up once), then the clock moves a period at a
// time. Each time every worker tries to enqueue the tick, and exactly one
// job per tick is made and run: 20 runs in all.
func RunPeriodic(t *testing.T, clk FakeClock, stores []jobstore.Store) {
	for _, s := range stores {
		if _, ok := s.(jobstore.Notifier); !ok {
			t.Skip("the store is not a jobstore.Notifier (the test's workers wake on notifications)")
		}
	}
	start := time.Date(2026, 3, 4, 5, 6, 30, 0, time.UTC) // 30 s after a tick
	first := start.Truncate(time.Minute)
	clk.Set(start)
	var mu sync.Mutex
	calls := map[string]int{}
	tried := sync.NewCond(&mu)
	ran := make(chan time.Time, 4*periodicTicks)
	workers := make([]*queue.Worker, len(stores))
	for i, s := range stores {
		w, err := queue.NewWorker(countingStore{s, &mu, calls, tried}, queue.WorkerConfig{
			Clock: clk, Queues: map[string]int{"cron": 2}, PollInterval: time.Hour, RescueInterval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		queue.Handle(w, "tick", func(ctx context.Context, job *jobstore.Job, _ struct{}) error {
			ran <- job.AvailableAt
			return nil
		})
		if err := w.Periodic(queue.PeriodicJob{Kind: "tick", Schedule: queue.Every(time.Minute),
			Options: queue.EnqueueOptions{Queue: "cron"}}); err != nil {
			t.Fatal(err)
		}
		workers[i] = w
	}
	for _, w := range workers {
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		for _, w := range workers {
			if err := w.Shutdown(ctx); err != nil {
				t.Errorf("Shutdown: %v", err)
			}
		}
	}()
	key := func(tick time.Time) string {
		return `{"kind":"tick","queue":"cron","period":"` + tick.Format(time.RFC3339Nano) + `"}`
	}
	runs := map[time.Time]int{}
	for i := range periodicTicks {
		tick := first.Add(time.Duration(i) * time.Minute)
		if i > 0 {
			clk.Set(tick)
		}
		// Every worker tries the tick...
		mu.Lock()
		for calls[key(tick)] < len(workers) {
			tried.Wait()
		}
		mu.Unlock()
		// ... and one job runs for it. (A worker's claim loop waits on
		// the fake clock between polls; the store's notification of the
		// insert wakes it.)
		select {
		case at := <-ran:
			runs[at]++
		case <-time.After(time.Minute):
			t.Fatalf("tick %d (%v): no job ran", i, tick)
		}
	}
	for _, w := range workers {
		if err := w.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	}
	workers = nil
	close(ran)
	for at := range ran {
		runs[at]++
	}
	if len(runs) != periodicTicks {
		t.Errorf("%d ticks ran, want %d: %v", len(runs), periodicTicks, runs)
	}
	for at, n := range runs {
		if n != 1 {
			t.Errorf("tick %v ran %d times", at, n)
		}
	}
	jobs, err := stores[0].JobList(ctx, jobstore.JobFilter{Kind: "tick"})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != periodicTicks {
		t.Errorf("%d jobs stored, want %d", len(jobs), periodicTicks)
	}
	for _, j := range jobs {
		if j.State != jobstore.StateSucceeded || j.Attempt != 1 || j.UniqueKey != key(j.AvailableAt) {
			t.Errorf("job %d: %s after %d attempts, key %s", j.ID, j.State, j.Attempt, j.UniqueKey)
		}
	}
}

// periodicKey is the unique key of the job of a tick of the periodic job
// "tick" on queue "cron".
func periodicKey(tick time.Time) string {
	return `{"kind":"tick","queue":"cron","period":"` + tick.UTC().Format(time.RFC3339Nano) + `"}`
}

// tickInsert is the job of the periodic job "tick" on queue "cron" for
// tick, as a worker makes it.
func tickInsert(t *testing.T, tick time.Time) jobstore.JobInsert {
	t.Helper()
	in, err := queue.NewJobInsert("tick", nil, queue.EnqueueOptions{Queue: "cron", At: tick}, tick)
	if err != nil {
		t.Fatal(err)
	}
	in.UniqueKey = periodicKey(tick)
	in.UniqueStates = []jobstore.State{jobstore.StateAvailable, jobstore.StateRunning, jobstore.StateSucceeded, jobstore.StateDead}
	return in
}

// testTickMemory: a store that implements jobstore.TickInserter enqueues each
// tick of a periodic job once, and never again once its job is deleted
// (by retention), nor any earlier tick; other kinds and queues keep their
// own record.
func testTickMemory(t *testing.T, s jobstore.Store) {
	ti, ok := s.(jobstore.TickInserter)
	if !ok {
		t.Skip("the store is not a jobstore.TickInserter")
	}
	tick := t0.Truncate(time.Hour)
	insert := func(what string, in jobstore.JobInsert, at time.Time, want bool) *jobstore.Job {
		t.Helper()
		j, inserted, err := ti.JobInsertTick(ctx, in, at)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if inserted != want || (inserted && j == nil) {
			t.Fatalf("%s: inserted %v (job %v), want %v", what, inserted, j, want)
		}
		return j
	}
	j := insert("the first tick", tickInsert(t, tick), tick, true)
	if j.UniqueKey != periodicKey(tick) || !j.AvailableAt.Equal(tick) {
		t.Errorf("tick job: key %s, available at %v", j.UniqueKey, j.AvailableAt)
	}
	insert("the first tick again", tickInsert(t, tick), tick, false)

	// Run it, then delete it as retention does.
	c := claimOne(t, s, "cron", tick.Add(time.Second))
	if err := s.JobTransition(ctx, jobstore.Transition{ID: c.ID, LeaseToken: c.LeaseToken, State: jobstore.StateSucceeded,
		Attempt: c.Attempt, FinishedAt: tick.Add(2 * time.Second), Entry: entry(1, retry.OutcomeSuccess.Key(), "succeed", "", tick)}); err != nil {
		t.Fatalf("JobTransition(succeeded): %v", err)
	}
	if n, err := s.JobPrune(ctx, jobstore.PruneParams{State: jobstore.StateSucceeded, Before: tick.Add(48 * time.Hour), Limit: jobstore.RetentionBatch}); err != nil || n != 1 {
		t.Fatalf("JobPrune = %d, %v; want 1 job deleted", n, err)
	}
	if j, err := s.JobGet(ctx, j.ID); err == nil {
		t.Fatalf("job %d still stored after JobPrune: %s", j.ID, j.State)
	}

	insert("the first tick after its job was deleted", tickInsert(t, tick), tick, false)
	insert("an earlier tick", tickInsert(t, tick.Add(-time.Hour)), tick.Add(-time.Hour), false)
	other := tickInsert(t, tick)
	other.Queue = "other"
	insert("the tick on another queue", other, tick, true)
	next := insert("the next tick", tickInsert(t, tick.Add(time.Hour)), tick.Add(time.Hour), true)
	if !next.AvailableAt.Equal(tick.Add(time.Hour)) {
		t.Errorf("next tick's job available at %v", next.AvailableAt)
	}
	jobs, err := s.JobList(ctx, jobstore.JobFilter{Kind: "tick"})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 2 {
		t.Errorf("%d tick jobs stored, want 2 (the next tick, the other queue's)", len(jobs))
	}
	if _, _, err := ti.JobInsertTick(ctx, jobstore.JobInsert{}, tick); !errors.Is(err, jobstore.ErrInvalid) {
		t.Errorf("JobInsertTick of an invalid job: %v, want ErrInvalid", err)
	}
}

// RunPeriodicAfterRetention runs a worker with an hourly periodic job on
// store s over a fake clock (clk, not yet set past 2026-03-04T05:36:00Z):
// the worker enqueues and runs the tick that passed, stops; the job is
// deleted as retention deletes it (JobPrune); a worker started again in
// the same period must not run that tick again (nothing is stored for it),
// and runs the next tick once. It skips stores that are not
// jobstore.TickInserter (for them only the job marks its tick).
func RunPeriodicAfterRetention(t *testing.T, clk FakeClock, s jobstore.Store) {
	if _, ok := s.(jobstore.TickInserter); !ok {
		t.Skip("the store is not a jobstore.TickInserter")
	}
	if _, ok := s.(jobstore.Notifier); !ok {
		t.Skip("the store is not a jobstore.Notifier (the test's workers wake on notifications)")
	}
	first := time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC)
	clk.Set(first.Add(30 * time.Minute))
	var mu sync.Mutex
	calls := map[string]int{}
	tried := sync.NewCond(&mu)
	ran := make(chan time.Time, 4)
	start := func() *queue.Worker {
		w, err := queue.NewWorker(countingStore{s, &mu, calls, tried}, queue.WorkerConfig{
			Clock: clk, Queues: map[string]int{"cron": 2}, PollInterval: time.Hour, RescueInterval: time.Hour,
			RetentionInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		queue.Handle(w, "tick", func(ctx context.Context, job *jobstore.Job, _ struct{}) error {
			ran <- job.AvailableAt
			return nil
		})
		if err := w.Periodic(queue.PeriodicJob{Kind: "tick", Schedule: queue.Every(time.Hour),
			Options: queue.EnqueueOptions{Queue: "cron"}}); err != nil {
			t.Fatal(err)
		}
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		return w
	}
	waitTried := func(tick time.Time, n int) {
		mu.Lock()
		defer mu.Unlock()
		for calls[periodicKey(tick)] < n {
			tried.Wait()
		}
	}
	waitRun := func(what string) time.Time {
		select {
		case at := <-ran:
			return at
		case <-time.After(time.Minute):
			t.Fatalf("%s: no job ran", what)
			return time.Time{}
		}
	}

	w := start()
	if at := waitRun("the first worker"); !at.Equal(first) {
		t.Fatalf("the first worker ran the tick of %v, want %v", at, first)
	}
	if err := w.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	// The worker recorded the schedule it runs, for dashboards.
	if sr, ok := s.(jobstore.ScheduleRecorder); ok {
		got, err := sr.JobSchedules(ctx)
		if err != nil || len(got) != 1 || got[0].Schedule != "every 1h0m0s" || !got[0].LastTick.Equal(first) ||
			!got[0].NextTick.Equal(first.Add(time.Hour)) || !got[0].SeenAt.Equal(first.Add(30*time.Minute)) {
			t.Errorf("JobSchedules = %+v, %v; want every 1h0m0s, last tick %v, next %v, seen %v", got, err, first, first.Add(time.Hour), first.Add(30*time.Minute))
		}
	}
	if n, err := s.JobPrune(ctx, jobstore.PruneParams{State: jobstore.StateSucceeded, Before: first.Add(48 * time.Hour), Limit: jobstore.RetentionBatch}); err != nil || n != 1 {
		t.Fatalf("JobPrune = %d, %v; want the tick's job deleted", n, err)
	}

	clk.Set(first.Add(40 * time.Minute)) // restarted within the period
	w = start()
	defer func() {
		if w != nil {
			w.Shutdown(ctx)
		}
	}()
	waitTried(first, 2) // the restarted worker tried the tick...
	if jobs, err := s.JobList(ctx, jobstore.JobFilter{Kind: "tick"}); err != nil || len(jobs) != 0 {
		t.Fatalf("after the restart: %d tick jobs stored (%v), want none: the tick whose job was deleted ran again", len(jobs), err)
	}
	next := first.Add(time.Hour)
	clk.Set(next)
	if at := waitRun("the next tick"); !at.Equal(next) {
		t.Errorf("the restarted worker ran the tick of %v, want %v", at, next)
	}
	if err := w.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	w = nil
	close(ran)
	for at := range ran {
		t.Errorf("the tick of %v ran again", at)
	}
}

// testScheduleRecord: a store that implements jobstore.ScheduleRecorder
// keeps a ticked periodic job's schedule, next tick and when a worker saw
// it, and lists every periodic job with its latest tick, the schedule
// empty where none was recorded.
func testScheduleRecord(t *testing.T, s jobstore.Store) {
	sr, ok := s.(jobstore.ScheduleRecorder)
	if !ok {
		t.Skip("the store is not a jobstore.ScheduleRecorder")
	}
	ti := s.(jobstore.TickInserter)
	tick := t0.Truncate(time.Hour)
	// Not ticked yet: nothing to record.
	rec := jobstore.PeriodicSchedule{Kind: "tick", Queue: "cron", Schedule: "every 1h0m0s", NextTick: tick.Add(time.Hour), SeenAt: tick.Add(time.Second)}
	if err := sr.JobScheduleRecord(ctx, rec); err != nil {
		t.Fatalf("JobScheduleRecord before a tick: %v", err)
	}
	if got, err := sr.JobSchedules(ctx); err != nil || len(got) != 0 {
		t.Fatalf("JobSchedules before a tick = %+v, %v", got, err)
	}
	if _, _, err := ti.JobInsertTick(ctx, tickInsert(t, tick), tick); err != nil {
		t.Fatal(err)
	}
	other, err := queue.NewJobInsert("report", nil, queue.EnqueueOptions{Queue: "cron", At: tick}, tick)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := ti.JobInsertTick(ctx, other, tick); err != nil { // ticked by a worker one release behind
		t.Fatal(err)
	}
	if err := sr.JobScheduleRecord(ctx, rec); err != nil {
		t.Fatalf("JobScheduleRecord: %v", err)
	}
	got, err := sr.JobSchedules(ctx)
	if err != nil || len(got) != 2 {
		t.Fatalf("JobSchedules = %+v, %v; want 2", got, err)
	}
	if g := got[0]; g.Kind != "report" || g.Schedule != "" || !g.LastTick.Equal(tick) || !g.NextTick.IsZero() || !g.SeenAt.IsZero() {
		t.Errorf("JobSchedules[0] = %+v, want report with its tick only", g)
	}
	if g := got[1]; g.Kind != "tick" || g.Queue != "cron" || g.Schedule != rec.Schedule || !g.LastTick.Equal(tick) ||
		!g.NextTick.Equal(rec.NextTick) || !g.SeenAt.Equal(rec.SeenAt) {
		t.Errorf("JobSchedules[1] = %+v, want %+v with LastTick %v", g, rec, tick)
	}
}
