package overload

import (
	"math"
	"time"
)

// vegas is the adaptive concurrency limit: TCP Vegas's rule applied to
// handlers in flight, as Netflix's VegasLimit applies it, decided once per
// window as TCP Vegas decides once per round trip. Every finished request
// is a sample of its latency (its time in the handler, not in the queue).
// The lowest latency seen is the baseline, the latency with no queue; a
// window's queue estimate is limit × (1 − baseline/latency), latency being
// the window's mean: the requests that waited inside the handler (for a
// worker, a lock, a connection) rather than ran. The limit grows while
// that estimate is small and shrinks when it passes beta, so that a
// handful of requests wait inside and everyone else waits in front, where
// the deadline, the caller and the queue-time bound can still refuse it
// cheaply.
//
// A window holds the samples of requests that started after the last
// change (so that a change is judged by its own effect, not by requests
// admitted before it), and closes after 10 of them or a second. The
// thresholds scale with log10 of the limit (alpha 3, beta 6, steps of 1 at
// limits below 10). Above beta the limit does not step down but jumps to
// what the latency says the handlers hold without a queue,
// limit × baseline/latency, plus alpha (and to no less than half): a
// capacity that halves is found in one window, not in dozens of steps.
//
// The baseline is kept, not averaged: a sustained overload leaves no sample
// without a queue, and a baseline that followed it would creep up and let
// the queue inside grow with it. It is renewed each probe period from
// samples taken at light load (fewer than limit/2 in flight), so it follows
// a service that got slower, and from every sample while the limit sits at
// its minimum (with one or two in flight nothing queues inside, so the
// latency is the service's own).
//
// vegas is pure: time comes in as arguments; the Limiter locks around it.
type vegas struct {
	limit    float64
	min, max float64
	probe    time.Duration // how often the baseline is renewed

	baseline  time.Duration // the no-queue latency; 0 before the first sample
	lightMin  time.Duration // the lowest light-load latency of this probe period; 0: none
	floorMin  time.Duration // the lowest latency at the minimum limit this period; 0: none
	probeEnds time.Time     // the end of this probe period

	// The window: samples of requests that started after since.
	since   time.Time
	n       int
	sum     time.Duration
	peak    int // the most in flight any of them saw
	dropped bool
}

// A window closes after windowSamples samples or windowMax.
const (
	windowSamples = 10
	windowMax     = time.Second
)

func newVegas(initial, lo, hi int, probe time.Duration) vegas {
	return vegas{limit: float64(initial), min: float64(lo), max: float64(hi), probe: probe}
}

// sample records a request that ran for rtt with inflight requests in the
// handler when it started (itself included), and returns the limit.
// dropped means it ran out of time: a hard sign of overload, which cuts
// the limit by a tenth whatever the latency.
func (v *vegas) sample(now time.Time, rtt time.Duration, inflight int, dropped bool) float64 {
	if rtt <= 0 {
		rtt = 1
	}
	if v.probeEnds.IsZero() {
		v.probeEnds = now.Add(v.probe)
	}
	if !now.Before(v.probeEnds) {
		// Renew the baseline from what this period saw at light load or at
		// the minimum limit; keep it when the period saw neither.
		switch {
		case v.lightMin > 0:
			v.baseline = v.lightMin
		case v.floorMin > 0:
			v.baseline = v.floorMin
		}
		v.lightMin, v.floorMin = 0, 0
		v.probeEnds = now.Add(v.probe)
	}
	if float64(inflight) < v.limit/2 && (v.lightMin == 0 || rtt < v.lightMin) {
		v.lightMin = rtt
	}
	if v.limit <= v.min && (v.floorMin == 0 || rtt < v.floorMin) {
		v.floorMin = rtt
	}
	if v.baseline == 0 || rtt < v.baseline {
		v.baseline = rtt
	}

	if now.Add(-rtt).Before(v.since) {
		return v.limit // admitted under an older limit
	}
	v.n++
	v.sum += rtt
	v.peak = max(v.peak, inflight)
	v.dropped = v.dropped || dropped
	if v.n < windowSamples && now.Sub(v.since) < windowMax && !v.since.IsZero() {
		return v.limit
	}
	v.decide(v.sum / time.Duration(v.n))
	v.since, v.n, v.sum, v.peak, v.dropped = now, 0, 0, 0, false
	return v.limit
}

// decide applies the rule to a closed window whose mean latency was rtt.
func (v *vegas) decide(rtt time.Duration) {
	step := max(1, math.Log10(v.limit))
	switch {
	case v.dropped:
		v.limit *= 0.9
	case float64(v.peak) < v.limit/2:
		// Too few in flight to say anything about the limit.
	default:
		ratio := float64(v.baseline) / float64(rtt)
		queue := v.limit * (1 - ratio)
		switch {
		case queue <= step:
			v.limit += 6 * step // no queue inside: grow fast
		case queue < 3*step:
			v.limit += step
		case queue > 6*step:
			v.limit = max(v.limit*ratio+3*step, v.limit/2)
		}
	}
	v.limit = min(max(v.limit, v.min), v.max)
}
