// Package heedasynq runs asynq tasks under a heed retry policy: heed's
// backoff and jitter, time budget and whole-attempt rule, transient-only
// classification, retry budget and circuit breaker, for the tasks an asynq
// server already has. Nothing moves: the tasks stay in Redis and asynqmon
// shows them, with heed's decision and its reason in each failed task's
// last error and its result.
//
// One [Policy] gives the server its RetryDelayFunc and IsFailure and the
// handlers a middleware:
//
//	h, err := heedasynq.New(retry.Policy{Budget: b, Breaker: br, TimeBudget: time.Hour}, redisOpt)
//	srv := asynq.NewServer(redisOpt, asynq.Config{RetryDelayFunc: h.RetryDelay, IsFailure: h.IsFailure})
//	mux := asynq.NewServeMux()
//	mux.Use(h.Middleware)
//
// The middleware runs each attempt through heed's call protocol
// (retry.Call, as a durable call, like heed's own job queue) and turns the
// decision into asynq's terms:
//
//   - success: the task completes;
//   - a transient failure (an error [retry.IsTransient] knows, or one the
//     policy's Retryable accepts, or marked with [retry.Transient]; a
//     timeout; a server's pushback, [retry.After]): asynq retries it after
//     the wait heed decided, which it asks [Policy.RetryDelay] for;
//   - a permanent error (marked with [retry.Permanent], or not transient by
//     the policy's classifier; a server's refusal), or a task out of
//     attempts or of time budget (the next retry's wait plus a whole attempt
//     no longer fits): asynq.SkipRetry, so asynq archives it now;
//   - an open breaker, or a retry the retry budget refuses: the handler does
//     not run and the task is retried when the breaker may admit it or the
//     budget refills, and [Policy.IsFailure] tells asynq it was no failure,
//     so asynq does not count a retry.
//
// # Where asynq cannot follow heed's protocol, and what the adapter does
//
//   - asynq keeps a retry's time in whole seconds (rounded down) and moves
//     due tasks every DelayedTaskCheckInterval (5 s by default). RetryDelay
//     rounds heed's wait up to the next whole second, so that a task never
//     runs before heed said; it may run up to a second plus that interval
//     later.
//   - asynq has no metadata a handler can read back across attempts. The
//     middleware keeps heed's record of a task in its process, and writes it
//     as the task's result (ResultWriter) whenever an attempt fails or is
//     deferred: asynqmon shows it. Given the server's Redis connection, New
//     reads it back for a retried task whose last attempt another process
//     made. asynq does not count a deferral, so a task deferred before its
//     first attempt by another process, or any retried task when New has no
//     Redis connection, starts its time budget at the attempt this process
//     sees first.
//   - A deferral goes through asynq's retry set like a failure: asynq keeps
//     the deferral as the task's last error (with heed's reason), but with
//     IsFailure false it neither counts a retry nor the queue's failure
//     statistics. The handler is not called: an open breaker must run no
//     attempt. asynq hands out every due task, so where heed's own queue
//     leaves a job unclaimed while its breaker is open, here the task is
//     dequeued and deferred: one write per task and cooldown.
//   - asynq archives a permanent failure and an exhausted one alike; the last
//     error and the record say which. asynq's own MaxRetry (25 by default)
//     still archives a task first when it is below the policy's Attempts.
//   - asynq's own deadline (a task's Timeout or Deadline, 30 min by default)
//     fails an attempt without waiting for the middleware: asynq then retries
//     it after RetryDelay's backoff for a transient error. Set asynq's
//     timeout at or above the policy's AttemptTimeout, so that heed's limit
//     is the one that applies. An attempt that ends with
//     context.DeadlineExceeded while asynq's context is alive is a timeout.
//   - A panic in a handler is classified like any error (as heed's job
//     queue does: not transient by default) and returned as an error.
//   - The retry budget and the breaker live in the server's process, as in
//     every heed executor: servers in several processes each have their
//     own. asynq schedules in real time; the policy's Clock times heed's
//     decisions and attempt limits only (tests).
package heedasynq
