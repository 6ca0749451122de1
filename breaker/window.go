package breaker

// The sliding window.
//
// Time is cut into buckets of Window/16 nanoseconds; bucket e (its epoch)
// covers [e*width, (e+1)*width) in Unix nanoseconds. The window ending in
// epoch cur is made of the epochs cur-15 .. cur, kept in a ring of 16 slots:
// epoch e lives in slot e mod 16.
//
// Each slot has two counters, successes and failures, and each counter has
// stripe.N copies, one per stripe (see package internal/stripe): a goroutine
// adds to the copy of the processor it runs on, so that goroutines on
// several cores recording outcomes at once write different cache lines
// instead of passing one line back and forth on every call. Readers (sum,
// on every failure and for Counts) add the stripes up, and moving the
// window resets every stripe's counters.
//
// A counter is one atomic uint64 holding the low 32 bits of its epoch in its
// high half and the count in its low half, so recording an outcome is a
// single atomic add, and the returned value says whether the add landed in
// the intended epoch. A counter is reset to a new epoch by one
// compare-and-swap of the whole word, which can lose no concurrent add: an
// add that lands just before the reset belonged to the old epoch.
//
// head is the newest epoch the window has been moved to. Invariant: every
// counter's epoch is in (head-16, head] (while the window is being moved,
// counters already reset may be ahead of head, with zero counts). So the
// full epoch of a counter is
// recovered from its 32-bit tag by its distance from head, and a bucket that
// has not been touched for any length of time can never be mistaken for a
// current one.
//
// Moving the window (the first outcome recorded in a new bucket) takes
// rollMu, resets with CAS every counter that falls out of the window, then
// publishes the new head. Writers whose instant is in the head bucket never
// lock. Writers whose instant is earlier than the head bucket (the clock went
// backwards, or a late caller) count in the head bucket: the window never
// moves backwards.

import (
	"sync/atomic"

	"github.com/heed-go/heed/internal/stripe"
)

const (
	countMask = 1<<32 - 1
	countMax  = 1 << 31 // a counter stays below this, far from overflowing into its tag
)

// bucket is one slot of the ring: [0] counts successes, [1] failures.
type bucket struct {
	n [2]atomic.Uint64
}

// ring is one stripe's copy of the window. The padding keeps the next
// stripe's counters off its cache lines (and off the adjacent line that
// some processors fetch in pairs).
type ring struct {
	b [numBuckets]bucket
	_ pad
}

// counters calls f with every counter of every stripe, and the slot it
// belongs to.
func (b *Breaker) counters(f func(slot int, c *atomic.Uint64)) {
	for i := range b.stripes {
		for j := range b.stripes[i].b {
			for k := range b.stripes[i].b[j].n {
				f(j, &b.stripes[i].b[j].n[k])
			}
		}
	}
}

func tagged(epoch int64, count uint64) uint64 { return uint64(uint32(epoch))<<32 | count }

// epochOf returns the full epoch of counter value v, given the head epoch h
// it was read against (the invariant bounds the distance).
func epochOf(v uint64, h int64) int64 {
	return h - int64(int32(uint32(h)-uint32(v>>32)))
}

// slotEpoch returns the epoch that slot j holds in the window ending at e.
func slotEpoch(e int64, j int) int64 {
	return e - int64(uint64(e-int64(j))&bucketMask)
}

// initWindow sets every counter to an empty bucket of the window ending at
// head, establishing the invariant.
func (b *Breaker) initWindow(head int64) {
	b.head.Store(head)
	b.counters(func(j int, c *atomic.Uint64) { c.Store(tagged(slotEpoch(head, j), 0)) })
}

// add counts one outcome (kind 0: success, 1: failure) at n nanoseconds.
func (b *Breaker) add(n int64, kind uint) {
	h := b.head.Load()
	// n is in the head bucket when 0 <= n - h*width < width; computed in
	// wrapping unsigned arithmetic, which is exact for any n.
	if uint64(n-h*b.width) >= uint64(b.width) {
		h = b.advance(n)
	}
	c := &b.stripes[stripe.Of()].b[h&bucketMask].n[kind&1]
	if v := c.Add(1); uint32(v>>32) != uint32(h) || uint32(v) >= countMax {
		unsaturate(c, v)
	}
}

// unsaturate handles the rare results of an add: if the counter reached
// countMax, it takes the add back. (If the tag is not the epoch the add
// aimed at, the window moved on meanwhile and the outcome is simply counted
// in the newer bucket.)
func unsaturate(c *atomic.Uint64, v uint64) {
	for uint32(v) >= countMax {
		cur := c.Load()
		if cur>>32 != v>>32 || uint32(cur) == 0 {
			return // reset meanwhile: nothing to take back
		}
		if c.CompareAndSwap(cur, cur-1) {
			return
		}
	}
}

// advance moves the window forward so that its newest bucket contains n,
// and returns the head epoch to count n in.
func (b *Breaker) advance(n int64) int64 {
	b.mustBeNew() // the zero Breaker has width 0 and ends up here
	e := floorDiv(n, b.width)
	if h := b.head.Load(); e <= h {
		return h // n is before the newest bucket: count it there
	}
	b.rollMu.Lock()
	defer b.rollMu.Unlock()
	h := b.head.Load()
	if e <= h {
		return h // another goroutine moved the window meanwhile
	}
	// e > h, so e-h is positive, and exact in wrapping unsigned arithmetic.
	whole := uint64(e-h) >= numBuckets
	b.counters(func(j int, c *atomic.Uint64) {
		v := c.Load()
		if !whole && epochOf(v, h) > e-numBuckets {
			return // still inside the window
		}
		// Only writers of the old head bucket can race with us (writers
		// of newer instants wait on rollMu), and what they add belongs
		// to the old bucket.
		for !c.CompareAndSwap(v, tagged(slotEpoch(e, j), 0)) {
			v = c.Load()
		}
	})
	b.head.Store(e)
	return e
}

// sum returns the successes and failures in the window ending at the bucket
// of n (or at the head bucket, if that is newer).
func (b *Breaker) sum(n int64) (s, f uint64) {
	h := b.head.Load()
	cur := max(floorDiv(n, b.width), h)
	for i := range b.stripes {
		for j := range b.stripes[i].b {
			bk := &b.stripes[i].b[j]
			if v := bk.n[0].Load(); inWindow(epochOf(v, h), cur) {
				s += v & countMask
			}
			if v := bk.n[1].Load(); inWindow(epochOf(v, h), cur) {
				f += v & countMask
			}
		}
	}
	return s, f
}

func inWindow(epoch, cur int64) bool { return epoch <= cur && epoch > cur-numBuckets }

// clearWindow empties every bucket, keeping their epochs.
func (b *Breaker) clearWindow() {
	b.rollMu.Lock()
	defer b.rollMu.Unlock()
	b.counters(func(_ int, c *atomic.Uint64) {
		for v := c.Load(); !c.CompareAndSwap(v, v&^countMask); v = c.Load() {
		}
	})
}
