package breaker

// The sliding window.
//
// Time is cut into buckets of Window/16 nanoseconds; bucket e (its epoch)
// covers [e*width, (e+1)*width) in Unix nanoseconds. The window ending in
// epoch cur is made of the epochs cur-15 .. cur, kept in a ring of 16 slots:
// epoch e lives in slot e mod 16, and each slot remembers the epoch it
// counts, so a slot left over from an older epoch counts as empty.
//
// head is the newest epoch an outcome was counted in. An outcome whose
// instant is earlier (the clock went backwards, or a late caller) is counted
// in the head bucket: the window never moves backwards.
//
// A window is guarded by its Breaker's mutex.

const (
	numBuckets = 16 // a power of two, so that negative epochs map to slots with a mask
	bucketMask = numBuckets - 1
)

// bucket counts the outcomes of one epoch: n[0] successes, n[1] failures.
type bucket struct {
	epoch int64
	n     [2]uint64
}

type window struct {
	head    int64
	buckets [numBuckets]bucket
}

// init starts an empty window whose newest epoch is head.
func (w *window) init(head int64) {
	w.head = head
	for j := range w.buckets {
		w.buckets[j] = bucket{epoch: head - int64(uint64(head-int64(j))&bucketMask)}
	}
}

// add counts one outcome (kind 0: success, 1: failure) in epoch e, or in
// the head epoch if e is older.
func (w *window) add(e int64, kind int) {
	e = max(e, w.head)
	w.head = e
	bk := &w.buckets[e&bucketMask]
	if bk.epoch != e {
		*bk = bucket{epoch: e}
	}
	bk.n[kind]++
}

// sum returns the successes and failures in the window ending in epoch e
// (or in the head epoch, if that is newer).
func (w *window) sum(e int64) (s, f uint64) {
	cur := max(e, w.head)
	for _, bk := range w.buckets {
		if bk.epoch <= cur && bk.epoch > cur-numBuckets {
			s += bk.n[0]
			f += bk.n[1]
		}
	}
	return s, f
}

// clear empties every bucket.
func (w *window) clear() {
	for j := range w.buckets {
		w.buckets[j].n = [2]uint64{}
	}
}
