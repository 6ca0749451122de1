package queue

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/heed-go/heed/internal/uniform"
	"github.com/heed-go/heed/queue/jobstore"
	"github.com/heed-go/heed/retry"
)

// Snooze returns an error that, returned by a handler, puts the job back to
// run again after d without using an attempt: for work that is not ready
// yet (a rate limit of your own, a resource still being built). A negative
// d counts as 0. The snooze is recorded in the history. A snooze that would
// end after the job's time budget sends the job to the dead-letter with
// reason "time_budget".
func Snooze(d time.Duration) error {
	return &snoozeError{d: max(d, 0)}
}

// Decline returns an error that, returned by a handler, gives the job back
// for another worker, one that may run it (this one lacks a permission, a
// credential, a tool): as [Snooze](d), the job runs again after d without
// using an attempt, and reason is kept in its history. A drain of this
// worker ([Worker.Drain], [Worker.WaitEmpty]) does not wait for a job it
// declined: it reports it in [DrainResult].Declined. A nil reason reads
// "declined".
func Decline(d time.Duration, reason error) error {
	if reason == nil {
		reason = errors.New("declined")
	}
	return &snoozeError{d: max(d, 0), declined: reason}
}

type snoozeError struct {
	d        time.Duration
	declined error // set by Decline
}

// Error says how long the job snoozes, and why a declined job was.
func (e *snoozeError) Error() string {
	if e.declined != nil {
		return "queue: declined (" + e.declined.Error() + "); available again in " + e.d.String()
	}
	return "queue: snooze " + e.d.String()
}

// Unwrap returns the reason a job was declined.
func (e *snoozeError) Unwrap() error { return e.declined }

// PanicError is the error a handler's panic becomes. It is classified like
// any other error (see [WorkerConfig]'s Policy), and its stack is kept in
// the job's history.
type PanicError struct {
	Value any    // the value passed to panic
	Stack string // the goroutine's stack at the panic
}

// Error reads like "queue: handler panicked: runtime error: ...".
func (e *PanicError) Error() string { return fmt.Sprintf("queue: handler panicked: %v", e.Value) }

// Unwrap returns the panic value when it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// errLeaseExpired is the error recorded for an attempt whose worker lost its
// lease (it crashed, hung, or lost the database for longer than the lease).
// It is transient: the attempt counts, and the job is retried if its policy
// allows.
var errLeaseExpired = errors.New("queue: lease expired before the attempt ended (worker lost)")

// result is what running a handler once produced.
type result struct {
	err      error
	stack    string // set when the handler panicked
	timedOut bool   // the attempt ran out of its own timeout
	started  time.Time
	worker   string
}

// call returns the call protocol's state for the next attempt of job, which
// the store has claimed (job.Attempt is that attempt's number), resumed from
// its history: a durable call, so that the breaker and the retry budget
// defer the job instead of ending it. p is the job's effective policy; a
// non-nil r replaces its jitter source (in the call's copy).
func call(p *retry.Policy, job *Job, r rand.Source) retry.Call {
	h := retry.History{Attempts: max(job.Attempt-1, 0), Start: job.StartedAt}
	for i := len(job.History) - 1; i >= 0; i-- {
		if e := job.History[i]; e.Action == retry.Retry.Key() {
			h.LastDelay = e.Delay
			break
		}
		if job.History[i].Outcome == jobstore.OutcomeRequeued {
			break
		}
	}
	c := retry.Call{Policy: *p, History: h, Durable: true}
	if r != nil {
		c.Policy.Rand = r
	}
	return c
}

// budgetEnd returns when p's time budget for job ends (zero for none).
func budgetEnd(p *retry.Policy, job *Job) time.Time {
	if p.TimeBudget <= 0 || job.StartedAt.IsZero() {
		return time.Time{}
	}
	return job.StartedAt.Add(p.TimeBudget)
}

// decide turns the result of one attempt of job into the transition to
// store and the decision behind it, through the call protocol. It is pure:
// time and randomness come in. p is the job's effective policy.
func decide(p *retry.Policy, job *Job, res result, now time.Time, r rand.Source) (jobstore.Transition, retry.Decision) {
	c := call(p, job, r)
	return settle(&c, job, res, now)
}

// settle is decide for the call c that admitted job's attempt.
func settle(c *retry.Call, job *Job, res result, now time.Time) (jobstore.Transition, retry.Decision) {
	e := Attempt{Attempt: job.Attempt, Worker: res.worker, StartedAt: res.started, FinishedAt: now, Panic: panicText(res.stack)}
	if res.err != nil {
		e.Error = errorText(res.err)
	}
	t := jobstore.Transition{ID: job.ID, LeaseToken: job.LeaseToken, Attempt: job.Attempt, Now: now}

	if se, ok := errors.AsType[*snoozeError](res.err); ok {
		// Not a failure: the handler's own choice. The breaker learns
		// nothing and the attempt is given back.
		c.Abandon(now)
		at := now.Add(se.d)
		e.Outcome, e.Action, e.Delay = jobstore.OutcomeSnoozed, jobstore.ActionSnooze, se.d
		d := retry.Decision{Action: retry.Retry, Attempt: job.Attempt, Err: res.err, Delay: se.d, At: at}
		if end := budgetEnd(&c.Policy, job); !end.IsZero() && at.After(end) {
			d.Action, d.Reason, d.At = retry.GiveUp, retry.ReasonTimeBudget, now
			e.Action, e.Reason = retry.GiveUp.Key(), d.Reason.Key()
			t.State, t.FinishedAt, t.DeadReason = StateDead, now, d.Reason.Key()
		} else {
			t.State, t.AvailableAt, t.Attempt = StateAvailable, at, max(job.Attempt-1, 0)
		}
		t.Entry = e
		return t, d
	}

	d := c.End(now, retry.Result{Err: res.err, TimedOut: res.timedOut})
	e.Outcome, e.Action, e.Reason = d.Outcome.Key(), d.Action.Key(), d.Reason.Key()
	switch d.Action {
	case retry.Done:
		t.State, t.FinishedAt = StateSucceeded, now
	case retry.Retry:
		e.Delay = d.Delay
		t.State, t.AvailableAt = StateAvailable, d.At
	default:
		t.State, t.FinishedAt, t.DeadReason = StateDead, now, d.Reason.Key()
	}
	t.Entry = e
	return t, d
}

// decideLost decides about a running job whose lease expired: the lost
// attempt counts, is recorded with outcome "lost", and the job is retried or
// given up as its policy says.
func decideLost(p *retry.Policy, job *Job, now time.Time, r rand.Source) (jobstore.Transition, retry.Decision) {
	t, d := decide(p, job, result{err: retry.Transient(errLeaseExpired), started: job.AttemptedAt, worker: job.Worker}, now, r)
	t.Entry.Outcome = jobstore.OutcomeLost
	return t, d
}

// refused records an attempt of job that the call protocol did not admit
// (decision d): deferred by the breaker or the retry budget, or given up
// because the time budget ended before it could start (dead, outcome
// "expired"). It returns the transition and the decision as applied.
//
// A deferred job is available again at a time drawn uniformly (from r)
// between d.At, when the breaker or the budget may admit it, and as long
// again after it (d.Delay: the rest of the cooldown, or the wait for the
// budget's refill), so that the jobs one refusal wave defers do not all
// come back at one instant. Its attempt is not counted. A deferral that
// follows a deferral of the same attempt for the same reason replaces that
// history entry (Transition.ReplaceLast), its Count one more: a run of
// deferrals is one entry, however many waves it took.
func refused(job *Job, d retry.Decision, worker string, now time.Time, r rand.Source) (jobstore.Transition, retry.Decision) {
	e := Attempt{Attempt: job.Attempt, Worker: worker, StartedAt: now, FinishedAt: now,
		Action: d.Action.Key(), Reason: d.Reason.Key()}
	if d.Err != nil {
		e.Error = errorText(d.Err)
	}
	t := jobstore.Transition{ID: job.ID, LeaseToken: job.LeaseToken, Attempt: job.Attempt, Now: now}
	if d.Action == retry.Defer {
		spread := uniform.Duration(r, d.Delay)
		d.At, d.Delay = d.At.Add(spread), d.Delay+spread
		e.Outcome, e.Delay = jobstore.OutcomeDeferred, d.Delay
		t.State, t.AvailableAt, t.Attempt = StateAvailable, d.At, max(job.Attempt-1, 0)
		if n := len(job.History); n > 0 {
			// A deferral that continues the last entry's run of deferrals
			// takes its place, counting both.
			run := [2]Attempt{job.History[n-1], e}
			if h := jobstore.CompactHistory(run[:]); len(h) == 1 {
				e, t.ReplaceLast = h[0], true
			}
		}
	} else {
		e.Outcome = jobstore.OutcomeExpired
		t.State, t.FinishedAt, t.DeadReason = StateDead, now, d.Reason.Key()
	}
	t.Entry = e
	return t, d
}

// decideRelease hands a job back at shutdown without using its attempt.
func decideRelease(job *Job, res result, now time.Time) jobstore.Transition {
	e := Attempt{Attempt: job.Attempt, Worker: res.worker, StartedAt: res.started, FinishedAt: now,
		Outcome: jobstore.OutcomeReleased, Action: jobstore.ActionRelease, Panic: panicText(res.stack)}
	if res.err != nil {
		e.Error = errorText(res.err)
	}
	return jobstore.Transition{ID: job.ID, LeaseToken: job.LeaseToken, State: StateAvailable, Attempt: max(job.Attempt-1, 0),
		AvailableAt: now, Entry: e, Now: now}
}
