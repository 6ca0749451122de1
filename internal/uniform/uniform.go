// Package uniform draws a duration uniformly, randomness passed in: the one
// draw behind backoff's jitter and the queue's spreads (a deferred job's
// reschedule, a poll's ±20 %, a periodic tick's retry), so that a seeded
// source reproduces all of them.
package uniform

import (
	"math/bits"
	"math/rand/v2"
	"time"
)

// Duration returns a duration drawn uniformly from [0, d] using r (a nil r
// uses math/rand/v2's concurrency-safe global source). It returns 0 for
// d <= 0, and draws nothing then.
func Duration(r rand.Source, d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	var x uint64
	if r == nil {
		x = rand.Uint64()
	} else {
		x = r.Uint64()
	}
	// Lemire's multiply-shift maps x onto [0, d]; d+1 <= 2^63 cannot
	// overflow a uint64.
	hi, _ := bits.Mul64(x, uint64(d)+1)
	return time.Duration(hi)
}
