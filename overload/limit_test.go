package overload

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestVegasDecide(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name    string
		limit   float64
		rtt     time.Duration // the window's mean; the baseline is 100 ms
		peak    int
		dropped bool
		want    float64
	}{
		// No queue: grow by 6·log10(20) = 7.806.
		{"no queue: grow by beta", 20, 100 * ms, 20, false, 27.806180},
		{"light load says nothing", 20, 300 * ms, 9, false, 20},
		// 20 × (1 − 100/110) = 1.8 queued, below alpha 3·log10(20) = 3.9: grow by log10.
		{"small queue: grow by log10", 20, 110 * ms, 20, false, 21.301030},
		// 20 × (1 − 100/130) = 4.6 queued: between alpha and beta (7.8), hold.
		{"queue between alpha and beta holds", 20, 130 * ms, 20, false, 20},
		// 20 × (1 − 100/200) = 10 queued > beta: to 20 × 100/200 + alpha = 13.9.
		{"large queue: to the no-queue limit plus alpha", 20, 200 * ms, 20, false, 13.903090},
		{"never below half", 20, time.Second, 20, false, 10},
		{"a drop cuts a tenth whatever the latency", 20, 10 * ms, 20, true, 18},
		// 5 × (1 − 100/150) = 1.7 queued: above the step of 1, below alpha 3.
		{"steps are 1 below 10", 5, 150 * ms, 5, false, 6},
		{"clamped at the minimum", 1, 10 * ms, 1, true, 1},
		{"clamped at the maximum", 998, 100 * ms, 998, false, 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newVegas(int(tt.limit), 1, 1000, 10*time.Second)
			v.limit, v.baseline, v.peak, v.dropped = tt.limit, 100*ms, tt.peak, tt.dropped
			v.decide(tt.rtt)
			if d := v.limit - tt.want; d > 1e-5 || d < -1e-5 {
				t.Errorf("limit = %v, want %v", v.limit, tt.want)
			}
		})
	}
}

// A window is the samples of requests that started after the last change:
// ten of them, or a second's worth.
func TestVegasWindow(t *testing.T) {
	ms := time.Millisecond
	v := newVegas(20, 1, 1000, 10*time.Second)
	if got := v.sample(t0, 100*ms, 20, false); got < 27 {
		t.Fatalf("first sample: limit %v, want grown", got)
	}
	at := t0.Add(50 * ms)
	// Requests admitted before the change do not count.
	for i := range 20 {
		v.sample(at.Add(time.Duration(i)*ms), 300*ms, 27, false)
	}
	if v.n != 0 {
		t.Fatalf("window holds %d samples of requests admitted before the change, want 0", v.n)
	}
	at = t0.Add(500 * ms)
	for i := range 9 {
		if got := v.sample(at.Add(time.Duration(i)*ms), 300*ms, 27, false); got < 27 {
			t.Fatalf("sample %d of a window: limit %v changed early", i, got)
		}
	}
	if got := v.sample(at.Add(9*ms), 300*ms, 27, false); got > 15 {
		t.Errorf("after the tenth sample at 3× the baseline: limit %v, want about 27/3 + alpha", got)
	}
	// One sample a second is enough with little traffic.
	at = at.Add(2 * time.Second)
	before := v.limit
	if got := v.sample(at, 100*ms, 27, false); got <= before {
		t.Errorf("a sample after a second without a change: limit %v, want grown from %v", got, before)
	}
}

// The baseline is held through a sustained overload, renewed from light
// load, and renewed at the minimum limit (a service that got slower).
func TestVegasBaseline(t *testing.T) {
	ms := time.Millisecond
	v := newVegas(20, 1, 1000, time.Second)
	v.sample(t0, 100*ms, 20, false)
	// Eleven seconds of overload: every sample queued inside, at the limit.
	for i := range 110 {
		v.sample(t0.Add(time.Duration(i)*100*ms), 150*ms, int(v.limit), false)
	}
	if v.baseline != 100*ms {
		t.Errorf("after a sustained overload, baseline = %v, want 100ms kept", v.baseline)
	}
	// Light load at 130 ms (the service got slower), then a new period.
	at := t0.Add(12 * time.Second)
	v.sample(at, 130*ms, 1, false)
	v.sample(at.Add(time.Second), 140*ms, 1, false)
	if v.baseline != 130*ms {
		t.Errorf("after a light-load period at 130ms, baseline = %v, want 130ms", v.baseline)
	}
	// At the minimum limit, the service's own latency renews it.
	v.limit = 1
	at = at.Add(2 * time.Second)
	v.sample(at, 400*ms, 1, false)
	v.sample(at.Add(time.Second), 400*ms, 1, false)
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
