package admit

import "time"

// codel bounds the time a request waits in the queue, as Facebook's
// servers do (folly's Codel, after RFC 8289): at the end of each interval,
// the server is overloaded when the shortest wait of the interval was above
// target, that is when the queue never emptied. A request then waits at
// most 2 × target; otherwise at most one interval, so that a short burst
// queues and is served. Requests admitted at once count as waits of zero.
//
// codel is pure: time comes in as arguments; the Core's caller locks around it.
type codel struct {
	target, interval time.Duration

	ends       time.Time     // the end of the current interval
	minWait    time.Duration // the shortest wait seen in it; -1: none yet
	overloaded bool
}

func newCodel(target, interval time.Duration) codel {
	return codel{target: target, interval: interval, minWait: -1}
}

// roll closes the intervals that ended by now.
func (c *codel) roll(now time.Time, queued bool) {
	if c.ends.IsZero() {
		c.ends = now.Add(c.interval)
		return
	}
	if now.Before(c.ends) {
		return
	}
	switch {
	case c.minWait >= 0:
		c.overloaded = c.minWait > c.target
	default:
		// Nobody left the queue for a whole interval: overloaded if
		// somebody was waiting all that time.
		c.overloaded = queued
	}
	if !now.Before(c.ends.Add(c.interval)) {
		// Whole intervals passed since, in which nobody left.
		c.overloaded = queued
	}
	c.minWait = -1
	c.ends = now.Add(c.interval)
}

// observe records a request that left the queue (or never joined it) after
// waiting wait.
func (c *codel) observe(now time.Time, wait time.Duration, queued bool) {
	c.roll(now, queued)
	if c.minWait < 0 || wait < c.minWait {
		c.minWait = wait
	}
}

// admitted records a request admitted at once: the queue was empty.
func (c *codel) admitted() { c.minWait = 0 }

// bound returns the longest a request may wait, as of now.
func (c *codel) bound(now time.Time, queued bool) time.Duration {
	c.roll(now, queued)
	if c.overloaded {
		return 2 * c.target
	}
	return c.interval
}
