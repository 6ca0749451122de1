// Package queue is heed's durable job queue: background work that is
// retried responsibly and, when it gives up, lands in a dead-letter with its
// whole history, where an operator can read why and requeue it.
//
// Most callers want a [Client] to enqueue, a [Worker] with handlers
// registered by [Handle] to run jobs, and a store: sqlitestore (embedded,
// one file) or pgstore (PostgreSQL, many workers on many machines).
//
//	st, _ := sqlitestore.Open(ctx, "heed.db")
//	c := queue.NewClient(st, queue.ClientConfig{})
//	c.Enqueue(ctx, "email", Email{To: "a@example.com"}, queue.EnqueueOptions{})
//
//	w, _ := queue.NewWorker(st, queue.WorkerConfig{})
//	queue.Handle(w, "email", func(ctx context.Context, job *queue.Job, e Email) error { ... })
//	w.Run(ctx)
//
// # Lifecycle
//
// A job is available (from its AvailableAt), then running (leased to one
// worker under a lease token, renewed while its handler runs), then
// succeeded or dead. Every attempt goes through retry's call protocol
// (retry.Call), as in retry.Do: the policy's breaker is asked before it and
// told its outcome, a job's first attempt counts as a request in the
// policy's retry budget, and after it the worker applies the decision:
// done; retry, with the decision's time as the job's AvailableAt; or give
// up, to the dead-letter with the decision's reason ("permanent",
// "attempts", "time_budget", ...). A job is a durable call: while the
// breaker is open or the budget has no retry to spare, it is not run. The
// worker leaves such jobs unclaimed while it knows the refusal would come
// (the breaker open, the budget refusing retries); one claimed all the
// same is deferred, available again at a random instant between when the
// breaker may admit it (or the budget refills) and as long again after,
// the attempt not counted, reason "breaker_open" or "budget"; these never
// send it to the dead-letter. Each attempt and its decision are appended
// to the job's history; a run of deferrals is one entry with a count.
//
// A handler steers with its error: nil succeeds; retry.Permanent(err) gives
// up at once; retry.After(d, err) retries no sooner than d (a durable job
// honours any wait within its time budget); [Snooze](d) runs the job again
// after d without using an attempt; [Decline](d, reason) does too, for a
// worker that may run it, and a drain does not wait for it; anything else is classified as
// retry.Do classifies it: errors marked retry.Transient, network and
// timeout errors and transient database errors are retried, and an error
// that says nothing goes to the dead-letter at once (set
// WorkerConfig.Policy.Retryable to [RetryAll] to retry every error). A
// panic is recovered and recorded with its stack, and is classified like
// an error.
//
// Every job has a time budget (24 h by default, counted from
// the start of its first attempt): when the next attempt, with its delay
// and its whole attempt timeout, would not end within it, the job goes to
// the dead-letter now, even with attempts left.
//
// # Operating the queue
//
// A [Client] also cancels jobs that have not finished ([Client.Cancel]:
// state [StateCancelled]; a running job's handler sees its context
// cancelled with [ErrCancelled]), runs waiting jobs now ([Client.RunNow]),
// deletes finished ones ([Client.Delete]), and pauses and resumes queues
// ([Client.Pause], [Client.Resume]: claims skip a paused queue). Workers
// delete finished jobs past their retention (WorkerConfig.RetainSucceeded,
// 24 h by default; RetainDead, 30 days; RetainCancelled, 7 days), and
// [Worker.Drain] runs a worker until no job is due. Kinds may come from the
// argument type ([JobArgs], [HandleArgs], [Client.EnqueueArgs]), with a
// policy per kind (WorkerConfig.Kinds) and [Middleware] around handlers.
//
// # Crash safety
//
// Every change to a running job names its lease token, so a worker that
// comes back after its lease expired changes nothing ([jobstore.ErrLeaseLost]).
// Workers rescue jobs whose lease expired: the lost attempt is recorded with
// outcome "lost" and counts, so a job that kills its worker every time still
// ends in the dead-letter. Delivery is at least once; handlers should be
// safe to repeat.
//
// # For users
//
// Enqueue with a [Client] ([ClientConfig], [EnqueueOptions], per-job
// [JobPolicy]); run jobs with a [Worker] ([WorkerConfig], [Handle],
// [Snooze], [Decline], [Worker.Drain], [RetryAll], [WorkerConfig.WithDefaults], events
// through [Event] and [LogObserver]); read jobs as [Job] with their
// [State] and history of [Attempt] entries; operate the dead-letter with
// [DeadFilter] and [Stats]. Errors: [ErrNotFound], [ErrInvalid] (an
// [*InputError] names the field), [PanicError], [ErrCancelled],
// [ErrStopped]; a store that cannot open its database returns
// jobstore.ErrSchemaTooNew or jobstore.ErrSchemaTooOld.
//
// # For store implementers
//
// Package queue/jobstore is the other side: the [jobstore.Store] interface
// and its optional companions, the parameters and rows a store is handed,
// the stored words and forms, and the checks stores run on their input.
// [Job], [Attempt], [JobPolicy], [JobFilter], [Stats], [Limit], [State],
// [InputError] and [ItemError] are defined there and named here by alias, so that a store
// needs nothing of this package but [NewJobInsert] for a transactional
// enqueue. queue/storetest is the conformance suite every store passes.
package queue
