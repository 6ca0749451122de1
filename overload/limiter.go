package overload

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Defaults of [Config].
const (
	DefaultInitialLimit  = 20
	DefaultMinLimit      = 1
	DefaultMaxLimit      = 1000
	DefaultQueueTarget   = 5 * time.Millisecond
	DefaultQueueInterval = 100 * time.Millisecond
	// lightSampling: below half the limit, one request in lightSampling
	// is timed.
	lightSampling = 32
	// shedGap ends a run of refusals: a refusal after a gap this long
	// starts a new one.
	shedGap = time.Second
	// defaultProbe is how often the adaptive limit renews its baseline.
	defaultProbe = 10 * time.Second
)

// Config configures a [Limiter]. The zero Config is the documented
// default and what most servers want: an adaptive limit from 20 between 1
// and 1000, a queue as long as the limit, CoDel's 5 ms target and 100 ms
// interval, adaptive LIFO.
type Config struct {
	// Limit fixes the concurrency limit (default 0: adaptive). Use it
	// when the capacity is known and does not move, such as a pool of
	// workers in front of a licence-limited resource.
	Limit int

	// InitialLimit, MinLimit and MaxLimit are where the adaptive limit
	// starts and its bounds (defaults 20, 1 and 1000).
	InitialLimit, MinLimit, MaxLimit int

	// MaxQueue is the most requests that wait at the limit (default: as
	// many as the limit). Negative: none wait; at the limit every request
	// is refused at once.
	MaxQueue int

	// QueueTarget and QueueInterval bound the time a request waits
	// (defaults 5 ms and 100 ms): at most QueueInterval, and at most
	// 2 × QueueTarget once the shortest wait of a whole interval was above
	// QueueTarget (the queue did not empty).
	QueueTarget, QueueInterval time.Duration

	// LIFOOff serves waiters in arrival order even while overloaded
	// (default: the newest first while overloaded).
	LIFOOff bool

	// Observe, when set, is called for every request the limiter admits
	// or refuses, on the request's goroutine and outside the limiter's
	// lock. heedotel's Metrics.OverloadObserver records it.
	Observe func(Event)
}

func (c Config) validate() error {
	switch {
	case c.Limit < 0:
		return fmt.Errorf("overload: Limit %d is negative (0 means adaptive)", c.Limit)
	case c.InitialLimit < 0, c.MinLimit < 0, c.MaxLimit < 0:
		return fmt.Errorf("overload: InitialLimit, MinLimit and MaxLimit must not be negative")
	case c.QueueTarget < 0, c.QueueInterval < 0:
		return fmt.Errorf("overload: QueueTarget and QueueInterval must not be negative")
	}
	lo, hi := cmpOr(c.MinLimit, DefaultMinLimit), cmpOr(c.MaxLimit, DefaultMaxLimit)
	if lo > hi {
		return fmt.Errorf("overload: MinLimit %d is above MaxLimit %d", lo, hi)
	}
	return nil
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Limiter is a concurrency limit with a queue in front. Make one with
// [New] per server (or per class of requests whose costs differ) and share
// it; it is safe for concurrent use. Most servers use it through
// [Limiter.Wrap]; [Limiter.Acquire] is the mechanism.
type Limiter struct {
	cfg     Config
	maxQ    int // -1: no queue; 0: as long as the limit
	observe func(Event)

	mu        sync.Mutex
	inflight  int
	limit     int
	v         vegas
	q         codel
	mean      time.Duration // moving average of handler latency
	light     uint32        // requests admitted at once, to time one in lightSampling
	shedSince time.Time     // the first refusal of the current run of them
	lastShed  time.Time     // the last refusal
	head      *waiter       // oldest
	tail      *waiter       // newest
	queued    int
}

// New returns a Limiter for cfg, or an error naming the bad field.
func New(cfg Config) (*Limiter, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	l := &Limiter{cfg: cfg, maxQ: cfg.MaxQueue, observe: cfg.Observe}
	if l.maxQ < 0 {
		l.maxQ = -1
	}
	if cfg.Limit > 0 {
		l.v = newVegas(cfg.Limit, cfg.Limit, cfg.Limit, defaultProbe)
	} else {
		lo, hi := cmpOr(cfg.MinLimit, DefaultMinLimit), cmpOr(cfg.MaxLimit, DefaultMaxLimit)
		l.v = newVegas(min(max(cmpOr(cfg.InitialLimit, DefaultInitialLimit), lo), hi), lo, hi, defaultProbe)
	}
	l.limit = int(l.v.limit)
	l.q = newCodel(cmpOr(cfg.QueueTarget, DefaultQueueTarget), cmpOr(cfg.QueueInterval, DefaultQueueInterval))
	return l, nil
}

// Permit is a request admitted by [Limiter.Acquire]. Call Release exactly
// once when the request's work ends. The zero Permit releases nothing.
type Permit struct {
	l        *Limiter
	ctx      context.Context
	start    time.Time
	inflight int
}

// Release ends the request. Its time since Acquire returned is a sample
// of the handlers' latency, unless its context ended: a deadline that
// passed cuts the adaptive limit (the request ran out of time), and a
// caller that went away gives no sample (its latency says nothing). Below
// half the limit only one request in 32 is timed.
func (p Permit) Release() {
	if p.l == nil {
		return
	}
	if p.start.IsZero() {
		p.l.release(time.Time{}, 0, 0, unsampled)
		return
	}
	now := time.Now()
	switch p.ctx.Err() {
	case nil:
		p.l.release(now, now.Sub(p.start), p.inflight, sampled)
	case context.DeadlineExceeded:
		p.l.release(now, now.Sub(p.start), p.inflight, timedOut)
	default:
		p.l.release(now, 0, 0, unsampled)
	}
}

// waiter is a request in the queue.
type waiter struct {
	prev, next *waiter
	since      time.Time
	deadline   time.Time // zero: none
	retry      bool
	ch         chan Reason // ReasonNone: admitted
	done       bool        // answered (under mu)
}

// Acquire admits a request, waiting in the queue if need be, or refuses
// it with a [*RefusedError]. attempt is the request's attempt number as
// heed's Retry-Attempt carries it (0 or 1: a first attempt; 2 or more: a
// retry, which never waits). The context's deadline, if any, is the time
// the request has; its end takes the request out of the queue.
func (l *Limiter) Acquire(ctx context.Context, attempt int) (Permit, error) {
	retry := attempt >= 2
	var now time.Time
	if retry {
		now = time.Now()
	}
	l.mu.Lock()
	// While the limiter is refusing (a refusal less than shedGap ago), a
	// retry is refused even below the limit: it is the overload's echo.
	if l.inflight < l.limit && l.queued == 0 && !(retry && !l.lastShed.IsZero() && now.Sub(l.lastShed) < shedGap) {
		l.inflight++
		n := l.inflight
		l.q.admitted()
		l.light++
		// Below half the limit a latency says nothing about it: time one
		// request in lightSampling, for the baseline (every one until
		// there is a baseline), and spare the others two clock readings.
		timed := 2*n >= l.limit || l.light%lightSampling == 0 || l.v.baseline == 0
		l.mu.Unlock()
		var start time.Time
		if timed {
			start = time.Now()
		}
		if l.observe != nil {
			l.observe(Event{Retry: retry})
		}
		return Permit{l: l, ctx: ctx, start: start, inflight: n}, nil
	}
	// At the limit, or a retry while refusing.
	if !retry {
		now = time.Now()
	}
	dl, hasDL := ctx.Deadline()
	bound := l.q.bound(now, l.queued > 0)
	maxQ := l.maxQ
	if maxQ == 0 {
		maxQ = l.limit
	}
	var why Reason
	switch {
	case retry:
		why = ReasonRetry
	case maxQ < 0 || l.queued >= maxQ:
		why = ReasonQueueFull
	case hasDL && dl.Sub(now) < l.expectedWaitLocked()+l.v.baseline:
		why = ReasonDeadline
	}
	if why != ReasonNone {
		ra := l.retryAfterLocked(now)
		l.mu.Unlock()
		return Permit{}, l.refused(why, ra, retry, 0)
	}
	w := &waiter{since: now, retry: retry, ch: make(chan Reason, 1)}
	wait, timeoutWhy := bound, ReasonQueueTime
	if hasDL {
		w.deadline = dl
		if d := dl.Sub(now) - l.v.baseline; d < wait {
			wait, timeoutWhy = d, ReasonDeadline
		}
	}
	l.pushLocked(w)
	l.mu.Unlock()

	t := time.NewTimer(wait)
	defer t.Stop()
	var why2 Reason
	select {
	case r := <-w.ch:
		// Answered by release: admitted, or refused for its wait or deadline.
		now = time.Now()
		if r != ReasonNone {
			return Permit{}, l.refusedLocked(r, now, retry, now.Sub(w.since))
		}
		l.mu.Lock()
		n := l.inflight
		l.mu.Unlock()
		if l.observe != nil {
			l.observe(Event{Waited: now.Sub(w.since), Retry: retry})
		}
		return Permit{l: l, ctx: ctx, start: now, inflight: n}, nil
	case <-t.C:
		why2 = timeoutWhy
	case <-ctx.Done():
		why2 = ReasonGone
	}
	now = time.Now()
	l.mu.Lock()
	if w.done {
		// Admitted (or refused) just as it gave up: take the answer.
		l.mu.Unlock()
		r := <-w.ch
		if r == ReasonNone {
			if why2 == ReasonGone {
				// Never serve a caller who has gone: pass the place on.
				l.release(now, 0, 0, unsampled)
				return Permit{}, l.refused(ReasonGone, 0, retry, now.Sub(w.since), ctx.Err())
			}
			l.mu.Lock()
			n := l.inflight
			l.mu.Unlock()
			if l.observe != nil {
				l.observe(Event{Waited: now.Sub(w.since), Retry: retry})
			}
			return Permit{l: l, ctx: ctx, start: now, inflight: n}, nil
		}
		return Permit{}, l.refusedLocked(r, now, retry, now.Sub(w.since))
	}
	l.removeLocked(w)
	w.done = true
	ra := time.Duration(0)
	if why2 != ReasonGone {
		ra = l.retryAfterLocked(now)
	}
	l.mu.Unlock()
	var cause error
	if why2 == ReasonGone {
		cause = ctx.Err()
	}
	return Permit{}, l.refused(why2, ra, retry, now.Sub(w.since), cause)
}

// refusedLocked builds the refusal of a waiter answered by release (it
// takes the lock for the retry-after).
func (l *Limiter) refusedLocked(r Reason, now time.Time, retry bool, waited time.Duration) error {
	l.mu.Lock()
	ra := l.retryAfterLocked(now)
	l.mu.Unlock()
	return l.refused(r, ra, retry, waited)
}

func (l *Limiter) refused(r Reason, ra time.Duration, retry bool, waited time.Duration, cause ...error) error {
	if l.observe != nil {
		l.observe(Event{Reason: r, Waited: waited, Retry: retry})
	}
	e := &RefusedError{Reason: r, RetryAfter: ra}
	if len(cause) > 0 {
		e.Err = cause[0]
	}
	return e
}

// expectedWaitLocked is how long a new waiter expects to wait: one place
// per waiter served before it, a place freeing every mean/limit.
func (l *Limiter) expectedWaitLocked() time.Duration {
	ahead := l.queued
	if l.q.overloaded && !l.cfg.LIFOOff {
		ahead = 0 // it will be served first
	}
	return time.Duration(ahead+1) * l.slotLocked()
}

// slotLocked is the time between two places freeing at the limit.
func (l *Limiter) slotLocked() time.Duration {
	return l.mean / time.Duration(max(l.limit, 1))
}

// retryAfterLocked records a refusal at now and returns when the refused
// request should come back: the time the queue needs to drain, at least
// the no-queue latency, and at least as long as the limiter has been
// refusing (refusals less than shedGap apart): an overload that has
// lasted a while is likely to last as long again, and a caller told so
// gives up rather than retry into it when its deadline is nearer.
func (l *Limiter) retryAfterLocked(now time.Time) time.Duration {
	if l.shedSince.IsZero() || now.Sub(l.lastShed) > shedGap {
		l.shedSince = now
	}
	l.lastShed = now
	return max(time.Duration(l.queued+1)*l.slotLocked(), l.v.baseline, now.Sub(l.shedSince), time.Millisecond)
}

// How a request ended, for release.
type ending uint8

const (
	unsampled ending = iota // its latency says nothing (its caller went)
	sampled                 // a latency sample
	timedOut                // it ran out of time
)

// release ends a request. Its place goes to the next waiter that can still
// use it.
func (l *Limiter) release(now time.Time, rtt time.Duration, inflight int, how ending) {
	l.mu.Lock()
	if how != unsampled {
		l.limit = int(l.v.sample(now, rtt, inflight, how == timedOut))
		if l.mean == 0 {
			l.mean = rtt
		} else {
			l.mean += (rtt - l.mean) / 16
		}
	}
	l.inflight--
	if l.queued > 0 && now.IsZero() {
		now = time.Now()
	}
	for l.queued > 0 && l.inflight < l.limit {
		bound := l.q.bound(now, true)
		lifo := l.q.overloaded && !l.cfg.LIFOOff
		w := l.head
		if lifo {
			w = l.tail
		}
		l.removeLocked(w)
		w.done = true
		waited := now.Sub(w.since)
		switch {
		case waited > bound:
			w.ch <- ReasonQueueTime
			continue
		case !w.deadline.IsZero() && w.deadline.Sub(now) < l.v.baseline:
			w.ch <- ReasonDeadline
			continue
		}
		l.q.observe(now, waited, l.queued > 0)
		l.inflight++
		w.ch <- ReasonNone
	}
	l.mu.Unlock()
}

func (l *Limiter) pushLocked(w *waiter) {
	w.prev = l.tail
	if l.tail != nil {
		l.tail.next = w
	} else {
		l.head = w
	}
	l.tail = w
	l.queued++
}

func (l *Limiter) removeLocked(w *waiter) {
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		l.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		l.tail = w.prev
	}
	w.prev, w.next = nil, nil
	l.queued--
}

// Stats returns a snapshot of l.
func (l *Limiter) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return Stats{Limit: l.limit, InFlight: l.inflight, Queued: l.queued, Baseline: l.v.baseline}
}
