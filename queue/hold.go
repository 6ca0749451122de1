package queue

import (
	"sync"
	"time"

	"github.com/heed-go/heed/breaker"
	"github.com/heed-go/heed/retry"
)

// held is what a worker leaves in the store because its policy would only
// defer it: a worker does not claim jobs whose attempts its breaker or its
// retry budget would refuse, so that an outage costs the database no
// write and the jobs' histories no entry while it lasts. (The worker's
// Policy governs every job it claims: kinds and jobs override its
// backoff, attempts and times, never its breaker or budget.)
//
// The breaker is asked without changing it (ReadyAt, StateAt). The budget
// cannot be asked without spending a retry, so the worker learns from its
// refusals: after one, it claims first attempts only (which the budget
// admits, counting them as requests) until the budget's refill, or until
// one of its retries succeeds (which earns the budget more).
type held struct {
	mu      sync.Mutex
	retries time.Time // retried jobs wait until then
}

// hold is what a claim at some instant leaves out.
type hold struct {
	all   bool      // the breaker refuses every attempt: claim nothing
	first bool      // the budget refuses retries: claim first attempts only
	probe bool      // the breaker is half-open: claim one job at a time
	until time.Time // when this hold ends; zero when nothing is held
}

// holdAt returns what w's claims leave out at now.
func (w *Worker) holdAt(now time.Time) hold {
	var h hold
	if b := w.policy.Breaker; b != nil {
		if at := b.ReadyAt(now); at.After(now) {
			return hold{all: true, until: at}
		}
		h.probe = b.StateAt(now) == breaker.HalfOpen
	}
	if w.policy.Budget != nil {
		w.held.mu.Lock()
		until := w.held.retries
		w.held.mu.Unlock()
		if until.After(now) {
			h.first, h.until = true, until
		}
	}
	return h
}

// refusedBy learns from d, the refusal of an attempt at now, for the
// claims that follow: a retry the budget deferred until d.At holds the
// other retried jobs until then.
func (w *Worker) refusedBy(d retry.Decision, now time.Time) {
	if d.Action != retry.Defer || d.Reason != retry.ReasonBudget || !d.At.After(now) {
		return
	}
	w.held.mu.Lock()
	if d.At.After(w.held.retries) {
		w.held.retries = d.At
	}
	w.held.mu.Unlock()
}

// retrySucceeded ends the hold on retried jobs: a retry that succeeded
// earned the budget more, so it may grant the next ones before its refill.
func (w *Worker) retrySucceeded() {
	w.held.mu.Lock()
	w.held.retries = time.Time{}
	w.held.mu.Unlock()
}
