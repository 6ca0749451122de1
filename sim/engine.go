package sim

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/heed-go/heed/breaker"
	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/internal/admit"
	"github.com/heed-go/heed/retry"
)

// Options tune a run without changing its result ([Run], [RunSeeds]); the
// zero value is none.
type Options struct {
	// Progress, when set, is called now and then during each chain's run
	// (every 65,536 events) with the chain's index and the virtual time
	// reached, and once at the end with the horizon. It must not block for
	// long.
	Progress func(chain int, at time.Duration)
	// Context, when set, stops the runs early once it is done: Run then
	// returns its error. It is checked as often as Progress is called.
	Context context.Context
}

// Run runs the scenario once for each of its chains, in order, and
// returns their results. It returns an error matching [ErrInvalid] for an
// invalid scenario, and o.Context's error when it ends before the runs do.
// The same scenario gives the same results, to the byte, whatever o.
func Run(s Scenario, o Options) ([]*Result, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	out := make([]*Result, len(s.Chains))
	for i := range s.Chains {
		var progress func(time.Duration)
		if o.Progress != nil {
			progress = func(at time.Duration) { o.Progress(i, at) }
		}
		e := newEngine(&s, i, progress)
		e.ctx = o.Context
		if out[i] = e.run(); out[i] == nil {
			return nil, e.ctx.Err()
		}
	}
	return out, nil
}

// epoch is virtual time zero as a time.Time. It carries no monotonic
// reading, so budgets and breakers place it by its wall-clock value, and
// it is fixed, so runs do not depend on when they happen.
var epoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// Errors the bottom service fails attempts with. They are made once, so a
// failure allocates nothing. All are transient to heed's classifier, as
// the real ones would be.
var (
	errRefused    = retry.Transient(errors.New("connection refused"))
	errOverloaded = retry.Transient(errors.New("503 overloaded"))
	errFailed     = retry.Transient(errors.New("500 internal error"))
	errExpired    = retry.Transient(errors.New("504 deadline expired before service"))
	errTimeout    = errors.New("attempt timed out")
	// errUpstreamOpen is what a layer whose breaker refused a call answers
	// its caller: over HTTP, a heed server's 5xx with Upstream-Breaker:
	// open, which retryhttp neither retries nor counts in its breaker.
	errUpstreamOpen = retry.Permanent(errors.New("503 upstream breaker open"))
	// errCtx is what a call ends with when its caller's deadline passes
	// (retry.Do returns ctx.Err()); heed does not retry it.
	errCtx = errors.New("context deadline exceeded")
)

// Event kinds.
const (
	evArrival = iota
	evRetry   // the backoff of call idx ended: next attempt
	evTimer   // the attempt of call idx ran out of time
	evServed  // bottom job idx finished service
	evOutage  // an outage starts: fail the queue
	evWaited  // bottom job idx waited in the overload queue as long as it may
	evHedge   // the hedge delay of call idx's attempt ended: send a hedge
)

// What an attempt's timer means.
const (
	endOwn      = iota // the attempt's own timeout: a transient timeout
	endBudget          // the policy's TimeBudget
	endDeadline        // the caller's deadline: the call ends
)

const never = math.MaxInt64

// call is one invocation of a layer's retry loop, or, at the bottom, one
// attempt held by the service (a job). Calls live in a pool and are reused.
type call struct {
	rc      retry.Call // the call protocol's state
	err     error      // the last attempt's error
	tok     uint64     // changes whenever the call moves on; timers carry it
	ptok    uint64     // the parent's attempt token this call serves
	start   int64      // virtual start
	dl      int64      // deadline, virtual; never for none
	parent  int32      // index of the caller, or -1 for a user request
	layer   int16      // the layer; nlayers for a job at the bottom
	aend    int64      // the end of the attempt in flight, virtual; never for none
	endKind uint8
	waiting bool // an attempt is in flight
	fault   bool // a user request that arrived during a fault
	hedge   bool // a hedge of its parent's attempt (retry.Call.Hedge)
	racers  int8 // attempts of the race in flight (the attempt and its hedges)

	// A job behind the overload control: admitted at admAt with admN in
	// flight (held: it holds a place until it leaves the service), or
	// waiting in its queue (w).
	held  bool
	timed bool
	admN  int32
	admAt int64
	w     *waiter
}

type layerRT struct {
	policy retry.Policy // with the layer's budget and breaker set
	owned  bool         // a layer above owns retries
	share  float64      // the attempt share; 0: none
	sends  bool         // it sends Retry-Attempt: it claims the retries
}

type faultRT struct {
	kind       FaultKind
	start, end int64
	factor     float64
	rate       float64
	depth      int
}

type engine struct {
	// script, when set (by the executor conformance test), replaces the
	// bottom service's behaviour: the n-th job served (from 1) takes
	// latency and fails with err. decided, when set, sees every decision.
	script  func(n int) (err error, latency time.Duration)
	scriptN int
	decided func(retry.Decision)

	sc        *Scenario
	pol       *Chain
	layers    []layerRT
	nlayers   int16
	propagate bool

	now     int64
	tnow    time.Time
	horizon int64
	tok     uint64

	ev    evHeap
	lanes []lane // own-timeout timers, one lane per layer
	pool  pool

	arrRand  *rand.Rand // arrivals only, so every policy sees the same users
	rng      *rand.PCG  // everything else
	rnd      *rand.Rand
	rate     float64
	constant bool
	deadline int64

	faults    []faultRT
	rateEdges []int64 // times the arrival rate changes, ascending
	// arrivalsEnd, when set, ends arrivals before the horizon, so that
	// the calls under way finish (the over-time suite's executor).
	arrivalsEnd int64

	// bottom service
	conc        int
	svcTime     float64
	exponential bool
	loadLat     int64
	qlimit      int
	errRate     float64
	slowShare   float64
	slowTime    float64
	busy        int
	queue       ring
	adm         *admit.Core // the overload control in front; nil: none
	plainWire   bool        // Chain.plainWire
	woken       []woken     // waiters the Core answered, to act on
	waking      bool

	// metrics
	interval int64
	cur      int
	series   []Point
	ihist    hist
	thist    hist
	sum      Summary
	giveUps  [32]int64
	events   int64
	progress func(time.Duration)
	ctx      context.Context
}

func newEngine(s *Scenario, i int, progress func(time.Duration)) *engine {
	p := &s.Chains[i]
	e := &engine{
		sc:        s,
		pol:       p,
		nlayers:   int16(len(p.Layers)),
		propagate: p.PropagateDeadline,
		horizon:   int64(s.Horizon),
		tnow:      epoch,
		arrRand:   rand.New(rand.NewPCG(s.Seed, 0x9e3779b97f4a7c15)),
		rng:       rand.NewPCG(s.Seed, 0xda942042e4dd58b5),
		rate:      s.Load.Rate,
		constant:  s.Load.Arrival == Constant,
		deadline:  int64(s.Load.Deadline),

		conc:        s.Service.Concurrency,
		svcTime:     float64(s.Service.ServiceTime),
		exponential: s.Service.Exponential,
		loadLat:     int64(s.Service.LoadLatency),
		qlimit:      s.Service.QueueLimit,
		errRate:     s.Service.ErrorRate,
		slowShare:   s.Service.SlowShare,
		slowTime:    float64(s.Service.SlowTime),

		interval: int64(s.interval()),
		progress: progress,
	}
	e.rnd = rand.New(e.rng)
	if p.Overload != nil {
		e.adm = admit.New(admitConfig(p.Overload))
		e.plainWire = p.plainWire
	}
	e.lanes = make([]lane, len(p.Layers))
	claimed := false // the layer above sends Retry-Attempt
	for _, l := range p.Layers {
		rt := layerRT{policy: l.Retry, owned: claimed && !l.OwnershipOff}
		if rt.policy.Budget == nil { // set only by the conformance test
			rt.policy.Budget, _ = budget.New(l.Budget) // validated; nil when off
		}
		if l.Breaker != nil {
			rt.policy.Breaker, _ = breaker.New(*l.Breaker) // validated
		}
		if h := l.Retry.Hedge; h != nil {
			// Each run learns its own latencies, so that runs repeat.
			rt.policy.Hedge = &retry.Hedge{Delay: h.Delay, Quantile: h.Quantile, MinDelay: h.MinDelay, MaxDelay: h.MaxDelay, Max: h.Max}
		}
		rt.share = max(l.AttemptShare, 0)
		rt.policy.Rand = e.rng
		e.layers = append(e.layers, rt)
		// As retryhttp: a layer claims the retries when it may retry, or
		// passes on the claim of a layer above.
		claimed = rt.owned || rt.policy.MaxAttempts() != 1
		e.layers[len(e.layers)-1].sends = claimed
	}
	for _, f := range s.Faults {
		if int64(f.Start) >= e.horizon {
			continue
		}
		fr := faultRT{kind: f.Kind, start: int64(f.Start), end: min(int64(f.End), e.horizon), factor: f.Factor, rate: f.Rate, depth: f.Depth}
		e.faults = append(e.faults, fr)
		if f.Kind == Spike {
			e.rateEdges = append(e.rateEdges, fr.start, fr.end)
		}
		e.sum.FaultEnd = max(e.sum.FaultEnd, time.Duration(fr.end))
	}
	sort.Slice(e.rateEdges, func(i, j int) bool { return e.rateEdges[i] < e.rateEdges[j] })
	n := (e.horizon + e.interval - 1) / e.interval
	e.series = make([]Point, n)
	for k := range e.series {
		e.series[k].At = time.Duration(int64(k) * e.interval)
	}
	return e
}

func (e *engine) run() *Result {
	for i, f := range e.faults {
		if f.kind == Outage {
			e.push(f.start, evOutage, int32(i), 0)
		}
	}
	if e.arrivalsEnd == 0 {
		e.arrivalsEnd = e.horizon
	}
	if t := e.nextArrival(0, true); t < e.arrivalsEnd {
		e.push(t, evArrival, 0, 0)
	}
	const progressEvery = 1 << 16
	for {
		ev, ok := e.next()
		if !ok || ev.at >= e.horizon {
			break
		}
		if ev.at != e.now {
			e.now = ev.at
			e.tnow = epoch.Add(time.Duration(ev.at))
			if k := int(ev.at / e.interval); k != e.cur {
				e.rollTo(k)
			}
		}
		switch ev.kind {
		case evArrival:
			e.arrive()
			if t := e.nextArrival(e.now, false); t < e.arrivalsEnd {
				e.push(t, evArrival, 0, 0)
			}
		case evRetry:
			c := e.pool.at(ev.idx)
			if c.tok != ev.tok {
				continue // stale
			}
			e.attempt(ev.idx, c)
		case evTimer:
			c := e.pool.at(ev.idx)
			if c.tok != ev.tok || !c.waiting {
				continue // stale: the attempt ended before its timer
			}
			e.expire(ev.idx, c)
		case evServed:
			e.served(ev.idx)
		case evOutage:
			e.outageStarts()
		case evWaited:
			if j := e.pool.at(ev.idx); j.w != nil && j.tok == ev.tok {
				e.waited(ev.idx, j)
			}
		case evHedge:
			c := e.pool.at(ev.idx)
			if c.tok != ev.tok || !c.waiting {
				continue // stale: the attempt ended before its hedge was due
			}
			e.hedge(ev.idx, c)
		}
		e.events++
		if e.events%progressEvery == 0 {
			if e.progress != nil {
				e.progress(time.Duration(e.now))
			}
			if e.ctx != nil && e.ctx.Err() != nil {
				return nil
			}
		}
	}
	e.rollTo(len(e.series))
	if e.progress != nil {
		e.progress(time.Duration(e.horizon))
	}
	return e.result()
}

// next removes and returns the next event: the earliest of the heap's and
// the lanes' (by time, then by the order they were scheduled).
func (e *engine) next() (event, bool) {
	var best *event
	from := -1
	if e.ev.len() > 0 {
		best = &e.ev.a[0]
	}
	for i := range e.lanes {
		l := &e.lanes[i]
		if l.len() > 0 {
			if h := l.peek(); best == nil || h.before(best) {
				best, from = h, i
			}
		}
	}
	switch {
	case best == nil:
		return event{}, false
	case from < 0:
		return e.ev.pop(), true
	}
	return e.lanes[from].pop(), true
}

// push schedules an event.
func (e *engine) push(at int64, kind uint8, idx int32, tok uint64) {
	e.ev.push(event{at: at, kind: kind, idx: idx, tok: tok})
}

func (e *engine) token() uint64 {
	e.tok++
	return e.tok
}

// rollTo closes the intervals before k.
func (e *engine) rollTo(k int) {
	for e.cur < k && e.cur < len(e.series) {
		p := &e.series[e.cur]
		p.Queue = e.queue.len()
		p.InFlight = e.busy + e.queue.len()
		p.P50 = e.ihist.quantile(0.5)
		p.P99 = e.ihist.quantile(0.99)
		e.ihist.reset()
		e.cur++
	}
}

// --- arrivals ---

// rateAt returns the arrival rate at t and the next time it changes.
func (e *engine) rateAt(t int64) (float64, int64) {
	r := e.rate
	for _, f := range e.faults {
		if f.kind == Spike && f.start <= t && t < f.end {
			r *= f.factor
		}
	}
	next := int64(never)
	i := sort.Search(len(e.rateEdges), func(i int) bool { return e.rateEdges[i] > t })
	if i < len(e.rateEdges) {
		next = e.rateEdges[i]
	}
	return r, next
}

// nextArrival returns the time of the arrival after the one at t.
func (e *engine) nextArrival(t int64, first bool) int64 {
	for {
		r, edge := e.rateAt(t)
		var gap float64
		if e.constant {
			gap = 1e9 / r
			if first {
				gap = 0
			}
		} else {
			gap = e.arrRand.ExpFloat64() * 1e9 / r
		}
		next := float64(t) + gap
		if next < float64(edge) {
			return int64(next)
		}
		// The rate changes before the draw lands: draw again from the
		// change (exact for Poisson arrivals, which have no memory).
		t, first = edge, true
		if edge >= e.horizon {
			return never
		}
	}
}

func (e *engine) arrive() {
	e.series[e.cur].UserRequests++
	e.sum.UserRequests++
	idx, c := e.pool.get()
	c.fault = e.anyFault()
	if c.fault {
		e.sum.Fault.UserRequests++
	}
	c.parent = -1
	c.layer = 0
	c.dl = never
	if e.deadline > 0 {
		c.dl = e.now + e.deadline
	}
	e.startCall(idx, c)
}

// --- layers ---

// startCall begins call c at its layer: the first attempt, now.
func (e *engine) startCall(idx int32, c *call) {
	l := &e.layers[c.layer]
	c.start = e.now
	c.err = nil
	c.rc = retry.Call{Policy: l.policy, History: retry.History{UpstreamOwns: l.owned}}
	if c.dl != never {
		c.rc.History.Deadline = epoch.Add(time.Duration(c.dl))
	}
	e.attempt(idx, c)
}

// attempt makes the next attempt of call c, as the call protocol admits
// it: a call to the layer below, or a job at the bottom service.
func (e *engine) attempt(idx int32, c *call) {
	lim, ok := c.rc.Admit(e.tnow)
	if !ok {
		d := c.rc.Last()
		if e.decided != nil {
			e.decided(d)
		}
		up := c.err
		switch {
		case d.Reason == retry.ReasonDeadline || d.Reason == retry.ReasonTimeBudget:
			up = errCtx // retry.Do's attempt context would have ended
		case d.Reason == retry.ReasonBreakerOpen && c.parent >= 0:
			up = errUpstreamOpen // as a heed server answers it
		case c.rc.History.Attempts == 0:
			up = d.Err
		}
		e.finish(idx, c, up, d.Reason)
		return
	}
	shared := false
	if l := &e.layers[c.layer]; l.share > 0 && lim.Reason == retry.ReasonDeadline {
		// The share of the time left, as retryhttp takes it.
		lim2 := c.rc.ShareLimit(lim, e.tnow, l.share)
		shared = lim2 != lim
		lim = lim2
	}
	end, kind := int64(never), uint8(endOwn)
	if !lim.At.IsZero() {
		end = int64(lim.At.Sub(epoch))
		switch lim.Reason {
		case retry.ReasonTimeBudget:
			kind = endBudget
		case retry.ReasonDeadline:
			kind = endDeadline
		}
	}
	e.events++ // an attempt starts
	tok := e.token()
	c.tok = tok
	c.waiting = true
	c.aend = end
	c.endKind = kind
	cdl := int64(never)
	if e.propagate {
		cdl = end
	}
	c.racers = 1
	e.startChild(idx, c, tok, cdl, false)
	// The attempt may have ended already (an instant failure); the call,
	// and so its slot, then moved on.
	if c.tok == tok && c.waiting && e.layers[c.layer].policy.Hedge != nil {
		if at, ok := c.rc.HedgeAt(e.tnow); ok && int64(at.Sub(epoch)) < end {
			e.push(int64(at.Sub(epoch)), evHedge, idx, tok)
		}
	}
	if end != never && c.tok == tok && c.waiting {
		if kind == endOwn && !shared {
			// now + the layer's timeout: in time order, so a lane.
			e.ev.seq++
			e.lanes[c.layer].push(event{at: end, seq: e.ev.seq, kind: evTimer, idx: idx, tok: tok})
		} else {
			e.push(end, evTimer, idx, tok)
		}
	}
}

// startChild starts the attempt of call c (at idx) whose token is tok: a
// call to the layer below, or a job at the bottom service, with deadline
// cdl; hedge says it is a hedge of the attempt in flight.
func (e *engine) startChild(idx int32, c *call, tok uint64, cdl int64, hedge bool) {
	cidx, child := e.pool.get()
	child.parent = idx
	child.ptok = tok
	child.dl = cdl
	child.layer = c.layer + 1
	child.hedge = hedge
	switch {
	case len(e.faults) > 0 && e.blackHole(int(e.nlayers-child.layer)):
		// Accepted, never answered: the attempt's own limit ends it.
		if child.layer == e.nlayers {
			e.series[e.cur].Attempts++
			e.sum.Attempts++
			e.sum.Fault.Attempts++
		}
		e.pool.put(cidx)
	case child.layer < e.nlayers:
		e.startCall(cidx, child)
	default:
		e.submit(cidx, child)
	}
}

// hedge sends a hedge of the attempt of c in flight, as the call protocol
// admits it (retry.Call.Hedge), and schedules the next one. A race in the
// simulator ends at its first attempt's limit: a hedge's own later limit
// is not waited for.
func (e *engine) hedge(idx int32, c *call) {
	_, next, ok := c.rc.Hedge(e.tnow)
	if !ok {
		return
	}
	e.events++ // an attempt starts
	c.racers++
	tok := c.tok
	cdl := int64(never)
	if e.propagate {
		cdl = c.aend
	}
	e.startChild(idx, c, tok, cdl, true)
	if !next.IsZero() && c.tok == tok && c.waiting {
		if at := int64(next.Sub(epoch)); at < c.aend {
			e.push(at, evHedge, idx, tok)
		}
	}
}

// expire handles the timer of c's attempt.
func (e *engine) expire(idx int32, c *call) {
	c.waiting = false
	c.tok = e.token() // orphans the attempt in flight
	e.expireWith(idx, c, c.endKind)
}

func (e *engine) expireWith(idx int32, c *call, kind uint8) {
	if kind == endDeadline {
		// The caller's deadline: retry.Do returns ctx.Err(), and the
		// breaker learns nothing.
		c.rc.Abandon(e.tnow)
		e.finish(idx, c, errCtx, retry.ReasonDeadline)
		return
	}
	// The policy's own limit (the attempt's timeout, or TimeBudget)
	// cut the attempt off: a timeout, as in retry.Do and retryhttp.
	e.decide(idx, c, errTimeout, true)
}

// deliver hands the result of an attempt to the call that made it, if it
// is still waiting for it.
func (e *engine) deliver(parent int32, ptok uint64, err error, hedge bool) {
	p := e.pool.at(parent)
	if p.tok != ptok || !p.waiting {
		return
	}
	if p.racers > 1 && err != nil && err != errCtx {
		if o, _ := p.rc.Policy.Classify(err, false); o != retry.OutcomePermanent && o != retry.OutcomeRefused {
			// One attempt of a race failed in a way that may pass: the
			// others go on, and the next hedge goes now.
			p.racers--
			e.hedge(parent, p)
			return
		}
	}
	if err == errCtx && p.aend <= e.now {
		// The layer below ran out of the time this attempt gave it: this
		// attempt's own limit, whose timer fires at this instant. Over
		// HTTP the layer below answers a hair before it (its header
		// margin), and the caller cuts the attempt all the same.
		e.expire(parent, p)
		return
	}
	p.waiting = false
	e.decideRace(parent, p, err, false, hedge)
}

// decide ends the attempt of c that just ended through the call protocol.
func (e *engine) decide(idx int32, c *call, err error, timedOut bool) {
	e.decideRace(idx, c, err, timedOut, false)
}

// decideRace is decide for a result that may be a hedge's.
func (e *engine) decideRace(idx int32, c *call, err error, timedOut, hedge bool) {
	e.events++ // an attempt ends
	c.racers = 0
	d := c.rc.End(e.tnow, retry.Result{Err: err, TimedOut: timedOut, Hedge: hedge})
	if e.decided != nil {
		e.decided(d)
	}
	switch d.Action {
	case retry.Done:
		e.finish(idx, c, nil, retry.ReasonSuccess)
	case retry.GiveUp:
		e.finish(idx, c, err, d.Reason)
	default:
		c.err = err
		c.tok = e.token()
		e.push(e.now+int64(d.Delay), evRetry, idx, c.tok)
	}
}

// finish ends call c with err (nil for success) and passes the result up.
func (e *engine) finish(idx int32, c *call, err error, reason retry.Reason) {
	parent, ptok, start, fault, hedge := c.parent, c.ptok, c.start, c.fault, c.hedge
	e.pool.put(idx)
	if parent >= 0 {
		e.deliver(parent, ptok, err, hedge)
		return
	}
	if fault && err == nil {
		e.sum.Fault.Succeeded++
	}
	lat := e.now - start
	e.ihist.add(lat)
	e.thist.add(lat)
	p := &e.series[e.cur]
	if err == nil {
		p.Goodput++
		e.sum.Succeeded++
		return
	}
	p.Errors++
	e.sum.Failed++
	if int(reason) < len(e.giveUps) {
		e.giveUps[reason]++
	}
}

// --- the bottom service ---

func (e *engine) faultActive(kind FaultKind) bool {
	for i := range e.faults {
		f := &e.faults[i]
		if f.kind == kind && f.start <= e.now && e.now < f.end {
			return true
		}
	}
	return false
}

// blackHole reports whether a BlackHole is active now at depth (0: the
// bottom service).
func (e *engine) blackHole(depth int) bool {
	for i := range e.faults {
		if f := &e.faults[i]; f.kind == BlackHole && f.depth == depth && f.start <= e.now && e.now < f.end {
			return true
		}
	}
	return false
}

// anyFault reports whether a fault is active now.
func (e *engine) anyFault() bool {
	for i := range e.faults {
		if f := &e.faults[i]; f.start <= e.now && e.now < f.end {
			return true
		}
	}
	return false
}

// submit hands job j to the bottom service.
func (e *engine) submit(idx int32, j *call) {
	e.series[e.cur].Attempts++
	e.sum.Attempts++
	if len(e.faults) > 0 && e.anyFault() {
		e.sum.Fault.Attempts++
	}
	if len(e.faults) > 0 && e.faultActive(Outage) {
		e.fail(idx, j, errRefused)
		return
	}
	if e.adm != nil && !e.admit(idx, j) {
		return // refused, or waiting in the overload queue
	}
	e.enter(idx, j)
}

// enter hands job j to the service's workers, or its queue.
func (e *engine) enter(idx int32, j *call) {
	if e.conc == 0 || e.busy < e.conc {
		e.serve(idx, j)
		return
	}
	if e.qlimit == NoQueue || (e.qlimit > 0 && e.queue.len() >= e.qlimit) {
		e.fail(idx, j, errOverloaded)
		return
	}
	e.queue.push(idx)
}

// serve starts job j on a worker.
func (e *engine) serve(idx int32, j *call) {
	e.busy++
	st := e.svcTime
	if e.exponential && st > 0 {
		st *= e.rnd.ExpFloat64()
	}
	if e.slowShare > 0 && e.rnd.Float64() < e.slowShare {
		st = e.slowTime
	}
	for i := range e.faults {
		f := &e.faults[i]
		if f.kind == CapacityDrop && f.start <= e.now && e.now < f.end {
			st /= f.factor
		}
	}
	d := int64(st) + e.loadLat*int64(e.busy-1)
	if e.script != nil {
		e.scriptN++
		var lat time.Duration
		j.err, lat = e.script(e.scriptN)
		d = int64(lat)
	}
	j.tok = e.token()
	e.push(e.now+d, evServed, idx, j.tok)
}

// fail ends job j at once with err.
func (e *engine) fail(idx int32, j *call, err error) {
	parent, ptok, hedge := j.parent, j.ptok, j.hedge
	e.leave(j, err == errExpired)
	e.pool.put(idx)
	e.deliver(parent, ptok, err, hedge)
	e.wake()
}

// served finishes job j's service.
func (e *engine) served(idx int32) {
	j := e.pool.at(idx)
	e.busy--
	var err error
	if e.script != nil {
		err = j.err
	} else if len(e.faults) > 0 && e.faultActive(Outage) {
		err = errRefused
	} else if r := e.errorRate(); r > 0 && e.rnd.Float64() < r {
		err = errFailed
	}
	parent, ptok, hedge := j.parent, j.ptok, j.hedge
	e.leave(j, false)
	e.pool.put(idx)
	e.startQueued()
	e.wake()
	if p := e.pool.at(parent); p.tok != ptok || !p.waiting {
		e.sum.Orphaned++ // served for a caller that stopped waiting
		return
	}
	e.deliver(parent, ptok, err, hedge)
}

// startQueued starts queued jobs while workers are free, dropping those
// whose propagated deadline has passed.
func (e *engine) startQueued() {
	for e.queue.len() > 0 && (e.conc == 0 || e.busy < e.conc) {
		idx := e.queue.pop()
		j := e.pool.at(idx)
		if j.dl <= e.now {
			e.fail(idx, j, errExpired)
			continue
		}
		e.serve(idx, j)
	}
}

func (e *engine) errorRate() float64 {
	r := e.errRate
	for i := range e.faults {
		f := &e.faults[i]
		if f.kind == ErrorRate && f.start <= e.now && e.now < f.end {
			r = max(r, f.rate)
		}
	}
	return r
}

// --- the overload control in front of the bottom service (package
// overload's decision, internal/admit, on the virtual clock) ---

// waiter is a job in the overload queue.
type waiter struct {
	w      admit.Waiter
	e      *engine
	idx    int32
	expire uint8 // why it is refused when its wait ends
}

// woken is a waiter the Core answered.
type woken struct {
	w      *waiter
	reason uint8
}

func (w *waiter) Wake(r uint8) { w.e.woken = append(w.e.woken, woken{w, r}) }

// admit puts job j through the overload control, as overload.Limiter's
// Acquire does: it reports whether j is admitted now; otherwise j was
// refused (failed) or waits in the queue.
func (e *engine) admit(idx int32, j *call) bool {
	retry := e.attemptOf(j) >= 2
	if !retry {
		if n, timed, ok := e.adm.TryFast(); ok {
			j.held, j.timed, j.admN, j.admAt = true, timed, int32(n), e.now
			return true
		}
	}
	var dl time.Time
	if j.dl != never {
		dl = epoch.Add(time.Duration(j.dl))
	}
	out := e.adm.Arrive(e.tnow, retry, dl)
	switch {
	case out.Admitted:
		j.held, j.timed, j.admN, j.admAt = true, out.Timed, int32(out.Inflight), e.now
		return true
	case out.Reason != admit.None:
		e.fail(idx, j, e.refusal(out.RetryAfter))
		return false
	}
	w := &waiter{e: e, idx: idx, expire: out.Expire}
	e.adm.Queue(&w.w, e.tnow, dl, w)
	j.w = w
	j.tok = e.token()
	e.push(e.now+int64(out.Wait), evWaited, idx, j.tok)
	return false
}

// refusal is the error of an attempt the overload control refused: a 503
// whose Retry-After (whole seconds, at least 1, as overload.Limiter.Wrap
// writes it) heed's layers honour as retryhttp does.
func (e *engine) refusal(ra time.Duration) error {
	if e.plainWire {
		return errOverloaded
	}
	return retry.After(time.Duration(admit.RetryAfterSeconds(ra))*time.Second, errOverloaded)
}

// attemptOf returns the attempt number that job j's Retry-Attempt carries,
// as heed's clients send it: the largest attempt number of the layers
// above that pass the claim down, 0 when the last layer sends none.
func (e *engine) attemptOf(j *call) int {
	if e.plainWire {
		return 0
	}
	n := 0
	for i := j.parent; i >= 0; {
		c := e.pool.at(i)
		if !e.layers[c.layer].sends {
			break
		}
		n = max(n, c.rc.History.Attempts+1)
		i = c.parent
	}
	return n
}

// waited refuses job j, whose time in the overload queue ended.
func (e *engine) waited(idx int32, j *call) {
	w := j.w
	j.w = nil
	ra, _ := e.adm.Leave(&w.w, e.tnow, w.expire)
	e.fail(idx, j, e.refusal(ra))
}

// leave gives back the place job j holds, if any, as it leaves the
// service: its latency is a sample, unless its caller went away (no
// sample) or its deadline passed (expired: it ran out of time).
func (e *engine) leave(j *call, expired bool) {
	if e.adm == nil || !j.held {
		return
	}
	j.held = false
	how := admit.Unsampled
	if j.timed {
		how = admit.Sampled
		if p := e.pool.at(j.parent); p.tok != j.ptok || !p.waiting {
			how = admit.Unsampled
		}
		if expired || j.dl <= e.now {
			how = admit.TimedOut
		}
	}
	e.adm.Release(e.tnow, time.Duration(e.now-j.admAt), int(j.admN), how)
}

// wake acts on the waiters the Core answered: a refused one fails; an
// admitted one enters the service, unless its caller has gone, whose
// place passes on (a caller who has gone is never served).
func (e *engine) wake() {
	if e.waking {
		return // the outer call acts on what is added
	}
	e.waking = true
	for k := 0; k < len(e.woken); k++ {
		wk := e.woken[k]
		idx := wk.w.idx
		j := e.pool.at(idx)
		j.w = nil
		j.tok = e.token() // its wait's timer is stale
		if wk.reason != admit.None {
			e.fail(idx, j, e.refusal(e.adm.RetryAfter(e.tnow)))
			continue
		}
		if p := e.pool.at(j.parent); p.tok != j.ptok || !p.waiting {
			e.adm.Release(e.tnow, 0, 0, admit.Unsampled)
			e.pool.put(idx)
			continue
		}
		j.held, j.timed, j.admN, j.admAt = true, true, int32(e.adm.Inflight()), e.now
		e.enter(idx, j)
	}
	e.woken = e.woken[:0]
	e.waking = false
}

// outageStarts fails every queued job.
func (e *engine) outageStarts() {
	for e.queue.len() > 0 {
		idx := e.queue.pop()
		e.fail(idx, e.pool.at(idx), errRefused)
	}
}

// --- results ---

func (e *engine) result() *Result {
	s := e.sum
	s.Open = s.UserRequests - s.Succeeded - s.Failed
	if s.UserRequests > 0 {
		s.AttemptsPerRequest = float64(s.Attempts) / float64(s.UserRequests)
		s.SuccessRate = float64(s.Succeeded) / float64(s.UserRequests)
	}
	normal := e.rate * float64(e.interval) / 1e9 // user requests per interval
	for _, p := range e.series {
		if a := float64(p.Attempts) / normal; a > s.PeakAmplification {
			s.PeakAmplification, s.PeakAt = a, p.At
		}
	}
	if f := &s.Fault; f.UserRequests > 0 {
		f.SuccessRate = float64(f.Succeeded) / float64(f.UserRequests)
		f.AttemptsPerRequest = float64(f.Attempts) / float64(f.UserRequests)
	}
	for _, p := range e.series {
		if p.UserRequests > 0 && e.inFaults(int64(p.At), int64(p.At)+e.interval) {
			s.Fault.PeakAttemptsPerRequest = max(s.Fault.PeakAttemptsPerRequest, float64(p.Attempts)/float64(p.UserRequests))
		}
	}
	s.P50 = e.thist.quantile(0.5)
	s.P99 = e.thist.quantile(0.99)
	s.GiveUps = map[string]int64{}
	for r, n := range e.giveUps {
		if n > 0 {
			s.GiveUps[retry.Reason(r).Key()] = n
		}
	}
	s.Recovered = true
	if s.FaultEnd > 0 {
		s.Recovered = false
		want := e.sc.recoverAt()
		// Walk back from the horizon while intervals are healthy.
		k := len(e.series)
		for k > 0 {
			p := e.series[k-1]
			done := p.Goodput + p.Errors
			if p.At+time.Duration(e.interval) <= s.FaultEnd || done == 0 || float64(p.Goodput) < want*float64(done) {
				break
			}
			k--
		}
		if k < len(e.series) {
			s.Recovered = true
			if at := time.Duration(int64(k) * e.interval); at > s.FaultEnd {
				s.RecoveryTime = at - s.FaultEnd
			}
		}
	}
	return &Result{
		Scenario: e.sc.Name,
		Chain:    e.pol.name(indexOf(e.sc, e.pol)),
		Seed:     e.sc.Seed,
		Interval: time.Duration(e.interval),
		Series:   e.series,
		Summary:  s,
		Events:   e.events,
	}
}

// inFaults reports whether [from, to) lies wholly inside one fault.
func (e *engine) inFaults(from, to int64) bool {
	for _, f := range e.faults {
		if f.start <= from && to <= f.end {
			return true
		}
	}
	return false
}

func indexOf(s *Scenario, p *Chain) int {
	for i := range s.Chains {
		if &s.Chains[i] == p {
			return i
		}
	}
	return 0
}
