package sqlitestore_test

// queue's examples, over a SQLite store in memory. They live here, not in
// queue, because queue belongs to heed's core module, which requires no
// third-party module (not even for tests), and a store needs a driver.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
	"github.com/heed-go/heed/retry"
	"github.com/heed-go/heed/sqlitestore"
)

type Greeting struct {
	Name string `json:"name"`
}

// A job that fails twice with an error marked transient is retried at the
// times retry.Decide chooses, and succeeds on its third attempt. (An error
// that says nothing of itself would go to the dead-letter at once, as it
// does in retry.Do: mark it, or set Policy.Retryable to queue.RetryAll.)
// Its history records every attempt and decision.
func Example_queue() {
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, ":memory:") // a file path in real use
	if err != nil {
		panic(err)
	}
	defer st.Close()

	done := make(chan struct{})
	w, err := queue.NewWorker(st, queue.WorkerConfig{
		// Millisecond delays for the example; the job defaults start at 2 s.
		Policy:       retry.Policy{Backoff: backoff.Schedule{Base: time.Millisecond, Cap: 10 * time.Millisecond}},
		PollInterval: 10 * time.Millisecond,
		Observe: func(ctx context.Context, e queue.Event) {
			if e.Kind == queue.EventSucceeded {
				close(done)
			}
		},
	})
	if err != nil {
		panic(err)
	}
	queue.Handle(w, "greet", func(ctx context.Context, job *queue.Job, g Greeting) error {
		if job.Attempt < 3 {
			fmt.Println("attempt", job.Attempt, "fails")
			return retry.Transient(errors.New("mail server busy"))
		}
		fmt.Println("attempt", job.Attempt, "says hello,", g.Name)
		return nil
	})

	c := queue.NewClient(st, queue.ClientConfig{})
	job, _, err := c.Enqueue(ctx, "greet", Greeting{Name: "Ada"}, queue.EnqueueOptions{})
	if err != nil {
		panic(err)
	}
	if err := w.Start(ctx); err != nil {
		panic(err)
	}
	<-done
	if err := w.Shutdown(ctx); err != nil {
		panic(err)
	}
	job, _ = c.Job(ctx, job.ID)
	fmt.Println(job.State, "after", job.Attempt, "attempts")
	for _, e := range job.History {
		fmt.Printf("  attempt %d: %s, %s (%s)\n", e.Attempt, e.Outcome, e.Action, e.Reason)
	}
	// Output:
	// attempt 1 fails
	// attempt 2 fails
	// attempt 3 says hello, Ada
	// succeeded after 3 attempts
	//   attempt 1: transient, retry (transient)
	//   attempt 2: transient, retry (transient)
	//   attempt 3: success, done (success)
}

// A permanent failure goes to the dead-letter after one attempt, with its
// history; once the cause is fixed, an operator requeues it.
func Example_deadLetter() {
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, ":memory:")
	if err != nil {
		panic(err)
	}
	defer st.Close()

	dead := make(chan struct{})
	w, _ := queue.NewWorker(st, queue.WorkerConfig{
		PollInterval: 10 * time.Millisecond,
		Observe: func(ctx context.Context, e queue.Event) {
			if e.Kind == queue.EventDead {
				close(dead)
			}
		},
	})
	queue.Handle(w, "welcome", func(ctx context.Context, job *queue.Job, g Greeting) error {
		return retry.Permanent(fmt.Errorf("no user named %q", g.Name))
	})
	c := queue.NewClient(st, queue.ClientConfig{})
	if _, _, err := c.Enqueue(ctx, "welcome", Greeting{Name: "Bob"}, queue.EnqueueOptions{}); err != nil {
		panic(err)
	}
	w.Start(ctx)
	<-dead
	w.Shutdown(ctx)

	jobs, _ := c.Dead(ctx, queue.DeadFilter{Kind: "welcome"})
	for _, j := range jobs {
		fmt.Printf("job %d (%s) dead: %s\n", j.ID, j.Kind, j.DeadReason)
		for _, e := range j.History {
			fmt.Println(" ", e)
		}
	}
	st2, _ := c.Stats(ctx)
	fmt.Println("dead-letter size:", st2.Dead)

	n, _ := c.Requeue(ctx, queue.DeadFilter{Kind: "welcome"})
	j, _ := c.Job(ctx, jobs[0].ID)
	fmt.Println("requeued:", n, "state:", j.State, "attempts:", j.Attempt, "history entries:", len(j.History))
	// Output:
	// job 1 (welcome) dead: permanent
	//   attempt 1: permanent: no user named "Bob"; give up (permanent)
	// dead-letter size: 1
	// requeued: 1 state: available attempts: 0 history entries: 2
}

// Enqueue options: a delay, a priority, per-job overrides and a unique key
// that makes a second enqueue return the first job.
func Example_enqueue() {
	ctx := context.Background()
	st, _ := sqlitestore.Open(ctx, ":memory:")
	defer st.Close()
	c := queue.NewClient(st, queue.ClientConfig{})

	opts := queue.EnqueueOptions{
		Queue:       "reports",
		In:          time.Hour,
		Priority:    -1, // before priority 0 jobs
		MaxAttempts: 3,
		Policy:      queue.JobPolicy{TimeBudget: 2 * time.Hour},
		UniqueKey:   "report:2026-05",
	}
	a, inserted, _ := c.Enqueue(ctx, "report", map[string]string{"month": "2026-05"}, opts)
	fmt.Println(a.ID, inserted, a.Queue, string(a.Args))
	b, inserted, _ := c.Enqueue(ctx, "report", map[string]string{"month": "2026-05"}, opts)
	fmt.Println(b.ID, inserted)

	_, _, err := c.Enqueue(ctx, "report", []byte(`{"month":`), queue.EnqueueOptions{})
	fmt.Println(err)
	// Output:
	// 1 true reports {"month":"2026-05"}
	// 1 false
	// queue: args is not valid JSON: "{\"month\":"
}

// Succeeded jobs are kept (with their history) until workers delete them
// (WorkerConfig.RetainSucceeded, a day by default) or a program does:
// Client.Delete with State succeeded and FinishedBefore deletes those that
// finished before a time, and nothing else.
func Example_deleteSucceeded() {
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, ":memory:")
	if err != nil {
		panic(err)
	}
	defer st.Close()

	done := make(chan struct{})
	w, _ := queue.NewWorker(st, queue.WorkerConfig{
		PollInterval: 10 * time.Millisecond,
		Observe: func(ctx context.Context, e queue.Event) {
			if e.Kind == queue.EventSucceeded {
				close(done)
			}
		},
	})
	queue.Handle(w, "welcome", func(ctx context.Context, job *queue.Job, g Greeting) error { return nil })
	c := queue.NewClient(st, queue.ClientConfig{})
	if _, _, err := c.Enqueue(ctx, "welcome", Greeting{Name: "Ada"}, queue.EnqueueOptions{}); err != nil {
		panic(err)
	}
	w.Start(ctx)
	<-done
	w.Shutdown(ctx)

	dayOld := queue.JobFilter{State: queue.StateSucceeded, FinishedBefore: time.Now().Add(-24 * time.Hour)}
	n, _ := c.Delete(ctx, dayOld)
	fmt.Println("deleted, a day old:", n)
	n, _ = c.Delete(ctx, queue.JobFilter{State: queue.StateSucceeded, FinishedBefore: time.Now()})
	fmt.Println("deleted, finished before now:", n)
	_, err = c.Delete(ctx, queue.JobFilter{State: queue.StateRunning})
	fmt.Println(err)
	// Output:
	// deleted, a day old: 0
	// deleted, finished before now: 1
	// queue: JobFilter.State is running; delete takes jobs that are [succeeded dead cancelled]
}

// An operator cancels a job enqueued by mistake, makes a scheduled one run
// now, and deletes what has finished. Each call takes a JobFilter (IDs,
// kind, queue, ...) and returns how many jobs it changed.
func Example_cancel() {
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, ":memory:")
	if err != nil {
		panic(err)
	}
	defer st.Close()
	c := queue.NewClient(st, queue.ClientConfig{Operator: "ada"})

	oops, _, _ := c.Enqueue(ctx, "email", Greeting{Name: "everyone"}, queue.EnqueueOptions{})
	report, _, _ := c.Enqueue(ctx, "report", nil, queue.EnqueueOptions{In: time.Hour})

	n, _ := c.Cancel(ctx, queue.JobFilter{IDs: []int64{oops.ID}})
	fmt.Println("cancelled:", n)
	n, _ = c.RunNow(ctx, queue.JobFilter{Kind: "report"})
	fmt.Println("run now:", n)
	n, _ = c.Delete(ctx, queue.JobFilter{State: queue.StateCancelled})
	fmt.Println("deleted:", n)

	job, _ := c.Job(ctx, report.ID)
	fmt.Println(job.State, job.History[0])
	_, err = c.Delete(ctx, queue.JobFilter{State: queue.StateRunning})
	fmt.Println(err)
	// Output:
	// cancelled: 1
	// run now: 1
	// deleted: 1
	// available run now by ada
	// queue: JobFilter.State is running; delete takes jobs that are [succeeded dead cancelled]
}

// EmailArgs is a typed kind: its Kind method names it, so the enqueue
// and the handler cannot disagree.
type EmailArgs struct {
	To string `json:"to"`
}

// Kind names the kind of EmailArgs jobs.
func (EmailArgs) Kind() string { return "email" }

// Typed kinds, a per-kind policy and a middleware; Drain runs the worker
// until no job is due, and reports what it left.
func Example_handleArgs() {
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, ":memory:")
	if err != nil {
		panic(err)
	}
	defer st.Close()

	w, err := queue.NewWorker(st, queue.WorkerConfig{
		Kinds: map[string]queue.KindPolicy{"email": {MaxAttempts: 5}},
		Middleware: []queue.Middleware{func(next queue.HandlerFunc) queue.HandlerFunc {
			return func(ctx context.Context, job *queue.Job) error {
				fmt.Println("start", job.Kind, job.ID)
				return next(ctx, job)
			}
		}},
	})
	if err != nil {
		panic(err)
	}
	queue.HandleArgs(w, func(ctx context.Context, job *queue.Job, a EmailArgs) error {
		fmt.Println("mail to", a.To)
		return nil
	})

	c := queue.NewClient(st, queue.ClientConfig{})
	c.EnqueueArgs(ctx, EmailArgs{To: "ada@example.com"}, queue.EnqueueOptions{})
	c.EnqueueArgs(ctx, EmailArgs{To: "grace@example.com"}, queue.EnqueueOptions{In: time.Hour})
	c.Enqueue(ctx, "emial", nil, queue.EnqueueOptions{}) // a typo: no handler

	res, err := w.Drain(ctx, queue.DrainOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Printf("claimed %d, scheduled %d\n", res.Claimed, res.Scheduled)
	dead, _ := c.Dead(ctx, queue.DeadFilter{})
	fmt.Println(dead[0].Kind, dead[0].DeadReason)
	// Output:
	// start email 1
	// mail to ada@example.com
	// claimed 2, scheduled 1
	// emial unknown_kind
}

// A database migrated by a newer heed is refused with an error naming both
// versions.
func Example_schemaTooNewError() {
	err := error(&jobstore.SchemaTooNewError{Store: "pgstore", Database: 7, Binary: 3})
	fmt.Println(err)
	fmt.Println(errors.Is(err, jobstore.ErrSchemaTooNew))
	// Output:
	// pgstore: database schema version 7 is newer than this binary knows (version 3): upgrade heed
	// true
}

// A worker that lacks what a kind needs gives its jobs back with Decline,
// for a worker that has it: the attempt is not counted, and a drain
// reports the job instead of waiting for it.
func Example_decline() {
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, ":memory:")
	if err != nil {
		panic(err)
	}
	defer st.Close()

	w, err := queue.NewWorker(st, queue.WorkerConfig{ID: "small-box"})
	if err != nil {
		panic(err)
	}
	queue.Handle(w, "render", func(ctx context.Context, job *queue.Job, _ struct{}) error {
		return queue.Decline(time.Minute, errors.New("no GPU on this worker"))
	})
	c := queue.NewClient(st, queue.ClientConfig{})
	c.Enqueue(ctx, "render", nil, queue.EnqueueOptions{})

	res, err := w.Drain(ctx, queue.DrainOptions{})
	if err != nil {
		panic(err)
	}
	for _, d := range res.Declined {
		fmt.Printf("%s job %d not run: %s\n", d.Kind, d.ID, d.Reason)
	}
	j, _ := c.Job(ctx, 1)
	fmt.Println(j.State, "attempts:", j.Attempt)
	// Output:
	// render job 1 not run: no GPU on this worker
	// available attempts: 0
}

// A queue whose jobs call a rate-limited API gets a global limit: at most
// 10 of its jobs run at once and at most 50 start a second, across every
// worker of every process that shares the store. The store enforces it
// when workers claim; jobs held back wait as they are.
func Example_setLimit() {
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, ":memory:") // a file path or pgstore in real use
	if err != nil {
		panic(err)
	}
	defer st.Close()
	c := queue.NewClient(st, queue.ClientConfig{})
	if err := c.SetLimit(ctx, "geocode", queue.Limit{Concurrency: 10, Rate: 50}); err != nil {
		panic(err)
	}
	limits, err := c.Limits(ctx)
	if err != nil {
		panic(err)
	}
	for _, l := range limits {
		fmt.Printf("%s: %v\n", l.Queue, l.Limit)
	}
	// Output:
	// geocode: at most 10 running, 50 starts per 1s
}

// Three jobs in one transaction; the third's key is held by the first, so
// it returns that job.
func Example_enqueueMany() {
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, ":memory:")
	if err != nil {
		panic(err)
	}
	defer st.Close()
	c := queue.NewClient(st, queue.ClientConfig{})
	res, err := c.EnqueueMany(ctx, []queue.EnqueueItem{
		{Kind: "email", Args: Greeting{Name: "Ada"}, Options: queue.EnqueueOptions{UniqueKey: "welcome-ada"}},
		{Kind: "email", Args: Greeting{Name: "Grace"}},
		{Kind: "email", Args: Greeting{Name: "Ada"}, Options: queue.EnqueueOptions{UniqueKey: "welcome-ada"}},
	})
	if err != nil {
		panic(err)
	}
	for _, r := range res {
		fmt.Println("job", r.Job.ID, string(r.Job.Args), "inserted:", r.Inserted)
	}
	_, err = c.EnqueueMany(ctx, []queue.EnqueueItem{{Kind: "email"}, {Kind: ""}})
	fmt.Println(err)
	// Output:
	// job 1 {"name":"Ada"} inserted: true
	// job 2 {"name":"Grace"} inserted: true
	// job 1 {"name":"Ada"} inserted: false
	// queue: item 1: kind is empty
}
