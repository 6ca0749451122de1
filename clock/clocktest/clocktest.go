// Package clocktest provides a fake [clock.Clock] that moves only when a
// test advances it.
//
// Use it for code that blocks on I/O, where testing/synctest cannot be used.
// For code that blocks only on timers and channels, prefer testing/synctest
// with the real clock.
package clocktest

import (
	"sort"
	"sync"
	"time"

	"github.com/heed-go/heed/clock"
)

// Clock is a fake clock. Its time changes only through [Clock.Advance] and
// [Clock.Set]; timers fire when the time reaches their deadline.
//
// Create one with [New]; the zero value is not usable. Safe for concurrent
// use.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*timer
	seq    uint64
}

var _ clock.Clock = (*Clock)(nil)

// New returns a fake clock set to start.
func New(start time.Time) *Clock { return &Clock{now: start} }

// Now returns the fake current time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTimer returns a timer that fires when the fake time has advanced by d.
// A timer with d <= 0 fires at once.
func (c *Clock) NewTimer(d time.Duration) clock.Timer {
	t := &timer{c: c, ch: make(chan time.Time, 1)}
	c.mu.Lock()
	c.arm(t, d)
	fire := c.due()
	c.mu.Unlock()
	send(fire)
	return t
}

// Advance moves the fake time forward by d and fires every timer that
// becomes due, in deadline order.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	fire := c.due()
	c.mu.Unlock()
	send(fire)
}

// Set moves the fake time to t (which may not be earlier than now) and
// fires every timer that becomes due.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	if t.After(c.now) {
		c.now = t
	}
	fire := c.due()
	c.mu.Unlock()
	send(fire)
}

// Timers returns how many timers are waiting to fire. Tests use it to wait
// until the code under test has started to sleep.
func (c *Clock) Timers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// BlockUntil waits until at least n timers are waiting, polling briefly.
// It is a helper for tests that advance time once the code under test is
// asleep.
func (c *Clock) BlockUntil(n int) {
	for c.Timers() < n {
		time.Sleep(50 * time.Microsecond)
	}
}

type firing struct {
	t  *timer
	at time.Time
}

func send(fs []firing) {
	for _, f := range fs {
		select {
		case f.t.ch <- f.at:
		default:
		}
	}
}

// arm schedules t; c.mu must be held.
func (c *Clock) arm(t *timer, d time.Duration) {
	c.seq++
	t.when = c.now.Add(d)
	t.seq = c.seq
	t.active = true
	c.timers = append(c.timers, t)
}

// due removes and returns the timers whose deadline has passed; c.mu must
// be held.
func (c *Clock) due() []firing {
	var fire []firing
	keep := c.timers[:0]
	for _, t := range c.timers {
		if !t.when.After(c.now) {
			t.active = false
			fire = append(fire, firing{t, t.when})
		} else {
			keep = append(keep, t)
		}
	}
	clear(c.timers[len(keep):])
	c.timers = keep
	sort.Slice(fire, func(i, j int) bool {
		if fire[i].at.Equal(fire[j].at) {
			return fire[i].t.seq < fire[j].t.seq
		}
		return fire[i].at.Before(fire[j].at)
	})
	return fire
}

func (c *Clock) remove(t *timer) bool {
	for i, x := range c.timers {
		if x == t {
			c.timers = append(c.timers[:i], c.timers[i+1:]...)
			t.active = false
			return true
		}
	}
	return false
}

type timer struct {
	c      *Clock
	ch     chan time.Time
	when   time.Time
	seq    uint64
	active bool
}

func (t *timer) C() <-chan time.Time { return t.ch }

func (t *timer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	return t.c.remove(t)
}

func (t *timer) Reset(d time.Duration) bool {
	t.c.mu.Lock()
	was := t.c.remove(t)
	// Drain a stale value, as time.Timer does since Go 1.23.
	select {
	case <-t.ch:
	default:
	}
	t.c.arm(t, d)
	fire := t.c.due()
	t.c.mu.Unlock()
	send(fire)
	return was
}
