// Package admit is the decision of heed's server-side overload control:
// the concurrency limit, the queue in front of it and who is refused, as
// one state machine that takes the time as an argument. package overload
// runs it on real time for HTTP and gRPC servers (a mutex around it, a
// goroutine per waiter); package sim runs the same code on its virtual
// clock, one event at a time.
//
// A [Core] is not safe for concurrent use, except [Core.TryFast] and
// [Core.TryFastRelease], which may run at any time, concurrently with
// each other and with one caller of the other methods (which must be
// serialised, for example by a mutex).
package admit

import (
	"fmt"
	"sync/atomic"
	"time"
)

// Reasons for a refusal, in the order of overload.Reason.
const (
	None      uint8 = iota // admitted
	QueueFull              // at the limit, and the queue was full (or off)
	QueueTime              // waited as long as the queue allows
	Deadline               // its deadline could not cover the expected wait plus service
	Retry                  // a retry at the limit, or while refusing
	Gone                   // its caller went away while it waited
)

const (
	// lightSampling: below half the limit, one request admitted at once
	// in lightSampling is timed.
	lightSampling = 32
	// shedGap ends a run of refusals: a refusal after a gap this long
	// starts a new one.
	shedGap = time.Second
	// probe is how often the adaptive limit renews its baseline.
	probe = 10 * time.Second
	// MaxLimit is the highest limit a Core holds (the state word's
	// fields are 24 bits wide).
	MaxLimit = 1 << 20
)

// The state word, read and changed atomically: the requests in flight,
// whether any wait, a counter of requests admitted at once (for sampling)
// and the limit. While any request waits, every change goes through the
// serialised methods, so that a place freed is handed to a waiter.
const (
	inMask     = 1<<24 - 1
	queuedBit  = 1 << 24
	ctrShift   = 25
	ctrMask    = 0x7f << ctrShift
	limitShift = 32
)

// Defaults of Config's zero fields (overload.Config documents them).
const (
	DefaultInitial  = 20
	DefaultMin      = 1
	DefaultMax      = 1000
	DefaultTarget   = 5 * time.Millisecond
	DefaultInterval = 100 * time.Millisecond
)

// Config is overload.Config's decision fields, zero meaning the default;
// package overload and package sim copy theirs in, so that both validate
// and default them alike.
type Config struct {
	Limit             int // a fixed limit; 0: adaptive
	Initial, Min, Max int // the adaptive limit's start and bounds
	MaxQueue          int // the most requests waiting; 0: as many as the limit; negative: none
	Target, Interval  time.Duration
	FIFO              bool // serve waiters in arrival order even while overloaded
}

// Validate returns an error naming overload.Config's bad field, or nil.
func (c Config) Validate() error {
	switch {
	case c.Limit < 0:
		return fmt.Errorf("overload: Limit %d is negative (0 means adaptive)", c.Limit)
	case c.Initial < 0, c.Min < 0, c.Max < 0:
		return fmt.Errorf("overload: InitialLimit, MinLimit and MaxLimit must not be negative")
	case c.Target < 0, c.Interval < 0:
		return fmt.Errorf("overload: QueueTarget and QueueInterval must not be negative")
	}
	lo, hi := cmpOr(c.Min, DefaultMin), cmpOr(c.Max, DefaultMax)
	if max(c.Limit, c.Initial, hi) > MaxLimit {
		return fmt.Errorf("overload: a limit above %d", MaxLimit)
	}
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

// Waker is told the answer for a request that waited: [None] when it is
// admitted (it holds a place from then on), otherwise why it is refused.
// Wake is called by [Core.Release], under the caller's serialisation; it
// must not call back into the Core.
type Waker interface{ Wake(reason uint8) }

// Waiter is a request in the queue. Make one per waiting request and pass
// it to [Core.Queue]; its fields are the Core's.
type Waiter struct {
	prev, next *Waiter
	since      time.Time
	deadline   time.Time // zero: none
	wake       Waker
	done       bool // answered or gone
}

// Since returns when the waiter joined the queue.
func (w *Waiter) Since() time.Time { return w.since }

// Core is the limiter's state. The zero Core is not usable; make one with
// [New].
type Core struct {
	st   atomic.Uint64 // the state word
	zero atomic.Bool   // a request was admitted at once by TryFast since the last fold
	warm atomic.Bool   // the limit has a baseline

	maxQ      int
	fifo      bool
	v         vegas
	q         codel
	mean      time.Duration // moving average of handler latency
	shedSince time.Time     // the first refusal of the current run of them
	lastShed  time.Time     // the last refusal
	head      *Waiter       // oldest
	tail      *Waiter       // newest
	queued    int
}

// New returns a Core for a valid cfg, its defaults applied.
func New(cfg Config) *Core {
	c := &Core{maxQ: cfg.MaxQueue, fifo: cfg.FIFO}
	if cfg.Limit > 0 {
		c.v = newVegas(cfg.Limit, cfg.Limit, cfg.Limit, probe)
	} else {
		lo, hi := cmpOr(cfg.Min, DefaultMin), cmpOr(cfg.Max, DefaultMax)
		c.v = newVegas(min(max(cmpOr(cfg.Initial, DefaultInitial), lo), hi), lo, hi, probe)
	}
	c.q = newCodel(cmpOr(cfg.Target, DefaultTarget), cmpOr(cfg.Interval, DefaultInterval))
	c.st.Store(uint64(int(c.v.limit)) << limitShift)
	return c
}

func unpack(s uint64) (inflight, limit int) { return int(s & inMask), int(s >> limitShift) }

// TryFast admits a first attempt at once, without serialisation, when it
// is below the limit and nobody waits. It returns the requests in flight
// with it and whether its latency is to be measured (passed to Release);
// ok false means: call [Core.Arrive].
func (c *Core) TryFast() (inflight int, timed, ok bool) {
	for {
		s := c.st.Load()
		in, lim := unpack(s)
		if s&queuedBit != 0 || in >= lim {
			return 0, false, false
		}
		ctr := (s&ctrMask)>>ctrShift + 1
		if c.st.CompareAndSwap(s, (s&^ctrMask|(ctr<<ctrShift)&ctrMask)+1) {
			if !c.zero.Load() {
				c.zero.Store(true)
			}
			// Below half the limit a latency says nothing about it: time
			// one request in lightSampling, for the baseline (every one
			// until there is a baseline), and spare the others two clock
			// readings.
			timed = 2*(in+1) >= lim || ctr%lightSampling == 0 || !c.warm.Load()
			return in + 1, timed, true
		}
	}
}

// TryFastRelease ends a request whose latency is not measured, without
// serialisation, when nobody waits. false means: call [Core.Release].
func (c *Core) TryFastRelease() bool {
	for {
		s := c.st.Load()
		if s&queuedBit != 0 {
			return false
		}
		if c.st.CompareAndSwap(s, s-1) {
			return true
		}
	}
}

// Outcome is what [Core.Arrive] decided for a request.
type Outcome struct {
	// Admitted: it runs now, with Inflight in flight; Timed says whether
	// its latency is measured.
	Admitted bool
	Inflight int
	Timed    bool
	// Reason is why it is refused (None when admitted or to wait), and
	// RetryAfter when it should come back.
	Reason     uint8
	RetryAfter time.Duration
	// Wait is how long it may wait in the queue (to wait, call
	// [Core.Queue]), and Expire the reason it is refused when that ends.
	Wait   time.Duration
	Expire uint8
}

// Arrive decides for a request arriving at now: admitted, refused, or to
// wait (neither Admitted nor a Reason: the caller calls [Core.Queue] at
// once, before anything else touches the Core). deadline is the request's
// (zero: none); retry says it is a retry, which never waits, and which is
// refused even below the limit while the Core is refusing (a refusal less
// than a second ago): it is the overload's echo.
func (c *Core) Arrive(now time.Time, retry bool, deadline time.Time) Outcome {
	c.fold()
	shedding := retry && !c.lastShed.IsZero() && now.Sub(c.lastShed) < shedGap
	for {
		s := c.st.Load()
		in, lim := unpack(s)
		if c.queued == 0 && in < lim && !shedding {
			if !c.st.CompareAndSwap(s, s+1) {
				continue // a fast admission or release meanwhile
			}
			c.q.admitted()
			return Outcome{Admitted: true, Inflight: in + 1, Timed: true}
		}
		bound := c.q.bound(now, c.queued > 0)
		maxQ := c.maxQ
		if maxQ == 0 {
			maxQ = lim
		}
		var why uint8
		switch {
		case retry:
			why = Retry
		case maxQ < 0 || c.queued >= maxQ:
			why = QueueFull
		case !deadline.IsZero() && deadline.Sub(now) < c.expectedWait()+c.v.baseline:
			why = Deadline
		}
		if why != None {
			return Outcome{Reason: why, RetryAfter: c.refuse(now)}
		}
		// It waits: from now on every release must look at the queue.
		if c.queued == 0 && !c.st.CompareAndSwap(s, s|queuedBit) {
			continue // a place freed meanwhile
		}
		wait, expire := bound, QueueTime
		if !deadline.IsZero() {
			if d := deadline.Sub(now) - c.v.baseline; d < wait {
				wait, expire = d, Deadline
			}
		}
		return Outcome{Wait: wait, Expire: expire}
	}
}

// Queue puts w in the queue at now, right after [Core.Arrive] said it
// waits; wake is told its answer.
func (c *Core) Queue(w *Waiter, now, deadline time.Time, wake Waker) {
	*w = Waiter{since: now, deadline: deadline, wake: wake, prev: c.tail}
	if c.tail != nil {
		c.tail.next = w
	} else {
		c.head = w
	}
	c.tail = w
	c.queued++
}

// Leave takes w out of the queue at now, when its wait ended (its timer
// fired, or its caller went away). It reports false when w was already
// answered (its Waker was told or is being told: take that answer), else
// when to come back unless the caller went (why is Gone).
func (c *Core) Leave(w *Waiter, now time.Time, why uint8) (retryAfter time.Duration, left bool) {
	if w.done {
		return 0, false
	}
	c.remove(w)
	if why != Gone {
		retryAfter = c.refuse(now)
	}
	return retryAfter, true
}

// RetryAfter records a refusal of a waiter answered by Release and returns
// when it should come back.
func (c *Core) RetryAfter(now time.Time) time.Duration { return c.refuse(now) }

// Inflight returns the requests in flight now.
func (c *Core) Inflight() int {
	in, _ := unpack(c.st.Load())
	return in
}

// RetryAfterSeconds returns d as HTTP's Retry-After says it: whole
// seconds, rounded up, at least 1 (the header's unit).
func RetryAfterSeconds(d time.Duration) int64 {
	return max(1, int64((d+time.Second-1)/time.Second))
}

// Ending says how a request ended, for [Core.Release].
type Ending uint8

const (
	Unsampled Ending = iota // its latency says nothing (its caller went, or it was not timed)
	Sampled                 // a latency sample
	TimedOut                // it ran out of time: a hard sign of overload
)

// Release ends a request at now that ran for rtt with inflight in flight
// when it started; its place goes to the waiters that can still use it
// (their Wakers are told).
func (c *Core) Release(now time.Time, rtt time.Duration, inflight int, how Ending) {
	c.fold()
	if how != Unsampled {
		cur, _ := unpack(c.st.Load()) // still counting this one
		c.setLimit(int(c.v.sample(now, rtt, inflight, cur, how == TimedOut)))
		if c.mean == 0 {
			c.mean = rtt
		} else {
			c.mean += (rtt - c.mean) / 16
		}
		c.warm.Store(true)
	}
	c.st.Add(^uint64(0)) // one fewer in flight
	for c.queued > 0 {
		in, lim := unpack(c.st.Load())
		if in >= lim {
			break
		}
		bound := c.q.bound(now, true)
		w := c.head
		if c.q.overloaded && !c.fifo {
			w = c.tail
		}
		c.remove(w)
		waited := now.Sub(w.since)
		switch {
		case waited > bound:
			w.wake.Wake(QueueTime)
			continue
		case !w.deadline.IsZero() && w.deadline.Sub(now) < c.v.baseline:
			w.wake.Wake(Deadline)
			continue
		}
		c.q.observe(now, waited, c.queued > 0)
		c.st.Add(1)
		w.wake.Wake(None)
	}
}

// Stats returns the limit, the requests in flight and waiting, and the
// no-queue latency (serialised, as Arrive).
func (c *Core) Stats() (limit, inflight, queued int, baseline time.Duration) {
	in, lim := unpack(c.st.Load())
	return lim, in, c.queued, c.v.baseline
}

// Overloaded reports whether CoDel says the queue is standing: waiters
// then wait at most 2 × target, newest first (serialised, as Arrive).
func (c *Core) Overloaded() bool { return c.q.overloaded }

// fold records the admissions TryFast made since the last fold: the queue
// was empty, a wait of zero for CoDel.
func (c *Core) fold() {
	if c.zero.Load() {
		c.zero.Store(false)
		c.q.admitted()
	}
}

func (c *Core) setLimit(n int) {
	n = min(max(n, 1), MaxLimit)
	for {
		s := c.st.Load()
		if c.st.CompareAndSwap(s, s&(1<<limitShift-1)|uint64(n)<<limitShift) {
			return
		}
	}
}

// expectedWait is how long a new waiter expects to wait: one place per
// waiter served before it, a place freeing every mean/limit.
func (c *Core) expectedWait() time.Duration {
	ahead := c.queued
	if c.q.overloaded && !c.fifo {
		ahead = 0 // it will be served first
	}
	return time.Duration(ahead+1) * c.slot()
}

// slot is the time between two places freeing at the limit.
func (c *Core) slot() time.Duration {
	_, lim := unpack(c.st.Load())
	return c.mean / time.Duration(max(lim, 1))
}

// refuse records a refusal at now and returns when the refused request
// should come back: the time the queue needs to drain, at least the
// no-queue latency, and at least as long as the Core has been refusing
// (refusals less than shedGap apart): an overload that has lasted a while
// is likely to last as long again, and a caller told so gives up rather
// than retry into it when its deadline is nearer.
func (c *Core) refuse(now time.Time) time.Duration {
	if c.shedSince.IsZero() || now.Sub(c.lastShed) > shedGap {
		c.shedSince = now
	}
	c.lastShed = now
	return max(time.Duration(c.queued+1)*c.slot(), c.v.baseline, now.Sub(c.shedSince), time.Millisecond)
}

func (c *Core) remove(w *Waiter) {
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		c.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		c.tail = w.prev
	}
	w.prev, w.next = nil, nil
	w.done = true
	c.queued--
	if c.queued == 0 {
		c.st.And(^uint64(queuedBit))
	}
}
