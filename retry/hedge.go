package retry

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/breaker"
	"github.com/heed-go/heed/clock"
)

// Hedge is Policy.Hedge: hedged requests, for the slow tail ("The Tail at
// Scale", Dean and Barroso). When an attempt has not answered after a
// delay, up to Max more attempts are sent beside it, one delay apart; the
// first acceptable answer (a success, or an error that will not pass:
// permanent, refused, not safe to repeat) wins, and the others are
// cancelled and waited for. An attempt that fails in a way that may pass
// sends the next hedge at once; when every attempt of the race has failed,
// the call decides as after any failed attempt (a retry, with backoff, or
// a give-up).
//
// A hedge is an attempt like any other: it counts in Policy.Attempts (so
// Attempts 1 sends none), carries its attempt number (Retry-Attempt) so
// that the layers below leave the retries to this one, is admitted by the
// breaker and takes a token from the retry budget. A hedge the breaker or
// the budget refuses, or that would not fit before the deadline, is not
// sent; the attempt already running goes on. Hedges are never sent under
// a caller that owns the retries (see [WithUpstreamOwner]) nor by a
// durable call. A hedge that wins does not earn the budget back as a
// successful retry does, so that a slow dependency is never sent twice its
// load: hedges beyond the budget's ratio of the requests are not sent.
//
// Only requests that are safe to repeat are ever hedged: the executor
// decides that with the rule its retries use (retryhttp: an idempotent
// method or an idempotency key; heedgrpc: an idempotent method or a key).
// [Do] does not hedge: it makes one attempt at a time (see [Policy.Hedge]).
//
// A Hedge learns the latencies of the calls that use it (with Delay zero):
// share one between the calls to one destination, as a Budget is shared.
// retryhttp and heedgrpc give each destination its own copy of the one in
// their Policy. A Hedge must not be copied after first use. Its zero value
// hedges once, after the 95th percentile of the latencies seen (at least
// 1 ms).
type Hedge struct {
	// Delay is how long an attempt may run before a hedge is sent beside
	// it, and between two hedges (default: zero, the Quantile of the
	// latencies of the successful attempts this Hedge has seen, within
	// MinDelay and MaxDelay; until it has seen 20 no hedge is sent).
	Delay time.Duration
	// Quantile is the quantile of the latencies that an adaptive delay
	// (Delay zero) waits: 0.95 by default, which hedges about one attempt
	// in twenty when latencies do not change. It must be between 0 and 1.
	Quantile float64
	// MinDelay and MaxDelay bound an adaptive delay (default: at least
	// 1 ms, no maximum).
	MinDelay, MaxDelay time.Duration
	// Max is the number of hedges a race may send beside its first
	// attempt (default 1; at most 4, as gRPC's hedging policy caps it).
	Max int

	once sync.Once
	st   *hedgeState
}

// Defaults of a [Hedge].
const (
	defaultHedgeQuantile = 0.95
	defaultHedgeMinDelay = time.Millisecond
	maxHedges            = 4
	hedgeWarmup          = 20 // latencies an adaptive delay needs
)

func (h *Hedge) validate() error {
	switch {
	case h.Delay < 0:
		return fmt.Errorf("retry: Policy.Hedge.Delay is %v, must not be negative", h.Delay)
	case h.Quantile < 0 || h.Quantile >= 1 || math.IsNaN(h.Quantile):
		return fmt.Errorf("retry: Policy.Hedge.Quantile is %v, must be in [0, 1)", h.Quantile)
	case h.MinDelay < 0 || h.MaxDelay < 0:
		return fmt.Errorf("retry: Policy.Hedge.MinDelay and MaxDelay must not be negative")
	case h.MaxDelay > 0 && h.MaxDelay < h.MinDelay:
		return fmt.Errorf("retry: Policy.Hedge.MaxDelay %v is below MinDelay %v", h.MaxDelay, h.MinDelay)
	case h.Max < 0 || h.Max > maxHedges:
		return fmt.Errorf("retry: Policy.Hedge.Max is %d, must be 0 to %d", h.Max, maxHedges)
	}
	return nil
}

func (h *Hedge) max() int {
	if h.Max == 0 {
		return 1
	}
	return h.Max
}

func (h *Hedge) state() *hedgeState {
	h.once.Do(func() {
		q := h.Quantile
		if q == 0 {
			q = defaultHedgeQuantile
		}
		lo := h.MinDelay
		if lo == 0 {
			lo = defaultHedgeMinDelay
		}
		h.st = &hedgeState{q: q, lo: lo, hi: h.MaxDelay}
	})
	return h.st
}

// delay returns the delay before a hedge, and false when none is known
// yet (an adaptive delay before its warm-up).
func (h *Hedge) delay() (time.Duration, bool) {
	if h.Delay > 0 {
		return h.Delay, true
	}
	d := h.state().delay.Load()
	return time.Duration(d), d > 0
}

// record learns the latency of a successful attempt, for an adaptive
// delay.
func (h *Hedge) record(d time.Duration) {
	if h.Delay > 0 || d < 0 {
		return
	}
	h.state().lat.record(d, h.st)
}

// hedgeState is what a Hedge keeps: the latencies and the races waiting
// for their delay.
type hedgeState struct {
	q      float64
	lo, hi time.Duration
	delay  atomic.Int64 // the adaptive delay in ns; 0 until known
	lat    latencies
	tr     tracker
	pol    atomic.Pointer[Policy] // see policy
}

// latencies is a histogram of latencies in logarithmic buckets (8 per
// power of two of microseconds: within 12.5%), halved every
// latencyWindow samples so that it follows a changing destination.
type latencies struct {
	mu     sync.Mutex
	counts [latencyBuckets]uint32
	total  uint32
	seen   uint32 // samples since the delay was worked out
}

const (
	latencySub     = 8
	latencyBuckets = 40 * latencySub
	latencyWindow  = 2000
	latencyEvery   = 16 // samples between two workings-out of the delay
)

func bucketOf(d time.Duration) int {
	us := uint64(d / time.Microsecond)
	if us < latencySub {
		return int(us)
	}
	e := bits.Len64(us) - 1 // >= 3
	i := e*latencySub + int(us>>(e-3)&(latencySub-1))
	return min(i, latencyBuckets-1)
}

// bucketTop returns the upper edge of bucket i.
func bucketTop(i int) time.Duration {
	if i < latencySub {
		return time.Duration(i+1) * time.Microsecond
	}
	e, s := i/latencySub, i%latencySub
	return time.Duration(uint64(latencySub+s+1)<<(e-3)) * time.Microsecond
}

func (l *latencies) record(d time.Duration, st *hedgeState) {
	i := bucketOf(d)
	l.mu.Lock()
	l.counts[i]++
	l.total++
	l.seen++
	if l.seen >= latencyEvery || l.total == hedgeWarmup {
		l.seen = 0
		st.delay.Store(int64(l.quantile(st)))
	}
	if l.total >= latencyWindow {
		l.total = 0
		for j := range l.counts {
			l.counts[j] /= 2
			l.total += l.counts[j]
		}
	}
	l.mu.Unlock()
}

// quantile returns the delay the histogram gives, bounded; 0 before the
// warm-up.
func (l *latencies) quantile(st *hedgeState) time.Duration {
	if l.total < hedgeWarmup {
		return 0
	}
	want := uint32(math.Ceil(st.q * float64(l.total)))
	var n uint32
	d := bucketTop(latencyBuckets - 1)
	for i, c := range l.counts {
		n += c
		if n >= want {
			d = bucketTop(i)
			break
		}
	}
	d = max(d, st.lo)
	if st.hi > 0 {
		d = min(d, st.hi)
	}
	return d
}

// tracker holds the races of a Hedge that wait for their delay, under one
// timer: registering a race is an append, so that a call that needs no
// hedge pays for no timer of its own. The timer fires at the earliest due
// race, starts those that are due and is set again for the next.
//
// A race that ends with no hedge is not taken off the list: its first
// attempt claims it with one compare-and-swap of its context's state (see
// raceCtx), and the next add takes the claimed races off the list's end
// and reuses one for its own race (the timer takes the others). The list
// is a stack, so that the races of calls that end in the order they
// started (most of them) are taken by the next add: the list holds the
// races in flight and few more, and a call that sends no hedge allocates
// only its attempt's context.
type tracker struct {
	mu    sync.Mutex
	races []*race
	free  []*race // races taken off the list, to reuse
	timer *time.Timer
	at    int64 // when the timer fires (see since); zero when it is not set
	// epoch is the origin of the tracker's times, set by the first add:
	// they are durations since it, an integer a race keeps without a
	// pointer (a time.Time's location is one more pointer written per call,
	// with a write barrier while the GC marks).
	epoch time.Time
}

// since returns the time of at, at least 1 (0 is none). It runs under
// t.mu.
func (t *tracker) since(at time.Time) int64 { return max(int64(at.Sub(t.epoch)), 1) }

// add registers the race of the attempt of c that runs under ctx, started
// at now and due to send its first hedge delay later, and returns it. It
// is written under t.mu, which the timer takes before it reads a race.
func (t *tracker) add(ctx *raceCtx, c *Call, pol *Policy, attempt func(ctx context.Context, n int, lim Limit) Result, delay time.Duration, now time.Time) *race {
	t.mu.Lock()
	if t.epoch.IsZero() {
		t.epoch = time.Now()
	}
	// One Sub, not now.Add(delay) and a Sub: Add is the dearer of the
	// two (it normalises the wall clock and the monotonic one).
	due := max(int64(now.Sub(t.epoch))+int64(delay), 1)
	// Races that ended at the top of the stack make room: most calls
	// end before the next starts. The lowest is reused in place.
	var r *race
	i := len(t.races)
	for i > 0 && t.races[i-1].ended() {
		i--
	}
	if i < len(t.races) {
		r = t.races[i]
		t.free = append(t.free, t.races[i+1:]...)
		clear(t.races[i+1:])
		t.races = t.races[:i+1]
	} else {
		if n := len(t.free); n > 0 {
			r = t.free[n-1]
			t.free[n-1] = nil
			t.free = t.free[:n-1]
		} else {
			r = new(race)
		}
		t.races = append(t.races, r)
	}
	r.set(ctx, c, pol, attempt, delay)
	r.due = due
	if t.at == 0 || due < t.at {
		t.at = due
		d := max(time.Duration(due-t.since(time.Now())), 0)
		if t.timer == nil {
			t.timer = time.AfterFunc(d, t.fire)
		} else {
			t.timer.Reset(d)
		}
	}
	t.mu.Unlock()
	return r
}

func (t *tracker) fire() {
	var due []*race
	t.mu.Lock()
	now := time.Now()
	nowe := t.since(now)
	next := int64(0)
	j := 0
	for _, r := range t.races {
		switch {
		case r.ended():
			if len(t.free) < cap(t.races) {
				t.free = append(t.free, r)
			}
			continue
		case r.due <= nowe:
			due = append(due, r) // the coordinator's now: not reused
			continue
		case next == 0 || r.due < next:
			next = r.due
		}
		t.races[j] = r
		j++
	}
	clear(t.races[j:])
	t.races = t.races[:j]
	t.at = next
	if next != 0 {
		t.timer.Reset(max(time.Duration(next-t.since(time.Now())), 0))
	}
	t.mu.Unlock()
	for _, r := range due {
		r.fire(now)
	}
}

// race is one hedged attempt of a Call: the first attempt, running on the
// executor's goroutine, and the hedges beside it. Its state is its first
// attempt's context's (ctx.state): a race is reused once its context says
// it ended (see tracker), and the context, which the attempt's answer may
// hold on to, is never reused.
//
// It holds what the hedges need of the Call, copied when the race starts,
// so that the Call itself stays the executor's (on its stack: a race that
// kept a pointer to it would move every hedged call's Call, 640 bytes, to
// the heap). The coordinator of a race that fired hands what it did back
// with its verdict, and the executor writes it into the Call.
type race struct {
	ctx     *raceCtx // the first attempt's context
	pol     *Policy
	attempt func(ctx context.Context, n int, lim Limit) Result
	// attempts, start and deadline are the Call's History when the
	// race started: what admitting a hedge reads.
	attempts        int
	start, deadline time.Time
	permit          breaker.Permit // the first attempt's
	delay           time.Duration
	due             int64   // see tracker.since
	co              *coords // made when the race fires
}

// set starts r for the attempt of c that runs under ctx. The policy and
// the attempt function are written only when they change (they seldom
// do, for a reused race): each pointer written costs a write barrier
// while the GC marks.
func (r *race) set(ctx *raceCtx, c *Call, pol *Policy, attempt func(ctx context.Context, n int, lim Limit) Result, delay time.Duration) {
	r.ctx = ctx
	if r.pol != pol {
		r.pol = pol
	}
	if !sameWord(unsafe.Pointer(&r.attempt), unsafe.Pointer(&attempt)) {
		r.attempt = attempt
	}
	r.attempts, r.start, r.delay = c.History.Attempts, c.History.Start, delay
	if r.deadline != c.History.Deadline {
		r.deadline = c.History.Deadline
	}
	if r.permit != c.permit {
		r.permit = c.permit
	}
	if r.co != nil {
		r.co = nil
	}
}

// ended reports whether r has left the tracker's hands: claimed by its
// first attempt or fired.
func (r *race) ended() bool { return r.ctx.state.Load()&racePhase != 0 }

// coords is what the attempts of a race that fired and its coordinator
// share.
type coords struct {
	results chan raceResult // from the attempts to the coordinator
	verdict chan verdict    // from the coordinator to the executor
	stop    chan struct{}   // ends the timer goroutine of a Policy.Clock
}

type raceResult struct {
	k      int // 0 for the first attempt, then the hedges
	res    Result
	end    time.Time
	cancel context.CancelFunc
}

// verdict is the result a race that fired goes on with, and what its
// coordinator did, for the executor to write into the Call.
type verdict struct {
	raceResult
	sent   int            // hedges sent
	permit breaker.Permit // the winner's
	start  time.Time      // when the winner started
}

// Race makes the attempt Admit admitted at now, ending by lim, and the
// hedges the policy's [Hedge] allows beside it, and returns the result the
// call goes on with, the number of the attempt that gave it, and the
// cancel function of that attempt's context, which the executor calls
// once it is done with the attempt's answer (nil when there is none, as
// when no hedge was sent and the attempt never asked for its context's
// Done: the context is then the caller's, with nothing to release). The
// executor then calls [Call.End] with the result as after any attempt.
//
// attempt makes attempt n under ctx, ending by lim; it is called on the
// executor's goroutine for the first attempt and on goroutines of its own
// for the hedges, at the same time, so it must be safe for concurrent use
// (a request body must be given to each attempt anew). The hedges that
// lose are cancelled and waited for before Race returns: attempt must end
// soon after its context does, and the executor releases what the losers
// returned (response bodies).
//
// Race keeps no pointer to c: a Call kept on the executor's stack stays
// there.
//
// Without Policy.Hedge, for a durable call, under an upstream owner, when
// the attempt limit leaves no room for a hedge or before an adaptive
// delay is known, Race makes the attempt alone, under ctx. Call Race only
// for a call that is safe to repeat.
func (c *Call) Race(ctx context.Context, now time.Time, lim Limit, attempt func(ctx context.Context, n int, lim Limit) Result) (res Result, n int, cancel context.CancelFunc) {
	// res is a named result, so that the attempt's Result is copied once
	// on its way out, not twice: a Result is a struct of six fields,
	// which the compiler copies through memory, and a copy read right
	// after its fields were written stalls (the stores cannot be
	// forwarded to its wider loads).
	n = c.History.Attempts + 1
	h := c.Policy.Hedge
	c.start = now
	if h == nil || c.Durable || c.History.UpstreamOwns {
		return attempt(ctx, n, lim), n, nil
	}
	if m := c.Policy.MaxAttempts(); m > 0 && n >= m {
		return attempt(ctx, n, lim), n, nil
	}
	delay, ok := h.delay()
	if !ok {
		return attempt(ctx, n, lim), n, nil
	}
	st := h.state()
	pol := st.policy(&c.Policy)
	actx := &raceCtx{Context: ctx}
	clk := c.Policy.Clock
	var r *race
	if clk == nil {
		r = st.tr.add(actx, c, pol, attempt, delay, now)
	} else {
		r = new(race)
		r.set(actx, c, pol, attempt, delay)
		stop := make(chan struct{})
		r.co = &coords{stop: stop}
		t := clk.NewTimer(delay)
		go func() {
			select {
			case <-t.C():
				r.fire(clk.Now())
			case <-stop:
				t.Stop()
			}
		}()
	}
	res = attempt(actx, n, lim)
	if ok, release := actx.claim(); ok {
		// No hedge was sent, nor can be: the common case. r is the
		// tracker's to reuse (or the timer goroutine's to drop): it must
		// not be touched again.
		if clk != nil {
			close(r.co.stop)
		}
		return res, n, release
	}
	// Hedges were sent: the coordinator decides.
	r.co.results <- raceResult{k: 0, res: res, end: clock.Now(clk), cancel: actx.stop}
	v := <-r.co.verdict
	c.permit = v.permit
	c.History.Attempts += v.sent
	c.hedges += v.sent
	c.raceHedges, c.raceWon = v.sent, v.k != 0
	if v.k != 0 {
		c.start = v.start
	}
	return v.res, n + v.k, v.cancel
}

// policy returns a copy of p that the races of this Hedge share: the one
// made for the race before when p has not changed (the common case: a
// Hedge serves one destination's policy), so that a race copies one
// pointer, not a Policy.
func (st *hedgeState) policy(p *Policy) *Policy {
	if q := st.pol.Load(); q != nil && samePolicy(q, p) {
		return q
	}
	q := new(Policy)
	*q = *p
	st.pol.Store(q)
	return q
}

// samePolicy reports whether a and b are the same policy: equal fields,
// and the same functions and interface values (the same words: two
// closures of one function are not the same).
func samePolicy(a, b *Policy) bool {
	return a.Attempts == b.Attempts && sameSchedule(&a.Backoff, &b.Backoff) &&
		a.AttemptTimeout == b.AttemptTimeout && a.TimeBudget == b.TimeBudget &&
		a.MinAttemptTime == b.MinAttemptTime && a.MaxPushback == b.MaxPushback &&
		a.Budget == b.Budget && a.Breaker == b.Breaker && a.Hedge == b.Hedge &&
		sameWord(unsafe.Pointer(&a.Retryable), unsafe.Pointer(&b.Retryable)) &&
		sameWord(unsafe.Pointer(&a.Observe), unsafe.Pointer(&b.Observe)) &&
		sameIface(unsafe.Pointer(&a.Clock), unsafe.Pointer(&b.Clock)) &&
		sameIface(unsafe.Pointer(&a.Rand), unsafe.Pointer(&b.Rand))
}

// sameSchedule is a == b, field by field: == on a struct with a float
// calls a function the compiler generates. TestSameSchedule checks that
// it compares every field.
func sameSchedule(a, b *backoff.Schedule) bool {
	return a.Kind == b.Kind && a.Base == b.Base && a.Cap == b.Cap &&
		a.Multiplier == b.Multiplier && a.Jitter == b.Jitter
}

// sameWord compares the words at a and b: func values, by their closure.
func sameWord(a, b unsafe.Pointer) bool { return *(*unsafe.Pointer)(a) == *(*unsafe.Pointer)(b) }

// sameIface compares the interface values at a and b word by word, where
// == would panic on a dynamic type that is not comparable.
func sameIface(a, b unsafe.Pointer) bool {
	x, y := (*[2]unsafe.Pointer)(a), (*[2]unsafe.Pointer)(b)
	return x[0] == y[0] && x[1] == y[1]
}

// HedgeAt is the first step of hedging for an executor whose attempts are
// events, not goroutines (the simulator; others use [Call.Race]): for the
// attempt Admit admitted at start, it returns when its first hedge is
// due, and true; false when the attempt is not to be hedged (as for Race:
// no Policy.Hedge, a durable call, an upstream owner, no room under the
// attempt limit, or an adaptive delay not known yet). When the attempt
// has not ended by then, the executor calls [Call.Hedge].
func (c *Call) HedgeAt(start time.Time) (time.Time, bool) {
	h := c.Policy.Hedge
	c.start = start
	if h == nil || c.Durable || c.History.UpstreamOwns {
		return time.Time{}, false
	}
	if m := c.Policy.MaxAttempts(); m > 0 && c.History.Attempts+1 >= m {
		return time.Time{}, false
	}
	d, ok := h.delay()
	if !ok {
		return time.Time{}, false
	}
	return start.Add(d), true
}

// Hedge admits a hedge of the attempt in flight at now, as Race admits
// them (within Max and the attempt limit, with time for a whole attempt,
// the breaker's permit and a token of the retry budget), and returns the
// hedge's Limit, when the next one is due (zero for none), and true; false
// when it may not start. The hedge counts as an attempt. The executor
// ends the race with one [Call.End]: with the first acceptable result, or
// when every attempt of the race has failed, the last failure; Result.Hedge
// says the result is a hedge's. The breaker learns the outcome of the
// result decided on only (a hedge's permit is given back at once).
func (c *Call) Hedge(now time.Time) (Limit, time.Time, bool) {
	h := c.Policy.Hedge
	if h == nil || c.Durable || c.History.UpstreamOwns || c.raceHedges >= h.max() {
		return Limit{}, time.Time{}, false
	}
	lim, permit, ok := admitHedge(&c.Policy, &c.History, now, c.History.Attempts+2)
	if !ok {
		return Limit{}, time.Time{}, false
	}
	permit.RecordAt(now, breaker.Ignored)
	c.History.Attempts++
	c.hedges++
	c.raceHedges++
	var next time.Time
	if c.raceHedges < h.max() {
		if d, ok := h.delay(); ok {
			next = now.Add(d)
		}
	}
	return lim, next, true
}

// fire starts the hedges of r, unless its first attempt has ended.
func (r *race) fire(now time.Time) {
	if r.co == nil {
		r.co = new(coords)
	}
	r.co.results = make(chan raceResult, maxHedges+1)
	r.co.verdict = make(chan verdict, 1)
	if !r.ctx.fired() {
		return
	}
	go r.coordinate(now)
}

// coordinate runs the hedges of r, from now, on a goroutine of its own,
// while the executor's goroutine makes the first attempt. It keeps the
// race's own History (the Call's is the executor's) and hands what it did
// back with the verdict.
func (r *race) coordinate(now time.Time) {
	p, ctx := r.pol, r.ctx.Context // the caller's
	h := p.Hedge
	hist := History{Attempts: r.attempts, Start: r.start, Deadline: r.deadline}
	var (
		permits  [maxHedges + 1]breaker.Permit
		cancels  [maxHedges + 1]context.CancelFunc
		starts   [maxHedges + 1]time.Time
		canceled [maxHedges + 1]bool
		sent     int
		running  = 1
		win      = -1
		last     *raceResult
		stopped  bool // no more hedges: a pushback, a winner or the caller gone
		timer    clock.Timer
	)
	permits[0], cancels[0] = r.permit, r.ctx.stop
	launch := func(now time.Time) {
		if stopped || sent >= h.max() || ctx.Err() != nil {
			return
		}
		k := sent + 1
		lim, permit, ok := admitHedge(p, &hist, now, r.attempts+1+k)
		if !ok {
			return
		}
		sent++
		running++
		actx, cancel := context.WithCancel(ctx)
		permits[k], cancels[k], starts[k] = permit, cancel, now
		go func() {
			res := r.attempt(actx, r.attempts+1+k, lim)
			r.co.results <- raceResult{k: k, res: res, end: clock.Now(p.Clock), cancel: cancel}
		}()
		if sent < h.max() {
			if timer == nil {
				timer = clock.Or(p.Clock).NewTimer(r.delay)
			} else {
				timer.Reset(r.delay)
			}
		}
	}
	launch(now)
	for running > 0 {
		var tc <-chan time.Time
		if timer != nil && !stopped && sent < h.max() {
			tc = timer.C()
		}
		select {
		case <-tc:
			launch(clock.Now(p.Clock))
			continue
		case rr := <-r.co.results:
			running--
			k := rr.k
			switch {
			case canceled[k] || ctx.Err() != nil:
				// Cancelled by the race or by the caller: it says nothing
				// of the dependency.
				permits[k].RecordAt(rr.end, breaker.Ignored)
				rr.cancel()
				if win < 0 && running == 0 && last == nil {
					last = &rr // the caller gave up: any result will do
					permits[k] = breaker.Permit{}
				}
			case r.final(&rr.res):
				if last != nil {
					permits[last.k].RecordAt(last.end, breaker.Failure)
					last.cancel()
				}
				win = k
				last = &rr
				stopped = true
				for j := 0; j <= sent; j++ {
					if j != k && cancels[j] != nil && !canceled[j] {
						canceled[j] = true
						cancels[j]()
					}
				}
			default:
				// A failure that may pass: the next hedge goes now.
				if last != nil {
					permits[last.k].RecordAt(last.end, breaker.Failure)
					last.cancel()
				}
				last = &rr
				if rr.res.Outcome == OutcomePushback {
					stopped = true
				}
				launch(rr.end)
			}
		}
	}
	if timer != nil {
		timer.Stop()
	}
	v := verdict{raceResult: *last, sent: sent, permit: permits[last.k], start: starts[last.k]}
	v.res.Hedge = v.k != 0
	r.co.verdict <- v
}

// final reports whether res ends a race: a success, or a failure that a
// retry would not mend.
func (r *race) final(res *Result) bool {
	if res.NotRepeatable {
		return true
	}
	o := res.Outcome
	if res.Err != nil && o == OutcomeSuccess {
		o, res.Wait = r.pol.Classify(res.Err, res.TimedOut)
		res.Outcome = o
	}
	return o == OutcomeSuccess && res.Err == nil || o == OutcomePermanent || o == OutcomeRefused
}

// admitHedge admits hedge attempt n at now of a call under p with history
// h: within the attempt limit, with time left for a whole attempt, the
// breaker's permit and a token of the retry budget.
func admitHedge(p *Policy, h *History, now time.Time, n int) (Limit, breaker.Permit, bool) {
	if m := p.MaxAttempts(); m > 0 && n > m {
		return Limit{}, breaker.Permit{}, false
	}
	if ok, _ := p.fits(h, now, 0); !ok {
		return Limit{}, breaker.Permit{}, false
	}
	var permit breaker.Permit
	if p.Breaker != nil {
		var err error
		if permit, err = p.Breaker.AllowAt(now); err != nil {
			return Limit{}, breaker.Permit{}, false
		}
	}
	if p.Budget != nil && !p.Budget.AllowRetryAt(now) {
		permit.RecordAt(now, breaker.Ignored)
		return Limit{}, breaker.Permit{}, false
	}
	return limitAt(p, h, now), permit, true
}
