package breaker

import "time"

// CountsAt lets the external tests read b's window at an instant of their
// choosing, as Counts does at the clock's.
func CountsAt(b *Breaker, now time.Time) Counts { return b.countsAt(now) }
