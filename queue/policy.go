package queue

import (
	"time"

	"github.com/heed-go/heed/retry"
)

// Policy defaults for jobs, used for the zero fields of WorkerConfig.Policy
// (WorkerConfig.WithDefaults returns them). They are more patient than
// retry's in-process defaults because nobody is waiting on a background
// job: it was accepted and should get done, and waiting costs nothing but
// latency.
const (
	// defaultAttempts is 10 attempts in total. With the default backoff
	// they span about 7 minutes on average (14 at most): long enough to
	// ride out a deploy, a restart, a failover or a short outage, short
	// enough that a job that cannot succeed reaches the dead-letter, and a
	// person, the same day.
	defaultAttempts = 10
	// defaultBackoffBase is the first delay before jitter (2 s): a job that
	// failed on a blip gets a quick second chance.
	defaultBackoffBase = 2 * time.Second
	// defaultBackoffCap caps the delay (5 min) so that a job notices a
	// recovered dependency within minutes; more patience comes from more
	// attempts or a longer time budget, not from ever longer sleeps.
	// Jitter is full jitter (backoff's default): jobs that failed together,
	// when a dependency went down, must not all come back together.
	defaultBackoffCap = 5 * time.Minute
	// defaultTimeBudget is the total time a job may spend from the start of
	// its first attempt (24 h): past a day, background work is usually no
	// longer wanted as it was (a report, a notification), and the bound
	// holds when Attempts or the backoff are raised.
	defaultTimeBudget = 24 * time.Hour
	// defaultAttemptTimeout limits each attempt (1 min): a hung handler
	// otherwise holds its slot, and its lease, forever. A dependency that
	// accepts calls and never answers (a black hole) fills every slot of
	// a worker in its first second, and the worker serves nothing until
	// those attempts end: 1 min is the horizon in which a killed worker's
	// jobs run again (defaultLease), River's default job timeout, and
	// twice the built-in job kinds' 30 s; a 5 s black hole then stops a
	// worker for a minute, not for 15 (the default until this release).
	// Raise it for long jobs (WorkerConfig.Policy, KindPolicy, or a job's
	// own JobPolicy.AttemptTimeout); leases are renewed however long an
	// attempt runs.
	defaultAttemptTimeout = time.Minute
	// defaultMaxPushback caps a wait asked for with retry.After (1 h, where
	// in-process calls cap it at 30 s): a job can afford to honour a
	// server's Retry-After of many minutes; the time budget still bounds it.
	defaultMaxPushback = time.Hour
)

// RetryAll is a classifier for WorkerConfig.Policy.Retryable that retries
// every error unless it is marked with retry.Permanent (or its server
// refused with retry.After and a negative wait): what River, Sidekiq and
// Oban do. It is not the default. Opt in with
//
//	queue.WorkerConfig{Policy: retry.Policy{Retryable: queue.RetryAll}}
//
// for handlers whose errors come from dependencies no classifier knows,
// and return retry.Permanent for what cannot pass. The attempt limit, the
// backoff cap and the time budget still bound what a hopeless job costs.
func RetryAll(error) bool { return true }

// defaultPolicy applies the job defaults to the zero fields of p: Attempts
// defaultAttempts, Backoff from defaultBackoffBase capped at
// defaultBackoffCap (its Kind, Multiplier and Jitter kept, full jitter by
// default), TimeBudget defaultTimeBudget, AttemptTimeout
// defaultAttemptTimeout, MaxPushback defaultMaxPushback. Retryable stays
// as it is: nil means retry.IsTransient, the same classifier as retry.Do.
func defaultPolicy(p retry.Policy) retry.Policy {
	if p.Attempts == 0 {
		p.Attempts = defaultAttempts
	}
	if p.Backoff.Base == 0 {
		p.Backoff.Base = defaultBackoffBase
	}
	if p.Backoff.Cap == 0 {
		p.Backoff.Cap = max(defaultBackoffCap, p.Backoff.Base)
	}
	if p.TimeBudget == 0 {
		p.TimeBudget = defaultTimeBudget
	}
	if p.AttemptTimeout == 0 {
		p.AttemptTimeout = defaultAttemptTimeout
	}
	if p.MaxPushback == 0 {
		p.MaxPushback = defaultMaxPushback
	}
	return p
}

// effective returns p (already defaulted) with job's overrides applied.
func effective(p retry.Policy, job *Job) retry.Policy {
	if job.MaxAttempts != 0 {
		p.Attempts = job.MaxAttempts
	}
	if b := job.Policy.Backoff; b != nil {
		p.Backoff = *b
	}
	if job.Policy.TimeBudget != 0 {
		p.TimeBudget = job.Policy.TimeBudget
	}
	if job.Policy.AttemptTimeout != 0 {
		p.AttemptTimeout = job.Policy.AttemptTimeout
	}
	return p
}
