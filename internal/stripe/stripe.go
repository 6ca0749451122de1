// Package stripe spreads hot counters over per-processor stripes.
//
// A counter that goroutines on several cores add to at once costs a
// transfer of its cache line between cores on nearly every add. Keeping N
// copies of it (stripes), each on lines of its own, and letting every
// goroutine add to the stripe of the processor (P) it runs on, turns those
// adds into writes of lines no other core writes; readers add the stripes
// up. budget and breaker count their hot events this way.
//
// This package uses only the standard library, like the core packages that
// import it.
package stripe

import (
	"sync"
	"sync/atomic"
)

// N is the number of stripes. Processors beyond N share stripes, which
// costs speed, not correctness.
const N = 8

// hints caches a stripe number per processor: sync.Pool keeps a private
// slot for each P, so a Get then Put on the same P, with nothing else using
// the Pool in between, returns the value that P last put. A goroutine thus
// keeps to one stripe while it runs on one P. The values are small
// integers, which convert to an interface without allocating. After a
// garbage collection empties the Pool, processors are given stripes again
// in turn.
var (
	hints sync.Pool
	next  atomic.Uint32
)

// Of returns the stripe, in [0, N), of the processor the calling goroutine
// runs on. It is a hint: a goroutine moved to another processor during a
// call may add to a stripe another one uses, which is correct, only slower.
// It does not allocate and costs about 10 ns.
func Of() int {
	s, ok := hints.Get().(uint8)
	if !ok {
		s = uint8(next.Add(1) % N)
	}
	hints.Put(s)
	return int(s)
}
