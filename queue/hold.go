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
// one of its retries succeeds (which earns the budget more). After a
// refusal it claims one job at a time, and one more each time a retry
// succeeds (so twice as many a round while all succeed, as a recovered
// budget earns), instead of a batch of retries of which the budget would
// grant one and defer the rest.
type held struct {
	mu      sync.Mutex
	retries time.Time // retried jobs wait until then
	grant   int       // claim at most this many jobs at a time; 0: no limit
}

// hold is what a claim at some instant leaves out.
type hold struct {
	all   bool      // the breaker refuses every attempt: claim nothing
	first bool      // the budget refuses retries: claim first attempts only
	probe bool      // the breaker is half-open: claim one job at a time
	grant int       // the budget recovers: claim at most this many; 0: no limit
	until time.Time // when this hold ends; zero when nothing is held
}

// holdAt returns what w's claims leave out at now.
func (w *Worker) holdAt(now time.Time) hold {
	var h hold
	if b := w.cfg.Policy.Breaker; b != nil {
		if at := b.ReadyAt(now); at.After(now) {
			return hold{all: true, until: at}
		}
		h.probe = b.StateAt(now) == breaker.HalfOpen
	}
	if w.cfg.Policy.Budget != nil {
		w.held.mu.Lock()
		until := w.held.retries
		h.grant = w.held.grant
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
	w.held.grant = max(w.held.grant/2, 1)
	w.held.mu.Unlock()
}

// retrySucceeded ends the hold on retried jobs, and claims one more job at
// a time: a retry that succeeded earned the budget more, so it may grant
// the next ones before its refill.
func (w *Worker) retrySucceeded() {
	w.held.mu.Lock()
	w.held.retries = time.Time{}
	if w.held.grant > 0 {
		w.held.grant++
		if w.held.grant > maxGrant {
			w.held.grant = 0
		}
	}
	w.held.mu.Unlock()
}

// maxGrant is where a recovering budget's limit on claims ends: past it,
// claims take every free slot again.
const maxGrant = 1 << 16
