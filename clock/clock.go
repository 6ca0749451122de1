// Package clock is the time source of heed: the current time and timers.
//
// Every heed package that waits or reads the time does so through a [Clock],
// so tests can replace real time with a fake one ([clocktest.Clock]) or run
// under testing/synctest. A nil Clock means real time; most callers never set
// one.
package clock

import "time"

// Clock tells the time and makes timers.
//
// Implementations must be safe for concurrent use. A nil Clock stands for
// real time wherever heed accepts one; use [Or] to resolve it.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// NewTimer returns a timer that fires once after d.
	NewTimer(d time.Duration) Timer
}

// Timer is a one-shot timer, like [time.Timer].
type Timer interface {
	// C returns the channel the timer sends its time on when it fires.
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it stopped
	// the timer before it fired.
	Stop() bool
	// Reset changes the timer to fire after d; it reports whether the
	// timer was active.
	Reset(d time.Duration) bool
}

// Real is the real-time Clock, backed by the time package. Its zero value
// is ready to use.
type Real struct{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// NewTimer returns a [time.Timer] wrapped as a [Timer].
func (Real) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time        { return r.t.C }
func (r realTimer) Stop() bool                 { return r.t.Stop() }
func (r realTimer) Reset(d time.Duration) bool { return r.t.Reset(d) }

// Or returns c, or [Real] when c is nil.
func Or(c Clock) Clock {
	if c == nil {
		return Real{}
	}
	return c
}

// Now returns c.Now(), or time.Now() when c is nil.
func Now(c Clock) time.Time {
	if c == nil {
		return time.Now()
	}
	return c.Now()
}
