// Package heedriver runs River jobs under a heed retry policy: heed's
// backoff and jitter, time budget and whole-attempt rule, transient-only
// classification, retry budget and circuit breaker, for the jobs a River
// client already has. Nothing moves: the jobs stay in River's tables and
// River UI shows them, with heed's decision and its reason in each job's
// metadata (under [MetadataKey]).
//
// One [Policy] is both River's retry policy and a worker middleware:
//
//	h, err := heedriver.New(retry.Policy{Budget: b, Breaker: br, TimeBudget: time.Hour})
//	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
//		RetryPolicy: h,
//		Middleware:  []rivertype.Middleware{h},
//		...
//	})
//
// The middleware runs each attempt through heed's call protocol
// (retry.Call, as a durable call, like heed's own job queue) and turns the
// decision into River's terms:
//
//   - success: the job completes;
//   - a transient failure (an error [retry.IsTransient] knows, or one the
//     policy's Retryable accepts, or marked with [retry.Transient]; a
//     timeout): River records the error and retries at the time heed
//     decided, which River asks [Policy.NextRetry] for;
//   - a permanent error (marked with [retry.Permanent], or not transient
//     by the policy's classifier; a server's refusal): river.JobCancel;
//   - a server's pushback ([retry.After]): river.JobSnooze for the
//     server's wait (or heed's backoff, when longer);
//   - an open breaker, or a retry the retry budget refuses: the worker does
//     not run and the job is snoozed until the breaker may admit it or the
//     budget refills (river.JobSnooze: the attempt is not counted);
//   - out of attempts or of time budget (the next retry's wait plus a whole
//     attempt no longer fits): the job is discarded, River's dead letter.
//
// # Where River cannot follow heed's protocol, and what the adapter does
//
//   - River's retry policy is not shown the error, so it cannot classify or
//     honour a pushback. The middleware decides, and hands the decision to
//     NextRetry in the job row River passes it (River passes the row the
//     middleware saw). A job that failed without the middleware gets heed's
//     backoff for its attempt number, as if its error were transient.
//   - River has no way for a worker to discard a job before its
//     MaxAttempts. For a give-up that is not the job's fault (attempts, time
//     budget) the middleware lowers MaxAttempts of the row River holds in
//     memory to the current attempt, so River discards it; the stored
//     max_attempts is unchanged and the metadata says why. River's own
//     MaxAttempts (25 by default) still ends a job first when it is lower
//     than the policy's Attempts.
//   - A deferral and a pushback are River snoozes: River gives the attempt
//     back (and counts "snoozes" in the metadata), and does not list a
//     pushback's error among the job's errors; heed's record keeps the
//     error, and heed counts a pushback as an attempt (the record's
//     attempt and pushbacks), so heed's Attempts still bounds it.
//   - A deferred job's worker is not called (River asks middleware to call
//     it always): an open breaker must run no attempt. River claims every
//     due job, so where heed's own queue leaves a job unclaimed while its
//     breaker is open, here River claims it and the middleware snoozes it:
//     one write per job and cooldown.
//   - River's own per-attempt timeout (Config.JobTimeout, 1 min by default,
//     or the worker's Timeout) is applied inside the middleware. An attempt
//     that ends with context.DeadlineExceeded while its job's context is
//     alive is a timeout, whichever limit ended it; set River's timeout at
//     or above the policy's AttemptTimeout (or to -1) so that heed's limit
//     is the one that applies.
//   - River runs a retry when its scheduled time has come and River looks:
//     a retry due within River's scheduler interval (5 s) is made available
//     at once and fetched when due; a later one waits for the leader's
//     scheduler, up to one interval late, never early.
//   - The retry budget and the breaker live in the worker's process, as in
//     every heed executor: clients in several processes each have their own.
//   - The time budget counts from the first attempt's start as heed saw it
//     (the record's start; for a job that failed before the middleware was
//     installed, its first error's time). Use one clock for both: the
//     policy's Clock and River's (the database's, or Config.Test.Time).
//
// A panic in a worker is classified like any error (as heed's job queue
// does: not transient by default) and passed on to River, which keeps its
// trace; a panic heed gives up on is discarded rather than cancelled.
package heedriver
