package admit

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestVegasDecide(t *testing.T) {
	tests := []struct {
		name          string
		limit         float64
		peak          int
		queue, served float64 // a window's means
		dropped       bool
		gain          float64 // served per request more in flight
		want          float64
	}{
		// No queue: grow by 6·log10(20) = 7.806.
		{"no queue: grow by beta", 20, 30, 0, 20, false, 0, 27.806180},
		// At most alpha 3·log10(10) above the 10 in flight.
		{"growth stops at alpha above the most in flight", 10, 10, 0, 10, false, 0, 13},
		{"light load says nothing", 20, 9, 5, 4, false, 0, 20},
		// 30 far above the 16 in flight: down towards alpha 3·log10(12)
		// above them, by a step of log10(12) a window.
		{"follows alpha above the most in flight down", 30, 16, 0, 12, false, 0, 30 - 1.0791812},
		{"follows it down no further than alpha above it", 20, 16, 0, 12, false, 0, 16 + 3*1.0791812},
		// 2 waiting, below alpha 3·log10(18 served) = 3.8: grow by log10(18).
		{"small queue: grow by log10", 20, 20, 2, 18, false, 0, 21.255273},
		{"queue between alpha and beta holds", 20, 20, 5, 15, false, 0, 20},
		// 10 waiting > beta 6·log10(10): to the 10 served plus alpha 3.
		{"large queue: to those served plus alpha", 20, 20, 10, 10, false, 0, 13},
		{"never below half", 20, 20, 18, 2, false, 0, 10},
		{"a drop cuts a tenth whatever the latency", 20, 20, 0, 20, true, 0, 18},
		// 27 of 67 in flight waiting by the estimate, above beta, but each
		// request more in flight serves 0.36 more: contention, grow by
		// log10(40).
		{"latency that serves more is not a queue", 67, 67, 27, 40, false, 0.36, 68.60206},
		{"but its growth stops at alpha above the most in flight", 67, 60, 27, 40, false, 0.36, 67},
		{"a queue that serves no more is", 67, 67, 27, 40, false, 0.1, 40 + 3*1.60206},
		// 60 waiting, 40 served: above twice the baseline latency, a
		// queue whatever the gain; to the 40 served plus alpha, but no
		// less than half.
		{"beyond twice the baseline latency it is a queue", 100, 100, 60, 40, false, 0.36, 50},
		// 1.7 waiting: above the step of 1, below alpha 3.
		{"steps are 1 below 10", 5, 5, 1.7, 3.3, false, 0, 6},
		{"clamped at the minimum", 1, 1, 0, 1, true, 0, 1},
		{"clamped at the maximum", 998, 998, 0, 998, false, 0, 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newVegas(int(tt.limit), 1, 1000, 10*time.Second)
			v.limit, v.peak, v.dropped = tt.limit, tt.peak, tt.dropped
			// A regression of slope tt.gain, in flight varying by 10.
			v.mx, v.my, v.mxx = 50, 40, 50*50+100
			v.mxy = v.mx*v.my + tt.gain*100
			v.decide(tt.queue, tt.served)
			if d := v.limit - tt.want; d > 1e-5 || d < -1e-5 {
				t.Errorf("limit = %v, want %v", v.limit, tt.want)
			}
		})
	}
}

// The gain tells contention from a queue: a service of 1 s plus 10 ms
// per request in flight serves more with every request added (a third
// of one more at 60 in flight), a pool of 12 workers past its capacity
// serves no more, and neither says anything while in flight does not vary.
func TestVegasGain(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name   string
		rtt    func(n int) time.Duration
		lo, hi int // in flight varies over lo..hi
		min    float64
		max    float64
	}{
		{"contention", func(n int) time.Duration { return time.Second + time.Duration(n-1)*10*ms }, 40, 80, gainGrow, 0.5},
		{"a queue", func(n int) time.Duration { return 200 * ms * time.Duration(max(n, 12)) / 12 }, 14, 24, -0.05, 0.05},
		{"in flight steady", func(n int) time.Duration { return time.Second + time.Duration(n-1)*10*ms }, 60, 61, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newVegas(20, 1, 1000, 10*time.Second)
			v.baseline = tt.rtt(1)
			for i := range 200 {
				n := tt.lo + (i*7)%(tt.hi-tt.lo+1)
				v.regress(float64(n), float64(n)*float64(v.baseline)/float64(tt.rtt(n)))
			}
			if g := v.gain(); g < tt.min || g > tt.max {
				t.Errorf("gain %.3f, want %.2f to %.2f", g, tt.min, tt.max)
			}
		})
	}
}

// A gain measured while in flight varied is held while it then sits
// steady (at a limit its demand fills): the slope says nothing there, and
// a gain of 0 cut the real chain's limit after the spike.
func TestVegasGainHeld(t *testing.T) {
	rtt := func(n int) time.Duration { return time.Second + time.Duration(n-1)*10*time.Millisecond }
	v := newVegas(20, 1, 1000, 10*time.Second)
	v.baseline = rtt(1)
	feed := func(lo, hi int) {
		for i := range 400 {
			n := lo + (i*7)%(hi-lo+1)
			v.regress(float64(n), float64(n)*float64(v.baseline)/float64(rtt(n)))
			v.gain()
		}
	}
	feed(40, 80)
	if g := v.gain(); g < gainGrow {
		t.Fatalf("gain %.3f while in flight varied, want at least %.2f", g, gainGrow)
	}
	feed(70, 70)
	if v.varied() {
		t.Fatal("in flight still varies after 400 samples at 70")
	}
	if g := v.gain(); g < gainGrow || g > 0.5 {
		t.Errorf("gain %.3f after in flight sat steady, want the held gain, %.2f to 0.5", g, gainGrow)
	}
}

// A window is ten samples, or a second's worth; each sample's estimate
// is about its own in-flight count.
func TestVegasWindow(t *testing.T) {
	ms := time.Millisecond
	v := newVegas(20, 1, 1000, 10*time.Second)
	first := v.sample(t0, 100*ms, 20, 0, false)
	if first <= 20 {
		t.Fatalf("first sample: limit %v, want grown", first)
	}
	at := t0.Add(500 * ms)
	// 22 in flight at 1.1× the baseline: 2 waiting inside, between the
	// step and alpha: the window holds ten samples.
	for i := range 9 {
		if got := v.sample(at.Add(time.Duration(i)*ms), 110*ms, 22, 0, false); got != first {
			t.Fatalf("sample %d of a window: limit %v changed early", i, got)
		}
	}
	if got := v.sample(at.Add(9*ms), 110*ms, 22, 0, false); got == first {
		t.Errorf("after the tenth sample: limit %v unchanged", got)
	}
	// 24 in flight at 3× the baseline: 8 served, 16 waiting inside, above
	// beta: three samples close the window.
	at = at.Add(100 * ms)
	first = v.limit
	v.sample(at, 300*ms, 24, 0, false)
	v.sample(at.Add(ms), 300*ms, 24, 0, false)
	if got := v.sample(at.Add(2*ms), 300*ms, 24, 0, false); got != max(first/2, 11) {
		t.Errorf("after three samples with a queue inside: limit %v, want 8 served + alpha 3, but no less than half of %v", got, first)
	}
	// One sample a second is enough with little traffic.
	at = at.Add(2 * time.Second)
	before := v.limit
	if got := v.sample(at, 100*ms, 11, 0, false); got <= before {
		t.Errorf("a sample after a second: limit %v, want grown from %v", got, before)
	}
}

// The baseline is held through a sustained overload, renewed from light
// load, and renewed at the minimum limit (a service that got slower).
func TestVegasBaseline(t *testing.T) {
	ms := time.Millisecond
	v := newVegas(20, 1, 1000, time.Second)
	v.sample(t0, 100*ms, 20, 0, false)
	// Eleven seconds of overload: every sample queued inside, at the limit.
	for i := range 110 {
		v.sample(t0.Add(time.Duration(i)*100*ms), 150*ms, int(v.limit), 0, false)
	}
	if v.baseline != 100*ms {
		t.Errorf("after a sustained overload, baseline = %v, want 100ms kept", v.baseline)
	}
	// Light load at 130 ms (the service got slower), then a new period.
	at := t0.Add(12 * time.Second)
	v.sample(at, 130*ms, 1, 0, false)
	v.sample(at.Add(time.Second), 140*ms, 1, 0, false)
	if v.baseline != 130*ms {
		t.Errorf("after a light-load period at 130ms, baseline = %v, want 130ms", v.baseline)
	}
	// At the minimum limit, the service's own latency renews it.
	v.limit = 1
	at = at.Add(2 * time.Second)
	v.sample(at, 400*ms, 1, 0, false)
	v.sample(at.Add(time.Second), 400*ms, 1, 0, false)
	if v.baseline != 400*ms {
		t.Errorf("after a period at the minimum limit, baseline = %v, want 400ms", v.baseline)
	}
}

func TestCodel(t *testing.T) {
	ms := time.Millisecond
	type obs struct {
		at   time.Duration // since t0
		wait time.Duration
	}
	tests := []struct {
		name   string
		obs    []obs
		queued bool
		at     time.Duration
		want   time.Duration
	}{
		{"fresh: one interval", nil, false, 0, 100 * ms},
		{"a wait of zero in the interval: not overloaded", []obs{{0, 0}, {10 * ms, 50 * ms}}, true, 110 * ms, 100 * ms},
		{"every wait above target: overloaded", []obs{{0, 0}, {100 * ms, 6 * ms}, {150 * ms, 20 * ms}}, true, 200 * ms, 10 * ms},
		{"at the target is not above it", []obs{{0, 0}, {100 * ms, 5 * ms}, {150 * ms, 5 * ms}}, true, 200 * ms, 100 * ms},
		{"an interval where nobody left while some waited", []obs{{0, 0}, {100 * ms, 6 * ms}}, true, 350 * ms, 10 * ms},
		{"an idle interval", []obs{{0, 0}, {100 * ms, 6 * ms}}, false, 350 * ms, 100 * ms},
		{"recovers when the queue empties", []obs{{0, 0}, {100 * ms, 6 * ms}, {200 * ms, 20 * ms}, {250 * ms, 0}}, false, 300 * ms, 100 * ms},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCodel(5*ms, 100*ms)
			for _, o := range tt.obs {
				c.observe(t0.Add(o.at), o.wait, tt.queued)
			}
			if got := c.bound(t0.Add(tt.at), tt.queued); got != tt.want {
				t.Errorf("bound = %v, want %v", got, tt.want)
			}
		})
	}
}

// A sample's queue inside is counted from the larger of the requests in
// flight when it started and when it ended: a queue that built up while
// it ran is seen by it.
func TestVegasQueueCountsCurrent(t *testing.T) {
	ms := time.Millisecond
	v := newVegas(30, 1, 1000, 10*time.Second)
	v.sample(t0, 100*ms, 10, 10, false) // the baseline
	for i := range 3 {
		// Started with 16 in flight, ended with 28: at 1.5 × the baseline,
		// 9.3 waiting inside, above beta 6·log10(10.7 served).
		v.sample(t0.Add(time.Duration(i+1)*ms), 150*ms, 16, 28, false)
	}
	if v.limit >= 30 {
		t.Errorf("limit %v after three samples that ended with a queue of 9.3 inside, want cut from 30", v.limit)
	}
	// The same samples had the queue been counted at their start: 5.3
	// waiting, below beta: no cut.
	w := newVegas(30, 1, 1000, 10*time.Second)
	w.sample(t0, 100*ms, 10, 10, false)
	for i := range 3 {
		w.sample(t0.Add(time.Duration(i+1)*ms), 150*ms, 16, 16, false)
	}
	if w.limit < 30 {
		t.Errorf("limit %v with the queue counted at the start, want 30 kept", w.limit)
	}
}

// A pool that served one more for each request more in flight (a gain of
// 1) and then lost half its workers is a queue at once: the window serves
// less than the regression says for its in flight, so the limit is cut
// to those served plus alpha, not grown on the old gain.
func TestVegasCapacityDropIsAQueue(t *testing.T) {
	v := newVegas(28, 1, 1000, 10*time.Second)
	for i := range 64 {
		n := float64(14 + i%11) // 14..24 in flight, all served
		v.regress(n, n)
	}
	if g := v.gain(); g < 0.9 {
		t.Fatalf("gain %.2f below the capacity, want about 1", g)
	}
	// A window after the drop: 26 in flight, 12 served, 14 waiting.
	v.peak, v.n, v.inSum = 26, 1, 26
	v.decide(14, 12)
	if want := 12 + 3*1.0791812; v.limit-want > 1e-5 || want-v.limit > 1e-5 {
		t.Errorf("limit %v after the drop, want %v: 12 served plus alpha", v.limit, want)
	}
}
