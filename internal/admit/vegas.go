package admit

import (
	"math"
	"time"
)

// vegas is the adaptive concurrency limit: TCP Vegas's rule applied to
// handlers in flight, as Netflix's VegasLimit applies it, decided once per
// window of samples as TCP Vegas decides once per round trip. Every
// finished request is a sample of its latency (its time in the handler,
// not in the queue) and of the requests in flight when it started. The
// lowest latency seen is the baseline, the latency with no queue. A
// sample that ran for rtt with n in flight says that n × baseline/rtt of
// them were being served and n × (1 − baseline/rtt) were waiting inside
// the handler (for a worker, a lock, a connection); a window averages
// both. The limit grows while the queue inside is small and shrinks when
// it passes beta, so that a handful of requests wait inside and everyone
// else waits in front, where the deadline, the caller and the queue-time
// bound can still refuse it cheaply.
//
// Three changes from Netflix's rule. Each sample's estimate is about its
// own in-flight count, not the current limit, so every sample counts
// however the limit moved since it started, and a capacity that drops is
// seen by the requests already inside; its queue inside is counted from
// the larger of the requests in flight when it started and when it ended,
// so that a queue building up is seen by the first slow requests, before
// the requests that met it finish (measured on the half-capacity chain:
// the cut a quarter of a second sooner, p99 395-430 ms, was 440-460 ms).
// Above beta the limit does not step
// down: it goes to the window's served count plus alpha (and to no less
// than half), so a capacity that halves is found in one window, not in
// dozens of steps. A window closes after 10 samples or a second, or after
// 3 whose queue inside is already above beta. The
// thresholds scale with log10 of that served count (alpha 3, beta 6,
// steps of 1 below 10). The limit moves only while at least half of it is
// used, and it follows alpha above the window's most in flight, down as
// well as up (down by a step a window): a limit far above the demand has
// never been tried, and when the capacity drops it lets a queue build
// inside before the first requests that met it finish (a limit that only
// grew was 31 for 20 in flight, from one window's jitter).
//
// Latency above the baseline is not always a queue. A service whose
// latency grows with every request in flight (contention, processor
// sharing: 1 s plus 10 ms per request in flight in heed sim spike) has no
// queue inside and no capacity cliff: it serves more, more slowly, with
// every request added; Vegas's estimate calls n·c/(L+n·c) of them waiting,
// and the limit settled where that is between alpha and beta, 23-24 in
// flight serving 19.5/s of the 40/s offered (67 in flight serve 40/s at
// 1.67 s), before, during and after the spike: it never recovered because
// it was never healthy. So the rule also fits served on in flight over the
// last ~64 samples (a regression, as BBR measures delivery rate against
// data in flight): while each request more in flight serves at least a
// quarter of a request more (gainGrow), the latency is contention and the
// limit grows as if nothing queued. A queue inside (a worker pool past its
// capacity) serves no more for a request more, its gain is near 0, and the
// Vegas rule applies unchanged (the half-capacity chain is as before).
//
// The baseline is kept, not averaged: a sustained overload leaves no sample
// without a queue, and a baseline that followed it would creep up and let
// the queue inside grow with it. It is renewed each probe period from
// samples taken at light load (fewer than limit/2 in flight), so it follows
// a service that got slower, and from every sample while the limit sits at
// its minimum (with one or two in flight nothing queues inside, so the
// latency is the service's own).
//
// vegas is pure: time comes in as arguments; the Core's caller locks around it.
type vegas struct {
	limit    float64
	min, max float64
	probe    time.Duration // how often the baseline is renewed

	baseline  time.Duration // the no-queue latency; 0 before the first sample
	lightMin  time.Duration // the lowest light-load latency of this probe period; 0: none
	floorMin  time.Duration // the lowest latency at the minimum limit this period; 0: none
	probeEnds time.Time     // the end of this probe period

	// The window, opened at opened: its samples' sums of requests waiting
	// inside and served, and the most in flight.
	opened        time.Time
	n             int
	queue, served float64
	inSum         float64 // the samples' in flight
	peak          int
	dropped       bool

	// Moving averages of the samples' in flight (x), served (y = x ×
	// baseline/rtt), x² and xy, over about regressFor samples: a
	// regression of served on in flight, whose slope is the gain.
	mx, my, mxx, mxy float64
	fit              bool
	held             float64 // the last gain measured
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
// handler when it started (itself included) and current when it ended
// (itself included), and returns the limit.
// dropped means it ran out of time: a hard sign of overload, which cuts
// the limit by a tenth whatever the latency.
func (v *vegas) sample(now time.Time, rtt time.Duration, inflight, current int, dropped bool) float64 {
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

	ratio := float64(v.baseline) / float64(rtt)
	v.regress(float64(inflight), float64(inflight)*ratio)
	v.n++
	v.queue += float64(max(inflight, current)) * (1 - ratio)
	v.served += float64(inflight) * ratio
	v.inSum += float64(inflight)
	v.peak = max(v.peak, inflight)
	v.dropped = v.dropped || dropped
	if v.n < windowSamples && now.Sub(v.opened) < windowMax && !v.urgent() {
		return v.limit
	}
	v.decide(v.queue/float64(v.n), v.served/float64(v.n))
	v.opened, v.n, v.queue, v.served, v.inSum, v.peak, v.dropped = now, 0, 0, 0, 0, 0, false
	return v.limit
}

// follow moves the limit to n, down by at most step a window: the most
// in flight of one window (ten samples, a fraction of a second) is a
// small sample of the demand, and a limit cut to alpha above it refuses
// the next burst (measured with heed sim spike: a service of 1 s and more
// at 40/s, its limit cut from 84 to 54 in one window of a lull).
func (v *vegas) follow(n, step float64) { v.limit = max(n, v.limit-step) }

// regressFor is how many samples the regression of served on in flight
// remembers, about.
const regressFor = 64

func (v *vegas) regress(x, y float64) {
	if !v.fit {
		v.mx, v.my, v.mxx, v.mxy, v.fit = x, y, x*x, x*y, true
		return
	}
	const a = 1.0 / regressFor
	v.mx += a * (x - v.mx)
	v.my += a * (y - v.my)
	v.mxx += a * (x*x - v.mxx)
	v.mxy += a * (x*y - v.mxy)
}

// gain is how many more requests are served for one more in flight, the
// slope of the regression: 1 below a capacity cliff, 0 for a queue,
// between for a service whose latency grows with every request in flight
// and whose throughput grows with it too (1/(1+n·c/L)² for latency L +
// c per request in flight). While in flight has varied by less than 2
// requests (a variance below 4) the slope says nothing and the last one
// measured is held: a limit pinned by its demand keeps its gain. A gain
// of 0 there cut the real chain's limit after the spike (1,093-1,108 of
// 1,200 served after it); one halved each window, or each 64 samples,
// as well. A held gain cannot keep a queue inside: contention still
// needs the latency within twice the baseline and the window's served
// count within a fifth of the fit.
func (v *vegas) gain() float64 {
	if v.varied() {
		v.held = (v.mxy - v.mx*v.my) / (v.mxx - v.mx*v.mx)
	}
	return v.held
}

// varied reports whether in flight varied enough for the regression's
// slope to mean something.
func (v *vegas) varied() bool { return v.mxx-v.mx*v.mx >= 4 }

// contention reports whether the latency of a window whose samples had
// queue waiting inside and served being served, on average, is
// contention, not a queue: its latency is at most twice the baseline
// (queue ≤ served; beyond it, points below a pool's capacity, where one
// more in flight is one more served, lift the slope of a pool past it to
// 0.25-0.48: TestAdaptiveFindsPool under -race), the gain is at least
// gainGrow, and the window served what the regression says for its in flight, to
// within a fifth (two steps at least). A capacity that drops serves less
// for as many in flight at once, before the regression's slope turns: it
// remembers ~64 samples from before the drop, when a pool below its
// capacity served one more for each request more (a gain of 1), and
// alone it would hold off the cut until a quarter of them are new.
func (v *vegas) contention(queue, served, step float64) bool {
	if queue > served {
		return false // at most twice the baseline latency
	}
	g := v.gain()
	if g < gainGrow {
		return false
	}
	if v.n == 0 {
		return true
	}
	want := v.my + g*(v.inSum/float64(v.n)-v.mx)
	return served >= want-max(2*step, want/5)
}

// gainGrow is the gain above which latency above the baseline is not
// read as a queue: the limit still grows while each request added in
// flight serves at least a quarter of a request more (for latency L + c
// per request in flight, up to L/c in flight, at twice L).
const gainGrow = 0.25

// step is the rule's unit for served requests in service: log10 of them,
// at least 1; alpha is 3 steps and beta 6.
func step(served float64) float64 { return max(1, math.Log10(max(served, 1))) }

// SteadyLimit is where the adaptive limit settles for a service that
// serves n requests at once at its no-queue latency (by Little's law, its
// capacity times that latency): n plus alpha, a few requests waiting
// inside so that a place freed is never idle. heed plan prints it.
func SteadyLimit(n float64) float64 { return n + 3*step(n) }

// urgent reports whether the window so far already says to shrink: three
// samples whose mean queue inside is above beta close it early, because a
// queue inside grows with every request admitted while the window fills.
func (v *vegas) urgent() bool {
	if v.n < 3 {
		return false
	}
	served := v.served / float64(v.n)
	return v.queue/float64(v.n) > 6*step(served)
}

// decide applies the rule to a closed window whose samples had queue
// requests waiting inside and served being served, on average.
func (v *vegas) decide(queue, served float64) {
	step := step(served)
	switch {
	case v.dropped:
		v.limit *= 0.9
	case float64(v.peak) < v.limit/2:
		// Too few in flight to say anything about the limit.
	case queue > step && v.contention(queue, served, step):
		// The latency grew with in flight, but so did the requests served:
		// contention, not a queue. Grow by a step while the most in flight
		// comes near the limit; never down here.
		v.limit = max(v.limit, min(v.limit+step, float64(v.peak)+3*step))
	case queue <= step:
		v.follow(min(v.limit+6*step, float64(v.peak)+3*step), step) // no queue inside: grow fast
	case queue < 3*step:
		v.follow(min(v.limit+step, float64(v.peak)+3*step), step)
	case queue > 6*step:
		v.limit = max(served+3*step, v.limit/2)
	}
	v.limit = min(max(v.limit, v.min), v.max)
}
