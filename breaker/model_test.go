package breaker

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

// model is a plain, single-threaded restatement of the breaker's rules, with
// a map for a window. The real Breaker must agree with it on every step of
// any sequence of calls over fixed instants.
type model struct {
	cfg                Config
	width              int64
	state              State
	gen                uint32
	inflight, succ     int
	openedAt, probedAt int64
	head               int64
	started            bool
	counts             map[int64][2]uint64
}

type modelPermit struct {
	gen   uint32
	probe bool
	ok    bool
}

func newModel(cfg Config) *model {
	return &model{cfg: cfg, width: int64(cfg.Window) / numBuckets, counts: map[int64][2]uint64{}}
}

func (m *model) epoch(n int64) int64 {
	e := floorDiv(n, m.width)
	if m.started && e < m.head {
		e = m.head
	}
	return e
}

func (m *model) sum(n int64) (s, f uint64) {
	cur := m.epoch(n)
	for e, c := range m.counts {
		if e > cur-numBuckets && e <= cur {
			s += c[0]
			f += c[1]
		}
	}
	return s, f
}

func (m *model) to(s State, n int64) {
	m.state, m.gen, m.inflight, m.succ = s, m.gen+1, 0, 0
	switch s {
	case Open:
		m.openedAt = n
	case HalfOpen:
		m.probedAt, m.inflight = n, 1
	case Closed:
		m.counts = map[int64][2]uint64{}
	}
}

func (m *model) allow(n int64) modelPermit {
	switch m.state {
	case Open:
		if d := n - m.openedAt; d < int64(m.cfg.Cooldown) {
			if d < 0 {
				m.openedAt = n
			}
			return modelPermit{}
		}
		m.to(HalfOpen, n)
		return modelPermit{gen: m.gen, probe: true, ok: true}
	case HalfOpen:
		if m.inflight < m.cfg.Probes {
			m.inflight++
			return modelPermit{gen: m.gen, probe: true, ok: true}
		}
		d := n - m.probedAt
		if d < 0 {
			m.probedAt = n
		}
		if d >= m.width*numBuckets {
			m.to(Open, n)
		}
		return modelPermit{}
	}
	return modelPermit{gen: m.gen, ok: true}
}

func (m *model) record(p modelPermit, n int64, o Outcome) {
	if !p.ok || p.gen != m.gen {
		return
	}
	if !p.probe {
		if o == Ignored {
			return
		}
		e := m.epoch(n)
		m.head, m.started = e, true
		c := m.counts[e]
		c[o]++
		m.counts[e] = c
		if s, f := m.sum(n); o == Failure && s+f >= uint64(m.cfg.MinCalls) && float64(f) >= m.cfg.FailureRatio*float64(s+f) {
			m.to(Open, n)
		}
		return
	}
	if m.inflight == 0 {
		return
	}
	switch o {
	case Failure:
		m.to(Open, n)
	case Success:
		if m.succ+1 >= m.cfg.Probes {
			m.to(Closed, n)
			return
		}
		m.inflight--
		m.succ++
		m.probedAt = n
	case Ignored:
		m.inflight--
		m.probedAt = n
	}
}

func (m *model) stateAt(n int64) State {
	if m.state == Open && n-m.openedAt >= int64(m.cfg.Cooldown) {
		return HalfOpen
	}
	return m.state
}

// steps of time between operations: small, around a bucket, around the
// cooldown and the window, and backwards.
var deltas = []time.Duration{
	0, 0, 0, 1, time.Millisecond, 624 * time.Millisecond, 625 * time.Millisecond,
	time.Second, 4 * time.Second, 5 * time.Second, 10 * time.Second, 11 * time.Second,
	-1, -time.Second, -time.Minute,
}

// runModel drives a Breaker and the model with the same operations, decoded
// from ops, and reports the first disagreement.
func runModel(t *testing.T, cfg Config, ops []byte) {
	t.Helper()
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m := newModel(cfg)
	var (
		real  [4]Permit
		mod   [4]modelPermit
		clock = base
	)
	for i := 0; i+1 < len(ops); i += 2 {
		op, arg := ops[i], ops[i+1]
		clock = clock.Add(deltas[int(arg)%len(deltas)])
		n := unixNano(clock)
		slot := int(arg>>4) % len(real)
		switch op % 5 {
		case 0, 1: // allow
			p, err := b.AllowAt(clock)
			mp := m.allow(n)
			if (err == nil) != mp.ok || (err != nil && !errors.Is(err, ErrOpen)) {
				t.Fatalf("op %d: AllowAt(+%v) = %v, model admits: %v", i/2, clock.Sub(base), err, mp.ok)
			}
			if err == nil && p.probe != mp.probe {
				t.Fatalf("op %d: AllowAt(+%v) probe = %v, model %v", i/2, clock.Sub(base), p.probe, mp.probe)
			}
			real[slot], mod[slot] = p, mp
		case 2, 3: // record
			o := Outcome(op / 5 % 3)
			real[slot].RecordAt(clock, o)
			m.record(mod[slot], n, o)
			real[slot], mod[slot] = Permit{}, modelPermit{}
		case 4: // record without forgetting the permit: a second record
			o := Outcome(op / 5 % 3)
			real[slot].RecordAt(clock, o)
			m.record(mod[slot], n, o)
		}
		if got, want := b.StateAt(clock), m.stateAt(n); got != want {
			t.Fatalf("op %d: StateAt(+%v) = %v, model %v", i/2, clock.Sub(base), got, want)
		}
		s, f := m.sum(n)
		if got := b.countsAt(clock); got != (Counts{int(s), int(f)}) {
			t.Fatalf("op %d: CountsAt(+%v) = %+v, model %d/%d", i/2, clock.Sub(base), got, s, f)
		}
	}
}

var modelConfigs = []Config{
	{MinCalls: 3, Probes: 2, Window: 10 * time.Second, Cooldown: 5 * time.Second, FailureRatio: 0.5},
	{MinCalls: 1, Probes: 1, Window: 10 * time.Second, Cooldown: 5 * time.Second, FailureRatio: 1},
	{MinCalls: 5, Probes: 3, Window: 10 * time.Second, Cooldown: 5 * time.Second, FailureRatio: 0.25},
}

func TestModel(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 2))
		ops := make([]byte, 2*(50+rng.IntN(400)))
		for i := range ops {
			ops[i] = byte(rng.Uint32())
		}
		runModel(t, modelConfigs[seed%uint64(len(modelConfigs))], ops)
	}
}

func FuzzModel(f *testing.F) {
	f.Add(uint8(0), []byte{0, 0, 2, 16, 0, 0, 7, 0})
	f.Add(uint8(1), []byte{0, 8, 2, 24, 0, 9, 1, 9, 17, 9})
	f.Fuzz(func(t *testing.T, c uint8, ops []byte) {
		runModel(t, modelConfigs[int(c)%len(modelConfigs)], ops)
	})
}
