// Package breaker is a circuit breaker: it stops calls to a dependency that is
// failing, so that the dependency gets room to recover instead of a second
// outage made of retries.
//
// A [Breaker] has three states. Closed, it admits every call and counts
// outcomes over a sliding window; when at least [Config.MinCalls] outcomes in
// the window include a share of failures of at least [Config.FailureRatio], it
// opens. Open, it refuses every call with [ErrOpen] for [Config.Cooldown].
// Then it turns half-open and admits up to [Config.Probes] probe calls at a
// time: [Config.Probes] probe successes close it (with an empty window), and
// one probe failure opens it again for another cooldown.
//
// Most callers create one Breaker per dependency with [New], share it between
// goroutines, and wrap each call in [Breaker.Allow] and [Permit.Record]:
//
//	p, err := b.Allow()
//	if err != nil {
//		return err // breaker.ErrOpen: fail fast, do not call
//	}
//	err = call()
//	p.Record(outcomeOf(err))
//
// The retry package does this for you when its Policy has a Breaker.
// The methods ending in At take the current time as an argument and read no
// clock, so tests and simulators can drive a Breaker over fixed instants.
//
// # Performance
//
// A Breaker is a mutex and plain fields, and one atomic word that mirrors
// "closed, in generation g" so that AllowAt admits a call to a closed
// breaker without the mutex. RecordAt takes the mutex once; nothing
// allocates. A lock-free version (a bit-packed state word and
// per-processor stripes of counters) was replaced by this one: alternating
// runs measured no difference in allow+record at the median
// (BenchmarkAllowRecord), while the mutex alone on both calls cost 20 to
// 35 ns more on a loaded machine. OnStateChange is called without the mutex
// held.
//
// # Window
//
// The window slides in steps of Window/16: it holds the current bucket and
// the 15 before it, so an outcome stays counted for between 15/16 of Window
// and Window. Each bucket counts up to 2^63-1 successes and as many
// failures. FailureRatio is compared at a resolution of one part per
// million.
//
// # Time
//
// Instants come from the caller, and any sequence of them is safe. An
// instant earlier than the newest bucket (a clock that went backwards, or a
// caller that read the time long before recording) is counted in the newest
// bucket: the window never moves backwards. AllowAt at an instant earlier
// than the moment the breaker opened restarts the cooldown from that
// instant, rather than waiting for the clock to catch up. Instants that
// carry a monotonic clock reading (time.Now values, which the wrappers
// without At use unless [Config.Clock] is set) are measured by that reading,
// so a step of the wall clock does not disturb a Breaker.
package breaker

import (
	"errors"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heed-go/heed/clock"
	"github.com/heed-go/heed/internal/fielderr"
)

// State is the state of a [Breaker]. The zero value is [Closed].
type State uint8

const (
	// Closed admits every call and counts outcomes.
	Closed State = iota
	// Open refuses every call until the cooldown has passed.
	Open
	// HalfOpen admits a limited number of probe calls whose outcomes decide
	// whether the breaker closes or opens again.
	HalfOpen
)

// String returns "closed", "open" or "half-open".
func (s State) String() string {
	switch s {
	case Closed:
		return "closed"
	case Open:
		return "open"
	case HalfOpen:
		return "half-open"
	}
	return "State(" + strconv.Itoa(int(s)) + ")"
}

// Key returns the state's stable identifier, for metrics and stored or
// logged values: "closed", "open" or "half_open" (snake_case, as heed's
// other keys; String says "half-open" for people).
func (s State) Key() string {
	if s == HalfOpen {
		return "half_open"
	}
	return s.String()
}

// Outcome is what a call tells the breaker about the health of the
// dependency. The zero value is [Success].
type Outcome uint8

const (
	// Success: the dependency answered well.
	Success Outcome = iota
	// Failure: the dependency failed in a way that says it is unhealthy
	// (a timeout, a refused connection, a 503). Errors that are the caller's
	// fault, such as a 404 or invalid input, are a Success for the breaker,
	// or Ignored.
	Failure
	// Ignored: the call says nothing about the dependency's health, for
	// example because the caller cancelled it. It is not counted; in the
	// half-open state it only frees the probe slot for another probe.
	Ignored
)

// String returns "success", "failure" or "ignored".
func (o Outcome) String() string {
	switch o {
	case Success:
		return "success"
	case Failure:
		return "failure"
	case Ignored:
		return "ignored"
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}

// ErrOpen is returned by [Breaker.AllowAt] when it refuses a call: the
// breaker is open, or half-open with every probe slot taken. Do not make the
// call, and do not retry it before the breaker lets calls through again.
var ErrOpen = errors.New("breaker: circuit open")

// ErrInvalid is matched, through errors.Is, by every error [New] returns for
// an invalid [Config]. The error's message names the field.
var ErrInvalid = errors.New("breaker: invalid config")

// Defaults for the zero fields of [Config].
const (
	defaultFailureRatio = 0.5
	defaultMinCalls     = 20
	defaultWindow       = 10 * time.Second
	defaultCooldown     = 5 * time.Second
	defaultProbes       = 3

	minWindow = time.Millisecond
	maxProbes = 1 << 14
	maxCalls  = 1 << 30
)

// Config configures a [Breaker]. It is a plain value: the zero Config is
// valid and gives every field its default, so most callers set nothing or
// only the fields they disagree with.
type Config struct {
	// FailureRatio is the share of failures among the outcomes in the
	// window at which the breaker opens, in (0, 1]. Default 0.5 (0 means
	// the default): the breaker opens when a dependency fails at least as
	// often as it succeeds. Lower rates are better left to retries and the
	// retry budget; a breaker that opens at 10% turns a partial outage into
	// a full one for every caller.
	FailureRatio float64

	// MinCalls is the least number of outcomes (successes plus failures)
	// the window must hold before the breaker may open. Default 20 (0
	// means the default): with fewer calls the ratio is mostly noise, while
	// 20 calls at a healthy 10% error rate reach a 50% failure ratio with a
	// probability below 1 in 100,000. At most 2^30.
	MinCalls int

	// Window is how far back outcomes count. Default 10s (0 means the
	// default): long enough to collect MinCalls outcomes at 2 calls per
	// second, short enough that a breaker forgets an old incident within
	// seconds. At least 1ms. The window moves in steps of Window/16.
	Window time.Duration

	// Cooldown is how long the breaker stays open before it lets probe
	// calls through. Default 5s (0 means the default): long enough for a
	// restarting instance or a failover to finish, short enough that a
	// recovered dependency is used again quickly.
	Cooldown time.Duration

	// Probes is the number of probe calls admitted at a time in the
	// half-open state, and the number of probe successes needed to close.
	// Default 3 (0 means the default): one success can be luck, while three
	// from a dependency that still fails half of its calls happen only one
	// time in eight; and three calls at a time is still a trickle. At most
	// 16384.
	//
	// A half-open breaker whose probe slots are all taken, and whose probes
	// have not reported for a whole Window, opens again at the next AllowAt,
	// so that a lost Permit (one never recorded) or a hung dependency
	// cannot hold it half-open forever.
	Probes int

	// OnStateChange, when not nil, is called once for every change of state
	// with the old and the new state and the instant that caused the
	// change. It is called synchronously from inside the AllowAt or
	// RecordAt that made the change (or, when changes happen at the same
	// moment on several goroutines, from one of them), in the order of the
	// changes, never concurrently with itself, and without any lock held:
	// it may call the Breaker. Keep it short: the call it runs in waits for
	// it.
	OnStateChange func(from, to State, at time.Time)

	// Clock is the time source of the wrappers that read the time
	// ([Breaker.Allow], [Permit.Record], [Breaker.State],
	// [Breaker.Counts]). Nil means real time. The At methods ignore it.
	Clock clock.Clock
}

// invalid is the error New returns for a bad [Config] field: "breaker:
// Field reason", matching [ErrInvalid].
func invalid(field, format string, args ...any) error {
	return fielderr.New("breaker", ErrInvalid, field, format, args...)
}

// Breaker is a circuit breaker. Create one with [New]: the zero Breaker is
// not usable, and its methods panic. A nil *Breaker is a breaker that is
// always closed: it admits every call and records nothing, so code with an
// optional breaker needs no special case.
//
// A Breaker is safe for concurrent use by any number of goroutines, and is
// meant to be shared by every call to one dependency. Most callers want
// [Breaker.Allow] and [Permit.Record]; the retry package calls
// [Breaker.AllowAt] before each attempt.
type Breaker struct {
	// Read-only after New.
	width    int64  // bucket width in nanoseconds
	window   int64  // width * numBuckets
	cooldown int64  // nanoseconds
	minCalls uint64 // outcomes
	ratioPPM uint64 // FailureRatio in parts per million
	probes   int64
	onChange func(from, to State, at time.Time)
	clk      clock.Clock
	base     time.Time // when New ran, with its monotonic reading
	baseNano int64     // base.UnixNano()

	// closedGen mirrors state and gen for AllowAt's closed path: gen
	// while the state is Closed, -1 otherwise. Written under mu.
	closedGen atomic.Int64

	mu       sync.Mutex // guards everything below
	state    State
	gen      uint32 // incremented on every change of state
	inflight int64  // probe calls in flight (half-open)
	succ     int64  // probe successes (half-open)
	openedAt int64  // nanos of the last change to Open
	probedAt int64  // nanos of the change to HalfOpen or of the last probe result since
	win      window // outcomes (see window.go)

	events     []event // changes not yet reported to onChange
	next       int     // index in events of the next one to report
	delivering bool    // a goroutine is calling onChange
}

type event struct {
	from, to State
	at       time.Time
}

// New returns a closed Breaker configured by cfg, with defaults for its zero
// fields. It returns an error matching [ErrInvalid] and naming the field when
// a field is out of range.
func New(cfg Config) (*Breaker, error) {
	ratio := cfg.FailureRatio
	switch {
	case ratio == 0:
		ratio = defaultFailureRatio
	case !(ratio > 0 && ratio <= 1): // also catches NaN
		return nil, invalid("FailureRatio", "is %v, must be in (0, 1]", cfg.FailureRatio)
	}
	minCalls := cfg.MinCalls
	switch {
	case minCalls == 0:
		minCalls = defaultMinCalls
	case minCalls < 0 || minCalls > maxCalls:
		return nil, invalid("MinCalls", "is %d, must be in [1, %d] (0 means %d)", cfg.MinCalls, maxCalls, defaultMinCalls)
	}
	window := cfg.Window
	switch {
	case window == 0:
		window = defaultWindow
	case window < minWindow:
		return nil, invalid("Window", "is %v, must be at least %v (0 means %v)", cfg.Window, minWindow, defaultWindow)
	}
	cooldown := cfg.Cooldown
	switch {
	case cooldown == 0:
		cooldown = defaultCooldown
	case cooldown < 0:
		return nil, invalid("Cooldown", "is %v, must be positive (0 means %v)", cfg.Cooldown, defaultCooldown)
	}
	probes := cfg.Probes
	switch {
	case probes == 0:
		probes = defaultProbes
	case probes < 0 || probes > maxProbes:
		return nil, invalid("Probes", "is %d, must be in [1, %d] (0 means %d)", cfg.Probes, maxProbes, defaultProbes)
	}

	width := int64(window) / numBuckets
	base := time.Now()
	b := &Breaker{
		width:    width,
		window:   width * numBuckets,
		cooldown: int64(cooldown),
		minCalls: uint64(minCalls),
		// Rounded down, with room for the error of ratio*1e6, so that a
		// ratio such as 2/3 opens at exactly 2 failures out of 3.
		ratioPPM: uint64(math.Floor(ratio*1e6 + 1e-6)),
		probes:   int64(probes),
		onChange: cfg.OnStateChange,
		clk:      cfg.Clock,
		base:     base,
		baseNano: base.UnixNano(),
	}
	b.closedGen.Store(0)
	// No bucket has been used yet: start the window before any instant.
	b.win.init(floorDiv(math.MinInt64, width) + 1)
	return b, nil
}

// AllowAt asks whether a call may start at now. It returns a [Permit] to
// record the call's outcome with, or [ErrOpen] (and a zero Permit) when the
// breaker refuses the call: it is open and the cooldown has not passed, or it
// is half-open and every probe slot is taken.
//
// When the cooldown has passed, AllowAt turns an open breaker half-open and
// admits the call as a probe. Every admitted call should be recorded exactly
// once, with [Permit.RecordAt]; a probe that is never recorded holds its
// slot until the breaker gives up on it (see [Config.Probes]).
func (b *Breaker) AllowAt(now time.Time) (Permit, error) {
	if b == nil {
		return Permit{}, nil
	}
	if g := b.closedGen.Load(); g >= 0 && b.width != 0 {
		return Permit{b: b, gen: uint32(g)}, nil
	}
	b.mustBeNew()
	b.mu.Lock()
	p, err := b.allowLocked(now)
	b.unlock()
	return p, err
}

// Allow is shorthand for AllowAt(now) with now read from [Config.Clock]
// (time.Now when it is nil).
func (b *Breaker) Allow() (Permit, error) {
	if b == nil {
		return Permit{}, nil
	}
	return b.AllowAt(clock.Now(b.clk))
}

// allowLocked is AllowAt in the open and half-open states, with mu held.
func (b *Breaker) allowLocked(now time.Time) (Permit, error) {
	n := b.nanos(now)
	switch b.state {
	case Open:
		if elapsed := sub(n, b.openedAt); elapsed < b.cooldown {
			if elapsed < 0 {
				// The clock went backwards: count the cooldown from
				// now, or the breaker could stay open for as long as
				// the clock jumped.
				b.openedAt = n
			}
			return Permit{}, ErrOpen
		}
		// The cooldown is over: this call becomes the first probe.
		b.transition(HalfOpen, n, now)
		return Permit{b: b, gen: b.gen, probe: true}, nil
	case HalfOpen:
		if b.inflight < b.probes {
			b.inflight++
			return Permit{b: b, gen: b.gen, probe: true}, nil
		}
		elapsed := sub(n, b.probedAt)
		if elapsed < 0 {
			b.probedAt = n // the clock went backwards
		}
		if elapsed >= b.window {
			// Every slot is taken and no probe has reported for a
			// whole window: the probes are lost or hung. Open again.
			b.transition(Open, n, now)
		}
		return Permit{}, ErrOpen
	}
	return Permit{b: b, gen: b.gen}, nil
}

// ReadyAt returns when, as of now, the breaker may next admit a call:
// now when it is closed, or half-open with a probe slot free; the end of
// the cooldown when it is open; and when it gives up on its probes when it
// is half-open with every probe slot taken. It changes nothing. A durable
// job refused by an open breaker is rescheduled for then.
func (b *Breaker) ReadyAt(now time.Time) time.Time {
	if b == nil {
		return now
	}
	b.mustBeNew()
	n := b.nanos(now)
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.state {
	case Open:
		if left := b.cooldown - sub(n, b.openedAt); left > 0 {
			return now.Add(time.Duration(left))
		}
	case HalfOpen:
		if b.inflight >= b.probes {
			if left := b.window - sub(n, b.probedAt); left > 0 {
				return now.Add(time.Duration(left))
			}
		}
	}
	return now
}

// StateAt returns the state of the breaker at now. It changes nothing: an
// open breaker whose cooldown has passed at now reports [HalfOpen], because
// that is what the next AllowAt will find, but it only becomes half-open
// when AllowAt is called. So a retry loop can ask whether waiting is
// worthwhile without taking a probe slot.
func (b *Breaker) StateAt(now time.Time) State {
	if b == nil {
		return Closed
	}
	b.mustBeNew()
	n := b.nanos(now)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == Open && sub(n, b.openedAt) >= b.cooldown {
		return HalfOpen
	}
	return b.state
}

// State is shorthand for StateAt(now) with now read from [Config.Clock]
// (time.Now when it is nil).
func (b *Breaker) State() State {
	if b == nil {
		return Closed
	}
	return b.StateAt(clock.Now(b.clk))
}

// Counts are the outcomes in a breaker's sliding window, as returned by
// [Breaker.Counts]: a plain value, whose zero value means an empty window.
type Counts struct {
	Successes int // outcomes recorded as Success
	Failures  int // outcomes recorded as Failure
}

// countsAt returns the outcomes counted in the window that ends at now.
func (b *Breaker) countsAt(now time.Time) Counts {
	if b == nil {
		return Counts{}
	}
	b.mustBeNew()
	n := b.nanos(now)
	b.mu.Lock()
	defer b.mu.Unlock()
	s, f := b.win.sum(floorDiv(n, b.width))
	return Counts{Successes: int(s), Failures: int(f)}
}

// Counts returns the outcomes counted in the window that ends now, read
// from [Config.Clock] (time.Now when it is nil), for metrics and the
// command line. The window is emptied when the breaker closes after a
// half-open period; while open, it keeps the outcomes that opened it (until
// they age out). It changes nothing.
func (b *Breaker) Counts() Counts {
	if b == nil {
		return Counts{}
	}
	return b.countsAt(clock.Now(b.clk))
}

// Permit is the admission of one call by [Breaker.AllowAt]; report the
// call's outcome through it. It is a small value, returned without
// allocation; copy it freely, but record it once. The zero Permit (returned
// with an error, or by a nil *Breaker) records nothing.
//
// A Permit remembers the breaker's generation, which changes with every
// change of state. Outcomes of calls admitted before a change are ignored:
// a slow call that started while the breaker was closed does not count as a
// probe, and a probe from an earlier half-open period does not close the
// breaker.
type Permit struct {
	b     *Breaker
	gen   uint32
	probe bool
}

// RecordAt reports the outcome of the admitted call, finished at now.
//
// In the closed state a Success or a Failure is counted in the window, and a
// Failure may open the breaker. For a probe (half-open), a Failure opens the
// breaker again, a Success counts towards closing it and frees the probe's
// slot, and Ignored only frees the slot. If the breaker changed state since
// the call was admitted, the outcome is ignored. Safe for concurrent use.
func (p Permit) RecordAt(now time.Time, o Outcome) {
	b := p.b
	if b == nil {
		return
	}
	n := b.nanos(now)
	b.mu.Lock()
	switch {
	case b.gen != p.gen:
		// The breaker changed state since the call was admitted. A
		// probe slot belongs to its half-open generation and went
		// away with it, so there is nothing to give back.
	case p.probe:
		b.recordProbe(n, now, o)
	case o == Success:
		b.win.add(floorDiv(n, b.width), 0)
	case o == Failure:
		e := floorDiv(n, b.width)
		b.win.add(e, 1)
		b.maybeOpen(e, n, now)
	}
	b.unlock()
}

// Record is shorthand for RecordAt(now, o) with now read from the breaker's
// [Config.Clock] (time.Now when it is nil).
func (p Permit) Record(o Outcome) {
	if p.b == nil {
		return
	}
	p.RecordAt(clock.Now(p.b.clk), o)
}

// maybeOpen opens the closed breaker if the window ending in epoch e has
// enough outcomes and failures. It is called with mu held.
func (b *Breaker) maybeOpen(e, n int64, at time.Time) {
	s, f := b.win.sum(e)
	total := s + f
	// f/total >= ratio, in integers: f*1e6 overflows only after 2^43
	// outcomes in one window.
	if total >= b.minCalls && f*1e6 >= b.ratioPPM*total {
		b.transition(Open, n, at)
	}
}

// recordProbe records the outcome of a probe of the current half-open
// generation, with mu held.
func (b *Breaker) recordProbe(n int64, at time.Time, o Outcome) {
	if b.inflight == 0 {
		return // recorded twice: the slot is already free
	}
	switch o {
	case Failure:
		b.transition(Open, n, at)
	case Success:
		if b.succ+1 >= b.probes {
			b.transition(Closed, n, at)
			return
		}
		b.inflight--
		b.succ++
		b.probedAt = n
	default: // Ignored, or an unknown Outcome: free the slot
		b.inflight--
		b.probedAt = n
	}
}

// transition changes the state to to, at n nanoseconds (the instant at),
// and queues the change for OnStateChange. It is called with mu held; the
// caller's b.unlock reports the change.
func (b *Breaker) transition(to State, n int64, at time.Time) {
	from := b.state
	b.state, b.gen, b.inflight, b.succ = to, b.gen+1, 0, 0
	b.closedGen.Store(-1)
	switch to {
	case Open:
		b.openedAt = n
	case HalfOpen:
		b.probedAt = n
		b.inflight = 1 // the caller takes the first slot
	case Closed:
		b.win.clear()
		b.closedGen.Store(int64(b.gen))
	}
	if b.onChange != nil {
		b.events = append(b.events, event{from: from, to: to, at: at})
	}
}

// unlock releases mu, first reporting the queued changes of state to
// onChange unless another goroutine is already doing so (it will report
// them after the ones before them).
func (b *Breaker) unlock() {
	if b.delivering || b.next == len(b.events) {
		b.mu.Unlock()
		return
	}
	b.deliver()
}

// deliver calls onChange for every queued event, in order, without holding
// mu during the calls. It is called with mu held and returns with it
// released.
func (b *Breaker) deliver() {
	b.delivering = true
	defer func() {
		// Runs also when onChange panics, so that the next change
		// reports what is left.
		b.delivering = false
		if b.next == len(b.events) {
			b.events, b.next = b.events[:0], 0
		}
		b.mu.Unlock()
	}()
	for b.next < len(b.events) {
		ev := b.events[b.next]
		b.next++
		b.mu.Unlock()
		func() {
			defer b.mu.Lock()
			b.onChange(ev.from, ev.to, ev.at)
		}()
	}
}

func (b *Breaker) mustBeNew() {
	if b.width == 0 {
		panic("breaker: Breaker used without New")
	}
}

// nanos converts an instant to nanoseconds since the Unix epoch as a
// Breaker sees them. An instant without a monotonic clock reading (a fixed
// instant, a fake clock's) maps to its UnixNano. An instant with one (a
// time.Now value) maps to the wall time of New plus the monotonic time
// elapsed since New, so a step of the wall clock does not move it. Both
// saturate instead of overflowing.
func (b *Breaker) nanos(t time.Time) int64 {
	// Round(0) strips the monotonic reading, and only that.
	if t == t.Round(0) {
		return unixNano(t)
	}
	return add(b.baseNano, int64(t.Sub(b.base)))
}

// unixNano is t.UnixNano(), saturated outside the years 1678 to 2262.
func unixNano(t time.Time) int64 {
	const lo, hi = math.MinInt64 / int64(time.Second), math.MaxInt64/int64(time.Second) - 1
	switch s := t.Unix(); {
	case s < lo:
		return math.MinInt64
	case s > hi:
		return math.MaxInt64
	default:
		return s*1e9 + int64(t.Nanosecond())
	}
}

// add returns a+d, saturated to the int64 range.
func add(a, d int64) int64 {
	s := a + d
	if (d > 0 && s < a) || (d < 0 && s > a) {
		if d > 0 {
			return math.MaxInt64
		}
		return math.MinInt64
	}
	return s
}

// sub returns a-b, saturated to the int64 range.
func sub(a, b int64) int64 {
	d := a - b
	if (a >= b) != (d >= 0) {
		if a >= b {
			return math.MaxInt64
		}
		return math.MinInt64
	}
	return d
}

// floorDiv returns a/b rounded towards minus infinity, for b > 0.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}
