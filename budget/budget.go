// Package budget limits the retries sent to one destination to a share of the
// requests sent to it, and lets retries that work earn more.
//
// A [Budget] counts first attempts ("requests"), granted retries and retries
// that succeeded over a sliding window, which moves in steps of a tenth of
// its length. A retry is allowed while
//
//	retries in window + 1 <= limit
//	limit = max(min(Ratio × requests + Earn × succeeded retries, Ceiling × requests), floor)
//
// (the ratio part alone when Ceiling × requests is below it), floor being
// MinPerSecond × Window, and while the current step has spent less than its
// share: Burst (15%) of the ratio part (or of the floor, or one retry,
// whichever is more) plus what succeeded retries earned. The window then
// refills smoothly, one step at a time, instead of letting an outage spend
// a whole window's allowance in its first second.
//
// What this does to the load of a dependency, at the defaults:
//
//   - In a total outage no retry succeeds, so nothing is earned: the
//     dependency sees at most 1 + Ratio times its normal load (1.1×), and
//     1 + 1.5 × Ratio (1.15×) in any one second, instead of the 3× that a
//     per-call limit of 3 attempts alone permits.
//   - When half of the calls fail at random, retries succeed half of the
//     time, each success earns two more, and the budget grows to what the
//     calls' attempt limits ask for (1.75× for 3 attempts), so most users
//     are served (87.5% at 3 attempts instead of 55%). It never grows past
//     Ceiling (1 retry per request, 2×), and retries that keep failing earn
//     nothing: an overload whose retries mostly fail gets back to the ratio
//     part within a window.
//   - The floor is a minimum, not an addition: above Floor / Ratio requests
//     per window (1 request per second at the defaults) the ratio holds
//     exactly; below it, the destination sees at most 1 retry per 10 s from
//     the process, so that a client that sends a request a minute can still
//     retry it.
//
// Share one Budget between every call to the same destination (one per
// process and dependency, not one per call or per client object: budgets that
// each start full add up to no budget at all). [For] returns the process's
// Budget for a destination, which is what retryhttp does by default; or
// create one with [New] and set it as a retry.Policy's Budget. The retry
// package calls [Budget.RequestAt] before each first attempt,
// [Budget.AllowRetryAt] before each retry and [Budget.RetrySucceededAt] when a
// retry succeeds. [Budget.StatsAt] reports the window for metrics.
//
// The methods ending in At take the time as an argument and read no clock;
// the wrappers without At read the Budget's Clock.
package budget

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/heed-go/heed/clock"
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
	// default) may spend 15% of the window's ratio part (or the floor, or
	// one retry, when that is more), one and a half times an even share. In
	// an outage of a steady load no second then sees more than
	// 1 + 1.5 × Ratio times the requests (1.15× at the default 10%), where
	// a plain sliding window lets the first second of the outage spend the
	// whole window's allowance (2.1×).
	DefaultBurst = 0.15
	// DefaultMinPerSecond is 0.1, so a floor of 1 retry per default window:
	// a client that sends a request a minute can still retry it. The floor
	// is a minimum, not an addition, so from 1 request per second on it
	// changes nothing and the ratio holds. (Finagle adds 10 retries per
	// second to its ratio, which at 2 requests per second is a 6× load.)
	DefaultMinPerSecond = 0.1
	// DefaultEarn is 2: a retry that succeeds earns two more. When retries
	// succeed at least half of the time (a partial outage: a retry is as
	// likely to work as a first attempt) the budget grows to Ceiling; when
	// they succeed less often, it settles at Ratio / (1 - Earn × success)
	// of the requests; when none succeed (a total outage), at Ratio.
	DefaultEarn = 2.0
	// DefaultCeiling is 1: however much is earned, retries stay at most
	// one per request in the window (a 2× load), so an overload whose
	// retries still half succeed cannot grow its own load further.
	DefaultCeiling = 1.0
)

// Limits on [Config] fields, checked by [New].
const (
	// MaxRatio is the largest Ratio and Ceiling accepted (as in Finagle):
	// 1000 retries per request is already no limit at all.
	MaxRatio = 1000.0
	// MinWindow is the shortest Window accepted. Shorter windows hold too
	// few requests to say anything about a ratio.
	MinWindow = 10 * time.Millisecond
	// MaxWindow is the longest Window accepted. A budget over a longer
	// window reacts to an outage too slowly to protect anything (Finagle
	// caps its window at 60 s).
	MaxWindow = time.Hour
)

// ErrInvalid is matched (with errors.Is) by every error [New] returns.
var ErrInvalid = errors.New("budget: invalid config")

// ErrExhausted reports that a retry was denied because the retry budget was
// spent. The budget itself returns false rather than an error; the retry
// package wraps ErrExhausted in the error of a call that ended that way, so
// errors.Is(err, budget.ErrExhausted) tells that case apart.
var ErrExhausted = errors.New("budget: retry budget exhausted")

// InvalidError reports a bad [Config] field; [New] and [Config.Validate]
// return it. It matches [ErrInvalid]. Its message names the field, as in
// "budget: Ratio is NaN, must be a number". It is not changed after it
// is made, so it is safe to share.
type InvalidError struct {
	Field  string // the field's name, such as "Ratio"
	Reason string // what is wrong with it, such as "is NaN, must be a number"
}

// Error returns the message, prefixed with "budget: ".
func (e *InvalidError) Error() string { return "budget: " + e.Field + " " + e.Reason }

// Is reports whether target is ErrInvalid.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

// Config describes a [Budget]; pass it to [New] or [For]. It is a plain
// value, safe to copy. The zero Config is the default budget, and what most
// callers want: 10% of the requests, more while retries succeed, at least 1
// retry per 10 s.
//
// Zero fields take their defaults; a negative number turns a part off, as
// everywhere in heed.
type Config struct {
	// Ratio is the number of retries allowed per request in the window
	// (default 0.1, see [DefaultRatio]); at most [MaxRatio]. Negative: no
	// budget at all, every retry is allowed ([New] and [For] then return
	// a nil *Budget, which a retry.Policy reads as no budget).
	Ratio float64
	// Window is the length of the sliding window (default 10 s, see
	// [DefaultWindow]). It must be in [MinWindow, MaxWindow]. The window slides
	// in steps of Window/10 (1 s by default): a request or retry stops
	// counting between 0.9 × Window and Window after it was counted.
	Window time.Duration
	// MinPerSecond is the floor: the window allows at least
	// MinPerSecond × Window.Seconds() retries however few requests there
	// were (default 0.1, so 1 per default window, see
	// [DefaultMinPerSecond]). It must be finite. Negative: no floor.
	MinPerSecond float64
	// Burst is the share of the window's ratio part (or floor) that one
	// step may spend, in (0, 1] (default 0.15, see [DefaultBurst]); a step
	// may always spend one retry, and what succeeded retries earned. 1
	// turns the step limit off: one step may then spend the whole window's
	// allowance, as in a plain sliding window.
	Burst float64
	// Earn is the number of retries a retry that succeeded adds to the
	// window's allowance (default 2, see [DefaultEarn]). Negative: retries
	// earn nothing, and the budget is the ratio part and the floor alone.
	Earn float64
	// Ceiling bounds what earning can reach: retries per request in the
	// window (default 1, see [DefaultCeiling]); at most [MaxRatio]. Below
	// Ratio it has no effect. Negative: no ceiling, so earning is bounded
	// only by the attempts of each call.
	Ceiling float64
	// Clock is read by the convenience wrappers ([Budget.Request],
	// [Budget.AllowRetry], [Budget.RetrySucceeded], [Budget.Stats]) only;
	// nil means real time.
	Clock clock.Clock
}

// Validate returns an [*InvalidError] naming the first bad field, or nil.
// [New] calls it; call it yourself to check a Config read from a file.
func (c Config) Validate() error {
	switch {
	case math.IsNaN(c.Ratio):
		return &InvalidError{"Ratio", "is NaN, must be a number"}
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
	case math.IsInf(c.MinPerSecond, 1):
		return &InvalidError{"MinPerSecond", "is +Inf, must be finite"}
	case math.IsNaN(c.Burst):
		return &InvalidError{"Burst", "is NaN, must be a number"}
	case c.Burst < 0 || c.Burst > 1:
		return &InvalidError{"Burst", fmt.Sprintf("is %v, must be from 0 to 1", c.Burst)}
	case math.IsNaN(c.Earn):
		return &InvalidError{"Earn", "is NaN, must be a number"}
	case math.IsInf(c.Earn, 1):
		return &InvalidError{"Earn", "is +Inf, must be finite"}
	case math.IsNaN(c.Ceiling):
		return &InvalidError{"Ceiling", "is NaN, must be a number"}
	case c.Ceiling > MaxRatio:
		return &InvalidError{"Ceiling", fmt.Sprintf("is %v, must be at most %v", c.Ceiling, MaxRatio)}
	}
	return nil
}

// Off reports whether c turns the budget off (a negative Ratio).
func (c Config) Off() bool { return c.Ratio < 0 }

// params are a Config after defaults, as a Budget uses them.
type params struct {
	width   int64   // bucket width in ns
	ratio   float64 // retries per request
	floor   float64 // retries per window granted regardless of requests
	burst   float64 // share of the ratio part one step may spend
	earn    float64 // retries earned per retry that succeeded
	ceiling float64 // retries per request earning may reach; +Inf: none
}

// resolve applies the defaults.
func (c Config) resolve() params {
	pick := func(v, def float64) float64 {
		switch {
		case v == 0:
			return def
		case v < 0:
			return 0
		}
		return v
	}
	w := c.Window
	if w == 0 {
		w = DefaultWindow
	}
	p := params{
		width:   int64(w / numBuckets),
		ratio:   pick(c.Ratio, DefaultRatio),
		floor:   pick(c.MinPerSecond, DefaultMinPerSecond) * w.Seconds(),
		burst:   pick(c.Burst, DefaultBurst),
		earn:    pick(c.Earn, DefaultEarn),
		ceiling: pick(c.Ceiling, DefaultCeiling),
	}
	if c.Ceiling < 0 {
		p.ceiling = math.Inf(1)
	}
	return p
}

// defaults are the parameters of the zero Budget.
var defaults = Config{}.resolve()

// Stats is a snapshot of a [Budget]'s current window, from [Budget.StatsAt],
// for metrics and the heed command. It is a plain value; the zero value is an
// empty window.
type Stats struct {
	Requests  int64 // first attempts recorded
	Retries   int64 // retries granted
	Denied    int64 // retries refused
	Succeeded int64 // retries that succeeded
}

const (
	// numBuckets is the number of steps in a window.
	numBuckets = 10
	// eps absorbs float rounding in Ratio × requests (0.29 × 100 is
	// 28.999999999999996 in float64, and must still allow 29 retries).
	eps = 1e-9
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

// bucket holds the counts of one step of the window.
type bucket struct {
	epoch                  int64 // floor(UnixNano / width)
	reqs, rets, wins, deny int64
}

// Budget is a retry budget shared by every call to one destination.
//
// Get one with [For] (the process's budget for a destination) or [New], and
// share the pointer; most callers then only set it on a retry.Policy. The
// zero value is also usable and behaves as New(Config{}), real time. A
// Budget must not be copied after first use.
//
// A Budget is safe for concurrent use by any number of goroutines: a mutex
// guards its counts, held for a few nanoseconds per call. Its methods never
// allocate. (Until v0.x it was lock-free with per-processor stripes of
// counters; on a path that wraps a network call the mutex costs a few
// nanoseconds more and is far easier to change: see the benchmarks.)
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
// counts in that one bucket: only an explicit wrong time can do this.
type Budget struct {
	mu      sync.Mutex
	p       params // zero width in the zero value: defaults
	clk     clock.Clock
	newest  int64 // epoch of the newest bucket; valid when started
	started bool
	b       [numBuckets]bucket // by epoch mod numBuckets
}

// New returns a Budget for cfg, or an [*InvalidError] matching [ErrInvalid]
// that names the first bad field. Zero fields take their defaults. For a
// config that turns the budget off (a negative Ratio) it returns nil, nil:
// no budget. Most callers want [For], which shares one Budget per
// destination in the process.
func New(cfg Config) (*Budget, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Off() {
		return nil, nil
	}
	return &Budget{p: cfg.resolve(), clk: cfg.Clock}, nil
}

// params returns the budget's parameters, or the defaults for the zero
// Budget.
func (b *Budget) params() *params {
	if b.p.width == 0 {
		return &defaults
	}
	return &b.p
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

// cur returns the bucket a call at now counts in, moving the window forward
// when now is past its newest bucket. b.mu must be held.
func (b *Budget) cur(now time.Time, width int64) *bucket {
	if e := epochOf(unixNano(now), width); !b.started || e > b.newest {
		b.newest, b.started = e, true
	}
	k := b.newest % numBuckets
	if k < 0 {
		k += numBuckets
	}
	bk := &b.b[k]
	if bk.epoch != b.newest {
		*bk = bucket{epoch: b.newest}
	}
	return bk
}

// window returns the totals of the window ending at epoch end. b.mu must be
// held.
func (b *Budget) window(end int64) (s Stats) {
	for i := range b.b {
		bk := &b.b[i]
		if d := end - bk.epoch; d >= 0 && d < numBuckets {
			s.Requests += bk.reqs
			s.Retries += bk.rets
			s.Denied += bk.deny
			s.Succeeded += bk.wins
		}
	}
	return s
}

// RequestAt records one request (a first attempt) at time now. Call it once
// per call to the destination, before the first attempt; retries are
// counted by AllowRetryAt instead. It is safe for concurrent use and does not
// allocate.
func (b *Budget) RequestAt(now time.Time) {
	p := b.params()
	b.mu.Lock()
	b.cur(now, p.width).reqs++
	b.mu.Unlock()
}

// Request is shorthand for RequestAt(now) with now read from the Budget's
// Clock (real time by default).
func (b *Budget) Request() { b.RequestAt(clock.Now(b.clk)) }

// RetrySucceededAt records that a retry granted by AllowRetryAt succeeded,
// at time now: it earns Earn more retries for the rest of the window. The
// retry package calls it; it is safe for concurrent use and does not
// allocate.
func (b *Budget) RetrySucceededAt(now time.Time) {
	p := b.params()
	b.mu.Lock()
	b.cur(now, p.width).wins++
	b.mu.Unlock()
}

// RetrySucceeded is shorthand for RetrySucceededAt(now) with now read from
// the Budget's Clock (real time by default).
func (b *Budget) RetrySucceeded() { b.RetrySucceededAt(clock.Now(b.clk)) }

// AllowRetryAt reports whether a retry at time now fits the budget (see the
// package documentation for the rule), over the window ending at now's
// step. If it does, the retry is counted as spent and AllowRetryAt returns
// true; if not, a denial is counted and it returns false. Ask once per
// retry, just before making it. It is safe for concurrent use and does not
// allocate.
func (b *Budget) AllowRetryAt(now time.Time) bool {
	p := b.params()
	b.mu.Lock()
	defer b.mu.Unlock()
	bk := b.cur(now, p.width)
	w := b.window(b.newest)
	reqs := float64(w.Requests)
	// The ratio part, raised to the floor; then what succeeded retries
	// earned, up to the ceiling.
	own := max(p.ratio*reqs, p.floor)
	limit := own
	if earned := p.earn * float64(w.Succeeded); earned > 0 {
		limit = max(min(own+earned, p.ceiling*reqs), own)
	}
	// One step may spend the Burst share of its own part (at least one
	// retry) and all that was earned: an outage does not spend a whole
	// window in its first step, while a partial outage, whose retries
	// succeed, is not slowed down by it.
	step := max(own*p.burst, 1) + (limit - own)
	if float64(w.Retries+1) > limit*(1+eps) || float64(bk.rets+1) > step*(1+eps) {
		bk.deny++
		return false
	}
	bk.rets++
	return true
}

// RefillAt returns when, as of now, a retry the budget denied may next be
// granted: the start of the window's next step, when both the window's
// allowance and the step's share are renewed. It changes nothing. A durable
// job deferred by an empty budget is rescheduled for then.
func (b *Budget) RefillAt(now time.Time) time.Time {
	p := b.params()
	ns := unixNano(now)
	e := epochOf(ns, p.width)
	b.mu.Lock()
	if b.started {
		e = max(e, b.newest)
	}
	b.mu.Unlock()
	return now.Add(time.Duration((e+1)*p.width - ns))
}

// AllowRetry is shorthand for AllowRetryAt(now) with now read from the
// Budget's Clock (real time by default).
func (b *Budget) AllowRetry() bool { return b.AllowRetryAt(clock.Now(b.clk)) }

// StatsAt returns the counts of the window as of time now, its current
// step included. It changes nothing: a now after the newest bucket reports
// the window ending at now (older buckets drop out), and a now before it
// reports the window ending at the newest bucket, where the other methods
// would count it. It is safe for concurrent use. Most callers export it as
// metrics.
func (b *Budget) StatsAt(now time.Time) Stats {
	p := b.params()
	e := epochOf(unixNano(now), p.width)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.started {
		e = max(e, b.newest)
	}
	return b.window(e)
}

// Stats is shorthand for StatsAt(now) with now read from the Budget's Clock
// (real time by default).
func (b *Budget) Stats() Stats { return b.StatsAt(clock.Now(b.clk)) }
