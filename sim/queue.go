package sim

// event is one thing scheduled to happen at a virtual time. Events at the
// same time happen in the order they were scheduled (seq).
type event struct {
	at   int64
	seq  uint64
	tok  uint64 // the token of the call when scheduled; stale if it changed
	idx  int32
	kind uint8
}

func (a *event) before(b *event) bool {
	return a.at < b.at || (a.at == b.at && a.seq < b.seq)
}

// evHeap is a 4-ary min-heap of events by (at, seq), backed by one slice
// that grows and is reused: no allocation per event. Four children per
// node halve the depth of a binary heap, and a node's children share a
// cache line or two.
type evHeap struct {
	a   []event
	seq uint64
}

func (h *evHeap) len() int { return len(h.a) }

func (h *evHeap) push(ev event) {
	h.seq++
	ev.seq = h.seq
	h.a = append(h.a, ev)
	a := h.a
	i := len(a) - 1
	for i > 0 {
		p := (i - 1) / 4
		if !ev.before(&a[p]) {
			break
		}
		a[i] = a[p]
		i = p
	}
	a[i] = ev
}

func (h *evHeap) pop() event {
	a := h.a
	top := a[0]
	n := len(a) - 1
	last := a[n]
	h.a = a[:n]
	a = a[:n]
	if n == 0 {
		return top
	}
	i := 0
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		m := c
		end := min(c+4, n)
		for k := c + 1; k < end; k++ {
			if a[k].before(&a[m]) {
				m = k
			}
		}
		if !a[m].before(&last) {
			break
		}
		a[i] = a[m]
		i = m
	}
	a[i] = last
	return top
}

// pool holds calls in pages that never move, so a *call stays valid while
// the pool grows, and reuses freed calls.
type pool struct {
	pages []*[pageSize]call
	free  []int32
	n     int32
}

const (
	pageBits = 10
	pageSize = 1 << pageBits
)

func (p *pool) at(i int32) *call {
	return &p.pages[i>>pageBits][i&(pageSize-1)]
}

func (p *pool) get() (int32, *call) {
	if k := len(p.free); k > 0 {
		i := p.free[k-1]
		p.free = p.free[:k-1]
		return i, p.at(i)
	}
	i := p.n
	if int(i>>pageBits) == len(p.pages) {
		p.pages = append(p.pages, new([pageSize]call))
	}
	p.n++
	return i, p.at(i)
}

func (p *pool) put(i int32) {
	c := p.at(i)
	*c = call{}
	p.free = append(p.free, i)
}

// ring is a FIFO queue of call indices on a growable ring buffer.
type ring struct {
	buf        []int32
	head, size int
}

func (r *ring) len() int { return r.size }

func (r *ring) push(v int32) {
	if r.size == len(r.buf) {
		nb := make([]int32, max(16, 2*len(r.buf)))
		for i := 0; i < r.size; i++ {
			nb[i] = r.buf[(r.head+i)%len(r.buf)]
		}
		r.buf, r.head = nb, 0
	}
	r.buf[(r.head+r.size)%len(r.buf)] = v
	r.size++
}

func (r *ring) pop() int32 {
	v := r.buf[r.head]
	r.head = (r.head + 1) % len(r.buf)
	r.size--
	return v
}

// lane is a FIFO of events that are scheduled in the order they happen, so
// it needs no heap: the own-timeout timers of one layer, whose ends are
// now + a fixed timeout. Most of them are stale by the time they come up
// (the attempt ended first), and a lane drops those for the cost of a
// comparison instead of a heap operation.
type lane struct {
	buf        []event
	head, size int
}

func (l *lane) len() int { return l.size }

func (l *lane) peek() *event { return &l.buf[l.head] }

func (l *lane) push(ev event) {
	if l.size == len(l.buf) {
		nb := make([]event, max(64, 2*len(l.buf)))
		for i := 0; i < l.size; i++ {
			nb[i] = l.buf[(l.head+i)%len(l.buf)]
		}
		l.buf, l.head = nb, 0
	}
	l.buf[(l.head+l.size)%len(l.buf)] = ev
	l.size++
}

func (l *lane) pop() event {
	ev := l.buf[l.head]
	l.head++
	if l.head == len(l.buf) {
		l.head = 0
	}
	l.size--
	return ev
}
