// Package budget limits the retries sent to one destination to a share of the
// requests sent to it.
//
// A [Budget] counts first attempts ("requests") and granted retries over a
// sliding window, which moves in steps of a tenth of its length. A retry is
// allowed while
//
//	retries in window + 1 <= Ratio × requests in window + MinPerSecond × Window
//
// and while the current step has spent less than Config.Burst (15%) of that
// allowance, or of the floor (MinPerSecond × Window) when that is more: the
// window refills smoothly, one step at a time, instead of letting an outage
// spend a whole window's allowance in its first second and then none for
// nine.
//
// where the requests are those of the window before the current step: a
// request counts once its step is over (within 1 s, by default). Every
// retry decision then reads settled totals rather than counters that other
// cores are writing, which keeps the shared budget cheap under contention;
// the floor covers the first step of a new client. The limit is applied so
// that in a total outage the dependency sees at most about 1 + Ratio
// times its normal load (1.1× at the default 10%), instead of the 3× that a
// per-call limit of 3 attempts alone permits. The small floor lets a client
// with little traffic still retry.
//
// Share one Budget between every call to the same destination (one per
// process and dependency, not one per call or per client object: budgets that
// each start full add up to no budget at all). Most callers create it with
// [New] and set it as a retry.Policy's Budget; the retry package calls
// [Budget.RequestAt] before each first attempt and [Budget.AllowRetryAt]
// before each retry. [Budget.StatsAt] reports the window for metrics.
//
// The hot path is lock-free (sync/atomic, and a sync.Pool that tells which
// stripe of counters a processor writes), makes no allocations and reads no
// clock: the methods ending in At take the time as an argument, and
// the wrappers without At read the Budget's Clock.
package budget

import (
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/heed-go/heed/clock"
	"github.com/heed-go/heed/internal/stripe"
)

// Defaults used for a zero [Config] field and by the zero [Budget].
const (
	// DefaultRatio is 0.1: retries may add 10% to the requests. This is the
	// per-client limit of the Google SRE book ("Handling Overload"), which
	// bounds the load of an outage to about 1.1× the normal load.
	DefaultRatio = 0.1
	// DefaultWindow is 10 s: long enough to hold a meaningful sample of a
	// busy client's traffic, short enough that the budget refills soon after
	// an outage ends. Finagle's retry budget uses the same 10 s.
	DefaultWindow = 10 * time.Second
	// DefaultBurst is 0.15: one step of the window (a tenth of it, 1 s by
	// default) may spend 15% of the window's allowance (or the floor, when
	// that is more), one and a half times an even share. A short burst of
	// failures still gets half as many retries again as an even share,
	// while in an outage of a steady load of 100 requests/s or more no
	// second sees more than 1 + 1.5 × Ratio times the requests (1.15× at
	// the default 10%), where a plain sliding window lets the first second
	// of the outage spend the whole window's allowance (2.1×). Below that
	// rate the floor dominates, as it does the mean.
	DefaultBurst = 0.15
	// DefaultMinPerSecond is 1, so 10 retries per default window: a client
	// that sends a request a minute can still retry it, while for a busy
	// client the floor is negligible (0.1% more load at 1,000 requests/s).
	// Finagle uses 10 per second, which at 1,000 requests/s already adds 1%.
	DefaultMinPerSecond = 1.0
)

// Limits on [Config] fields, checked by [New].
const (
	// MaxRatio is the largest Ratio accepted (as in Finagle): 1000 retries
	// per request is already no limit at all.
	MaxRatio = 1000.0
	// MinWindow is the shortest Window accepted. Shorter windows hold too
	// few requests to say anything about a ratio.
	MinWindow = 10 * time.Millisecond
	// MaxWindow is the longest Window accepted. A budget over a longer
	// window reacts to an outage too slowly to protect anything (Finagle
	// caps its window at 60 s).
	MaxWindow = time.Hour
)

// None, as a Ratio or a MinPerSecond, stands for zero, which a zero field
// cannot say because it selects the default. It is the smallest positive
// float64, so it allows nothing: Config{MinPerSecond: None} is a pure ratio
// with no floor, and Config{Ratio: None} allows only the floor (a fixed
// number of retries per second, whatever the traffic).
const None = math.SmallestNonzeroFloat64

// ErrInvalid is matched (with errors.Is) by every error [New] returns.
var ErrInvalid = errors.New("budget: invalid config")

// ErrExhausted reports that a retry was denied because the retry budget was
// spent. The budget itself returns false rather than an error; the retry
// package wraps ErrExhausted in the error of a call that ended that way, so
// errors.Is(err, budget.ErrExhausted) tells that case apart.
var ErrExhausted = errors.New("budget: retry budget exhausted")

// InvalidError reports a bad [Config] field; [New] and [Config.Validate]
// return it. It matches [ErrInvalid]. Its message names the field, as in
// "budget: Ratio is -0.5, must not be negative". It is not changed after it
// is made, so it is safe to share.
type InvalidError struct {
	Field  string // the field's name, such as "Ratio"
	Reason string // what is wrong with it, such as "is -0.5, must not be negative"
}

// Error returns the message, prefixed with "budget: ".
func (e *InvalidError) Error() string { return "budget: " + e.Field + " " + e.Reason }

// Is reports whether target is ErrInvalid.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

// Config describes a [Budget]; pass it to [New]. It is a plain value, safe
// to copy. The zero Config is the default budget, and what most callers
// want: 10% of the requests plus 1 retry per second, over 10 s.
type Config struct {
	// Ratio is the number of retries allowed per request in the window
	// (default 0.1, see [DefaultRatio]). It must be in [0, MaxRatio]; use
	// [None] for a budget that grants only the floor.
	Ratio float64
	// Window is the length of the sliding window (default 10 s, see
	// [DefaultWindow]). It must be in [MinWindow, MaxWindow]. The window slides
	// in steps of Window/10 (1 s by default), so a retry stops counting
	// between 0.9 × Window and Window after it was granted, and a request
	// counts towards the limit from the end of its step until one Window
	// later: the budget's precision in time is one tenth of the window.
	Window time.Duration
	// MinPerSecond is the floor: retries per second allowed however few
	// requests there were, granted as MinPerSecond × Window.Seconds()
	// retries per window (default 1, so 10 per default window, see
	// [DefaultMinPerSecond]). It must be finite and not negative; use
	// [None] for no floor.
	MinPerSecond float64
	// Burst is the share of the window's allowance that one step (a tenth
	// of the window) may spend, in (0, 1] (default 0.15, see
	// [DefaultBurst]); a step may always spend the floor, and one retry,
	// when the window allows them. 1 turns the step limit off: one step may
	// then spend the whole window's allowance, as in a plain sliding window.
	Burst float64
	// Clock is read by the convenience wrappers ([Budget.Request],
	// [Budget.AllowRetry], [Budget.Stats]) only; nil means real time.
	Clock clock.Clock
}

// Validate returns an [*InvalidError] naming the first bad field, or nil.
// [New] calls it; call it yourself to check a Config read from a file.
func (c Config) Validate() error {
	switch {
	case math.IsNaN(c.Ratio):
		return &InvalidError{"Ratio", "is NaN, must be a number"}
	case c.Ratio < 0:
		return &InvalidError{"Ratio", fmt.Sprintf("is %v, must not be negative", c.Ratio)}
	case c.Ratio > MaxRatio:
		return &InvalidError{"Ratio", fmt.Sprintf("is %v, must be at most %v", c.Ratio, MaxRatio)}
	case c.Window < 0:
		return &InvalidError{"Window", fmt.Sprintf("is %v, must not be negative", c.Window)}
	case c.Window != 0 && c.Window < MinWindow:
		return &InvalidError{"Window", fmt.Sprintf("is %v, must be at least %v", c.Window, MinWindow)}
	case c.Window > MaxWindow:
		return &InvalidError{"Window", fmt.Sprintf("is %v, must be at most %v", c.Window, MaxWindow)}
	case math.IsNaN(c.MinPerSecond):
		return &InvalidError{"MinPerSecond", "is NaN, must be a number"}
	case c.MinPerSecond < 0:
		return &InvalidError{"MinPerSecond", fmt.Sprintf("is %v, must not be negative", c.MinPerSecond)}
	case math.IsInf(c.MinPerSecond, 1):
		return &InvalidError{"MinPerSecond", "is +Inf, must be finite"}
	case math.IsNaN(c.Burst):
		return &InvalidError{"Burst", "is NaN, must be a number"}
	case c.Burst < 0 || c.Burst > 1:
		return &InvalidError{"Burst", fmt.Sprintf("is %v, must be from 0 to 1", c.Burst)}
	}
	return nil
}

// Stats is a snapshot of a [Budget]'s current window, from [Budget.StatsAt],
// for metrics and the heed command. It is a plain value; the zero value is an
// empty window.
type Stats struct {
	Requests int64 // first attempts recorded
	Retries  int64 // retries granted
	Denied   int64 // retries refused
}

// Bucket scheme. The window is numBuckets buckets of width Window/numBuckets.
// A bucket's epoch is floor(UnixNano / width), and epoch e is kept in slot
// e mod numSlots of a ring. Each counter of a slot is one uint64: the low 32
// bits of the epoch it belongs to in the high half, and the count in the low
// half. Because the epoch travels with the count, a stale slot is reset and
// incremented by a single CAS, and a reader never adds a count from an
// expired epoch: there is no moment at which a reset counter is half written.
//
// Every event counts in the newest bucket (the end of the window). A retry
// decision compares the retries of the window ending there with the
// requests of the numBuckets complete buckets before it, which no longer
// change once the window has moved on; the ring has one slot more than a
// window so that both stay readable. The request total and the retries of
// the older buckets are computed once per bucket width and cached in words
// tagged with the window's end epoch, so a retry decision reads two cached
// words and the newest bucket's retry counter.
//
// Requests and denials, the events of nearly every call, are counted in
// stripes: stripe.N copies of their counters, each on lines of its own,
// and a goroutine adds to the stripe of the processor (P) it runs on (see
// package internal/stripe). A core then writes lines no other core writes,
// and reads lines that change about once per bucket width, so goroutines on
// several cores do not pass a line back and forth on every call; the
// stripes are added up only to refresh the caches and for StatsAt. Granted retries are not
// striped: a grant must claim the last unit of budget exactly once, with a
// CAS on one word. (Counting the newest bucket's requests as well would make
// every retry decision gather every stripe's newest line: measured two to
// three times slower when requests and retries mix.)
const (
	numBuckets = 10
	numSlots   = numBuckets + 1
	countBits  = 32
	countMask  = 1<<countBits - 1
	// maxCount is where a bucket's counts saturate. Increments that race
	// past the check add at most one each, far below the 2^32 that would
	// carry into the epoch bits.
	maxCount = 1 << 31
	// A cached total: the end epoch's low 32 bits, a valid bit, and a
	// 31-bit total that saturates.
	cacheValid = 1 << 31
	cacheMask  = cacheValid - 1
	// eps absorbs float rounding in Ratio × requests (0.29 × 100 is
	// 28.999999999999996 in float64, and must still allow 29 retries).
	eps = 1e-9
	// bias maps int64 epochs to uint64 preserving order, so that the zero
	// value of Budget.newest is the smallest epoch.
	bias = 1 << 63
	// Times without a monotonic reading are clamped to ±2^32 s around 1970
	// (years 1833 to 2106), so that Unix nanoseconds, and the difference of
	// two of them, fit an int64 (time.Time.UnixNano is undefined outside
	// 1678..2262, and the zero time.Time is far outside).
	maxSec = 1<<32 - 1
	minSec = -1 << 32
	// Times with a monotonic reading are clamped to ±2^61 ns (73 years)
	// around the start of the process, which stays inside the same range.
	maxSpan = 1 << 61
)

// base anchors the bucket epochs of times that carry a monotonic clock
// reading (those from time.Now): such a time is placed at
// baseNs + now.Sub(base), which Sub computes from the monotonic readings,
// so steps of the system's wall clock do not move the window.
var (
	base   = time.Now()
	baseNs = base.UnixNano()
)

// Kinds of striped counter.
const (
	requests = iota
	denied
)

// stripeCounts holds one stripe's request and denial counters for every
// slot. The padding keeps the next stripe's counters at least a cache line
// away.
type stripeCounts struct {
	c [2][numSlots]atomic.Uint64 // by kind, then slot
	_ [64]byte
}

// Budget is a retry budget shared by every call to one destination.
//
// Create one with [New] and share the pointer; most callers then only set it
// on a retry.Policy. The zero value is also usable and behaves as
// New(Config{}): 10% plus 1 retry per second over 10 s, real time. A Budget
// must not be copied after first use.
//
// A Budget is safe for concurrent use by any number of goroutines. Its
// methods never allocate and never wait for each other: they use sync/atomic,
// and sync.Pool to find the caller's stripe of counters (whose first
// use after each garbage collection takes the Pool's registration lock for
// a moment). Every call is counted once. Under concurrency a few decisions are approximate,
// each by about one count per racing call:
//
//   - AllowRetryAt claims its retry with a compare-and-swap on the newest
//     bucket, so two retries racing for the last unit of budget never both
//     win.
//   - A call racing with the window's move to a new bucket may count in the
//     bucket just closed after its total was cached; the cached total then
//     misses that count until the window moves again (at most one bucket
//     width): a retry counted so makes the budget over-grant by one, a
//     request counted so is not seen by the limit (the budget errs towards
//     denying).
//   - A call descheduled for a whole window while the window moves on may
//     add its count to the newer bucket that reused its slot.
//
// No count is ever negative, lost to a torn reset, or counted from an
// expired bucket.
//
// Cost: RequestAt is one atomic add to the caller's stripe; AllowRetryAt
// reads four words and makes one atomic write: a CAS when granting, an add
// to the caller's stripe when denying. Finding the stripe costs about 10 ns
// (a sync.Pool Get and Put), so on one core of a small VM a request or a
// denial takes about 25 ns and a grant 15. Goroutines on several cores
// write different lines and share lines that change once per step, so the
// cost per call stays about the same under contention (about 15 to 20 ns a
// call under b.RunParallel on a 2-core VM); only grants, a tenth of the
// requests at most by default, contend for one word.
//
// Time: buckets are keyed by Unix time in multiples of the bucket width. A
// time from time.Now (as the wrappers and the retry package use) is placed
// by its monotonic clock reading, so steps of the system's wall clock do not
// disturb the window; other times (time.Date, time.Unix, a fake clock) are
// placed by their wall-clock value. The window ends at the newest bucket any
// call has seen, and every call counts in that bucket. A time before it (a
// caller that read the clock a moment before another, a stale or zero
// time.Time) is treated as the newest bucket's time, so the window never
// moves backwards and old times cannot reset live buckets. A time far in the
// future moves the window there, and until time catches up every call
// counts in that one bucket, which never completes: only what is left of
// the floor is granted. Only an explicit wrong time can do this.
// Epochs are stored modulo 2^32 bucket widths, so a bucket left untouched
// for an exact multiple of 2^32 widths (136 years at the default 1 s
// buckets) would be taken for a live one.
type Budget struct {
	width int64   // bucket width in ns; 0 in the zero value: defaults
	ratio float64 // retries per request
	floor float64 // retries per window granted regardless of requests
	burst float64 // share of the window's allowance one step may spend
	clk   clock.Clock

	// Read on every call, written about once per bucket width. The padding
	// keeps them off the lines of the fields around them whatever the
	// Budget's alignment (the allocator does not align it to a cache line;
	// a heap Budget starts 8 bytes past one).
	_          [64]byte
	newest     atomic.Uint64 // newest epoch seen, biased
	closedReqs atomic.Uint64 // cached total of the window's older buckets
	closedRets atomic.Uint64
	_          [64]byte

	rets    [numSlots]atomic.Uint64 // granted retries, by slot
	_       [64]byte
	stripes [stripe.N]stripeCounts // requests and denials
}

// New returns a Budget for cfg, or an [*InvalidError] matching [ErrInvalid]
// that names the first bad field. Zero fields take their defaults. Most
// callers want New(budget.Config{}).
func New(cfg Config) (*Budget, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Ratio == 0 {
		cfg.Ratio = DefaultRatio
	}
	if cfg.Window == 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.MinPerSecond == 0 {
		cfg.MinPerSecond = DefaultMinPerSecond
	}
	if cfg.Burst == 0 {
		cfg.Burst = DefaultBurst
	}
	return &Budget{
		burst: cfg.Burst,
		width: int64(cfg.Window / numBuckets),
		ratio: cfg.Ratio,
		floor: cfg.MinPerSecond * cfg.Window.Seconds(),
		clk:   cfg.Clock,
	}, nil
}

// params returns the bucket width, ratio and floor, or the defaults for the
// zero Budget.
func (b *Budget) params() (width int64, ratio, floor float64) {
	if b.width == 0 {
		return int64(DefaultWindow / numBuckets), DefaultRatio, DefaultMinPerSecond * DefaultWindow.Seconds()
	}
	return b.width, b.ratio, b.floor
}

// burstShare returns the share of the window's allowance one step may
// spend.
func (b *Budget) burstShare() float64 {
	if b.width == 0 {
		return DefaultBurst
	}
	return b.burst
}

// unixNano returns now in Unix nanoseconds, taken from the monotonic
// reading when now has one (see base), and clamped to a range where neither
// it nor a difference of two such values can overflow.
func unixNano(now time.Time) int64 {
	if wall := now.Round(0); now != wall {
		// now has a monotonic reading (Round(0) strips it; == compares
		// the representation, not the instant): a cheap subtraction.
		return baseNs + min(max(int64(now.Sub(base)), -maxSpan), maxSpan)
	}
	sec := min(max(now.Unix(), minSec), maxSec)
	return sec*1e9 + int64(now.Nanosecond())
}

// epochOf returns the bucket number of ns: floor(ns / width).
func epochOf(ns, width int64) int64 {
	e := ns / width
	if e*width > ns {
		e-- // round towards minus infinity
	}
	return e
}

// slotOf returns the ring slot of epoch e.
func slotOf(e int64) int {
	s := e % numSlots
	if s < 0 {
		s += numSlots
	}
	return int(s)
}

// tagOf returns epoch e's tag: its low 32 bits in the high half of a word.
func tagOf(e int64) uint64 { return uint64(uint32(e)) << countBits }

// end returns the epoch a call at time now counts in, the newest epoch
// once now has been seen, moving the window forward when now is past its
// newest bucket. In the common case (now in the newest bucket, or before
// it) that is one load and a multiplication, no division.
func (b *Budget) end(now time.Time, width int64) int64 {
	ns := unixNano(now)
	for {
		n := b.newest.Load()
		newest := int64(n ^ bias)
		if n != 0 && ns < (newest+1)*width {
			return newest
		}
		e := epochOf(ns, width)
		if n != 0 && e <= newest {
			return newest
		}
		if b.newest.CompareAndSwap(n, uint64(e)^bias) {
			return e
		}
	}
}

// add counts one event in word w, which is a counter of the slot of epoch
// e, resetting it if it still holds an older epoch. The common case is a
// single atomic add, with no load before it: on a contended cache line a
// load followed by a write costs two transfers of the line instead of one.
func (b *Budget) add(w *atomic.Uint64, e int64) {
	tag := tagOf(e)
	v := w.Add(1)
	if v&^countMask == tag {
		if v&countMask > maxCount {
			w.Add(^uint64(0)) // saturated: take it back
		}
		return
	}
	// The slot holds another epoch, and our 1 went to it.
	for {
		if b.overtaken(e) {
			// The ring moved a whole turn past e during this call, so
			// the slot may now belong to a newer bucket: let the 1
			// count there rather than reset it.
			return
		}
		// The slot holds an older epoch, outside every window that can
		// still be read, so the 1 is harmless until this reset erases it.
		if w.CompareAndSwap(v, tag|1) {
			return
		}
		v = w.Load()
		if v&^countMask == tag {
			w.Add(1) // another call reset the slot, erasing our 1
			return
		}
	}
}

// overtaken reports whether the ring has moved so far past epoch e that
// e's slot may hold a newer epoch.
func (b *Budget) overtaken(e int64) bool {
	return int64(b.newest.Load()^bias)-e >= numSlots
}

// count returns the count of word w if it belongs to the epoch of tag.
func count(w, tag uint64) int64 {
	if w&^countMask == tag {
		return int64(w & countMask)
	}
	return 0
}

// inSpan returns the count of word w if its epoch is one of the n epochs
// that end with the epoch whose low 32 bits are last.
func inSpan(w uint64, last, n uint32) uint64 {
	if last-uint32(w>>countBits) < n {
		return w & countMask
	}
	return 0
}

// sum returns the total of striped counter kind over the n epochs ending
// with epoch last.
func (b *Budget) sum(kind int, last int64, n uint32) int64 {
	var s uint64
	for j := range b.stripes {
		for i := range numSlots {
			s += inSpan(b.stripes[j].c[kind][i].Load(), uint32(last), n)
		}
	}
	return int64(s)
}

// sumRets is sum for the granted retries.
func (b *Budget) sumRets(last int64, n uint32) int64 {
	var s uint64
	for i := range b.rets {
		s += inSpan(b.rets[i].Load(), uint32(last), n)
	}
	return int64(s)
}

// cached returns the total that total computes for the window ending at
// end, from cache when it holds that window's, and otherwise caches it.
func cached(cache *atomic.Uint64, end int64, total func() int64) int64 {
	tag := tagOf(end) | cacheValid
	w := cache.Load()
	if w&^cacheMask == tag {
		return int64(w & cacheMask)
	}
	s := min(total(), cacheMask)
	cache.CompareAndSwap(w, tag|uint64(s))
	return s
}

// RequestAt records one request (a first attempt) at time now. Call it once
// per call to the destination, before the first attempt; retries are
// counted by AllowRetryAt instead. It is safe for concurrent use and does not
// allocate.
func (b *Budget) RequestAt(now time.Time) {
	width, _, _ := b.params()
	e := b.end(now, width)
	b.add(&b.stripes[stripe.Of()].c[requests][slotOf(e)], e)
}

// Request is shorthand for RequestAt(now) with now read from the Budget's
// Clock (real time by default).
func (b *Budget) Request() { b.RequestAt(clock.Now(b.clk)) }

// AllowRetryAt reports whether a retry at time now fits the budget: whether
//
//	retries in window + 1 <= Ratio × requests in window + MinPerSecond × Window
//
// with the retries of the window ending at now's step, and the requests of
// the window ending at the step before it (see the package documentation).
// If it does, the retry is counted as spent and AllowRetryAt returns true; if
// not, a denial is counted and it returns false. Ask once per retry, just
// before making it. It is safe for concurrent use and does not allocate.
func (b *Budget) AllowRetryAt(now time.Time) bool {
	width, ratio, floor := b.params()
	end := b.end(now, width)
	slot, tag := slotOf(end), tagOf(end)
	// The requests of the numBuckets complete buckets before end, and the
	// retries of the numBuckets-1 before it.
	reqs := cached(&b.closedReqs, end, func() int64 { return b.sum(requests, end-1, numBuckets) })
	rets := cached(&b.closedRets, end, func() int64 { return b.sumRets(end-1, numBuckets-1) })
	limit := (ratio*float64(reqs) + floor) * (1 + eps)
	// One step may spend at most the Burst share of the window's
	// allowance, or the floor when that is more (so that a client with
	// little traffic keeps its few retries), and always one retry when the
	// window allows it: an outage of a busy client does not spend a whole
	// window's allowance in its first step.
	step := max(limit*b.burstShare(), floor, 1)
	w := &b.rets[slot]
	for {
		old := w.Load()
		mine := count(old, tag)
		if float64(rets+mine+1) > limit || float64(mine+1) > step || (old&^countMask != tag && b.overtaken(end)) {
			// Denied; or the ring moved on during this call and the slot
			// may belong to a newer bucket: deny rather than overwrite it.
			b.add(&b.stripes[stripe.Of()].c[denied][slot], end)
			return false
		}
		if mine >= maxCount {
			return true // saturated: grant without counting further
		}
		if w.CompareAndSwap(old, tag|uint64(mine+1)) {
			return true
		}
	}
}

// RefillAt returns when, as of now, a retry the budget denied may next be
// granted: the start of the window's next step, when both the window's
// allowance and the step's share are renewed. It changes nothing. A durable
// job deferred by an empty budget is rescheduled for then.
func (b *Budget) RefillAt(now time.Time) time.Time {
	width, _, _ := b.params()
	ns := unixNano(now)
	e := max(epochOf(ns, width), int64(b.newest.Load()^bias))
	return now.Add(time.Duration((e+1)*width - ns))
}

// AllowRetry is shorthand for AllowRetryAt(now) with now read from the
// Budget's Clock (real time by default).
func (b *Budget) AllowRetry() bool { return b.AllowRetryAt(clock.Now(b.clk)) }

// StatsAt returns the counts of the window as of time now, its current
// step included (so Requests may hold requests that do not count towards
// the limit yet). It changes
// nothing: a now after the newest bucket reports the window ending at now
// (older buckets drop out), and a now before it reports the window ending at
// the newest bucket, where the other methods would count it. It is safe for
// concurrent use; under concurrent updates its three counts are read one
// after the other, not as one snapshot. Most callers export it as metrics.
func (b *Budget) StatsAt(now time.Time) Stats {
	width, _, _ := b.params()
	end := max(epochOf(unixNano(now), width), int64(b.newest.Load()^bias))
	return Stats{
		Requests: b.sum(requests, end, numBuckets),
		Retries:  b.sumRets(end, numBuckets),
		Denied:   b.sum(denied, end, numBuckets),
	}
}

// Stats is shorthand for StatsAt(now) with now read from the Budget's Clock
// (real time by default).
func (b *Budget) Stats() Stats { return b.StatsAt(clock.Now(b.clk)) }
