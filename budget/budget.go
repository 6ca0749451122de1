// Package budget limits the retries sent to one destination: a bucket of
// retries that requests and time fill and retries empty.
//
// A [Budget] holds up to Burst retries (default 5) and starts full, so that
// a new process may retry its first failures. Each request (a first
// attempt) adds Ratio of a retry (0.09); time adds MinPerSecond retries per
// second (1) as a floor, not on top: while requests add at least that,
// time adds nothing. A retry is allowed while the bucket holds a whole
// one, and takes it. A retry that succeeds puts Earn retries back (3: its
// own and two more), and may fill the bucket to three times Burst, while
// the attempts of the last Window (10 s) stay under (1 + Ceiling) times
// the demand, the requests plus the retries that succeeded; past that it
// puts back only its own. Nothing follows wall-clock steps: the only burst
// is the bucket.
//
// What this does to the load of a dependency, at the defaults (r is one
// process's requests per second to it):
//
//   - A new process: its first 5 failures may be retried at once, and each
//     retry that succeeds pays for itself and two more, so that a fresh
//     client calling endpoints that answer 503, 503, 200 gets all of its
//     calls through.
//   - A total outage, where no retry succeeds: the bucket is spent, then
//     refills at max(Ratio × r, MinPerSecond) retries per second. Over an
//     outage of T seconds the dependency sees at most
//     1 + Ratio + Burst/(r × T) times its load (1.09× in the long run;
//     1.095× for 10 s at 100 requests/s, and at most 1.10× for any outage
//     of 5 s or more at 100 requests/s), and in any one second at most
//     1 + Ratio + Burst/r (1.14× at 100 requests/s), wherever in a second
//     the outage starts. Below MinPerSecond / Ratio requests per second
//     (about 11) the floor rules: MinPerSecond retries per second after
//     the burst.
//   - A fleet of N processes: at most N × Burst retries at the onset, then
//     the sum of max(Ratio × r_i, MinPerSecond) per second. Short-lived
//     processes (commands, functions): at most Burst retries per process
//     start, plus MinPerSecond per second of its life: the per-call
//     attempt limit, not the budget, is what bounds a loop of short runs.
//   - When half of the calls fail at random, retries succeed half of the
//     time, each success puts three back, and the budget grants what the
//     calls' attempt limits ask for (1.75× for 3 attempts, 87% served
//     instead of 55%). Retries pay for themselves while one in three
//     succeeds; retries that fail more often than that earn nothing on
//     balance, and an overload whose retries mostly fail gets the ratio
//     alone. An outage that follows a partial one may spend what
//     successes put by: at most 3 × Burst at its onset.
//   - Recovery: the bucket refills at Ratio × r as soon as requests flow
//     (9 retries a second at 100 requests/s), and a durable backlog whose
//     retries succeed drains with no new requests at all: its succeeded
//     retries count as demand, so once they outnumber the failed retries
//     still in the window each earns more than it spent (500 jobs after a
//     15 s outage: 95% done 2 to 4 s after the heal, SQLite or
//     PostgreSQL).
//
// The model, and the designs it was chosen from: gRPC's retry throttling
// (gRFC A6) and the AWS SDKs' retry quota keep a bucket per destination
// that starts full, which is what lets a new client retry; but gRPC fills
// it only from successes (a total outage at low traffic then never
// retries again) and AWS's 500 tokens are a burst of 100 retries.
// Finagle's RetryBudget deposits a share of each request, as here, but
// adds its 10 retries per second on top of the share (6× the load at 2
// requests per second); here the floor is a minimum. Envoy's budget bounds
// concurrent retries to 20% of active requests (min_retry_concurrency 3),
// which bounds work in flight, not the rate a failing dependency sees. The
// Google SRE book's per-client limit of 10% is where the Ratio comes from;
// it is 9% so that the bucket's burst, spent at an outage's onset, still
// leaves the whole outage within 1.1× (1 + 0.1 alone leaves no room for a
// burst: 1.105× over 10 s at 100 requests/s).
//
// Share one Budget between every call to the same destination (one per
// process and dependency, not one per call or per client object: buckets
// that each start full add up to no budget at all). [For] returns the
// process's Budget for a destination, which is what retryhttp does by
// default; or create one with [New] and set it as a retry.Policy's Budget.
// The retry package calls [Budget.RequestAt] before each first attempt,
// [Budget.AllowRetryAt] before each retry and [Budget.RetrySucceededAt]
// when a retry succeeds; a durable job refused a retry is rescheduled for
// [Budget.RefillAt]. [Budget.Stats] reports the window for metrics.
//
// The methods ending in At take the time as an argument and read no clock;
// the wrappers without At read the Budget's Clock.
package budget

import (
	"errors"
	"math"
	"sync"
	"time"

	"github.com/heed-go/heed/clock"
	"github.com/heed-go/heed/internal/fielderr"
)

// Defaults used for a zero [Config] field and by the zero [Budget].
const (
	// DefaultRatio is 0.09: each request adds 0.09 of a retry, so retries
	// add at most 9% to the requests of a long outage. The Google SRE
	// book's per-client limit ("Handling Overload") is 10%, for an outage
	// at about 1.1× the normal load; 9% keeps the whole outage within
	// 1.1× with the bucket's burst spent at its onset:
	// 1 + Ratio + Burst/(r × T) is at most 1.10 from 5 s at 100 requests
	// per second (1.09× in the long run).
	DefaultRatio = 0.09
	// defaultWindow is 10 s: long enough to hold a meaningful sample of a
	// busy client's traffic, short enough to follow a change of it.
	// Finagle's retry budget uses the same 10 s.
	defaultWindow = 10 * time.Second
	// DefaultBurst is 5: a new process may retry its first 5 failures at
	// once, and an outage that follows health sees no more than 5
	// retries beyond the fill rate in any second: 1.14× in its worst
	// second at 100 requests per second (1 + Ratio + Burst/100), with
	// room under 1.2× for arrivals that bunch up.
	DefaultBurst = 5.0
	// DefaultMinPerSecond is 1: however few requests a process sends, its
	// bucket refills at least one retry a second, so that a process whose
	// calls are rare (a command, a worker draining a backlog with no new
	// requests) is not held to one retry per ten seconds. It is a
	// minimum, not an addition: from about 11 requests a second on
	// (Floor / Ratio) it changes nothing and the ratio holds. (Finagle adds 10
	// retries per second to its ratio, which at 2 requests per second is
	// a 6× load.)
	DefaultMinPerSecond = 1.0
	// defaultEarn is 3: a retry that succeeds puts three retries back in
	// the bucket, its own and two more. When retries succeed at least a
	// third of the time (a partial outage: a retry is as likely to work as
	// a first attempt) the bucket stays full; when they succeed less
	// often, retries settle at Ratio / (1 - Earn × success) of the
	// requests; when none succeed (a total outage), at Ratio. (2 is
	// break-even at exactly the 50% failures of a partial outage: the
	// bucket is then a random walk that runs dry in its bad runs, 82%
	// served instead of 87% in sim.)
	defaultEarn = 3.0
	// defaultCeiling is 1: a retry that succeeds earns more than its own
	// only while the window's attempts stay under 2× its demand (the
	// requests plus the retries that succeeded), so an overload whose
	// retries fail at least as often as calls are served cannot grow its
	// own load.
	defaultCeiling = 1.0
)

// Limits on [Config] fields, checked by [New].
const (
	// maxRatio is the largest Ratio and Ceiling accepted (as in Finagle):
	// 1000 retries per request is already no limit at all.
	maxRatio = 1000.0
	// minWindow is the shortest Window accepted. Shorter windows hold too
	// few requests to say anything about a ratio.
	minWindow = 10 * time.Millisecond
	// maxWindow is the longest Window accepted. A budget over a longer
	// window reacts to an outage too slowly to protect anything (Finagle
	// caps its window at 60 s).
	maxWindow = time.Hour
)

// ErrInvalid is matched (with errors.Is) by every error [New] returns.
var ErrInvalid = errors.New("budget: invalid config")

// ErrExhausted reports that a retry was denied because the retry budget was
// spent. The budget itself returns false rather than an error; the retry
// package wraps ErrExhausted in the error of a call that ended that way, so
// errors.Is(err, budget.ErrExhausted) tells that case apart.
var ErrExhausted = errors.New("budget: retry budget exhausted")

// invalid is the error of a bad [Config] field: "budget: Field reason",
// matching [ErrInvalid].
func invalid(field, format string, args ...any) error {
	return fielderr.New("budget", ErrInvalid, field, format, args...)
}

// Config describes a [Budget]; pass it to [New] or [For]. It is a plain
// value, safe to copy. The zero Config is the default budget, and what most
// callers want: a bucket of 5 retries that starts full, refilled by 9% of
// the requests or 1 retry a second, whichever is more, and by retries
// that succeed.
//
// Zero fields take their defaults; a negative number turns a part off, as
// everywhere in heed.
type Config struct {
	// Ratio is the part of a retry each request adds to the bucket
	// (default 0.09, see [DefaultRatio]); at most 1000. Negative: no
	// budget at all, every retry is allowed ([New] and [For] then return
	// a nil *Budget, which a retry.Policy reads as no budget).
	Ratio float64
	// Window is the span over which requests, retries and successes are
	// counted (default 10 s, as in Finagle), for [Budget.Stats],
	// for the ceiling on earning and for the fill rate [Budget.RefillAt]
	// expects. It must be from 10 ms to 1 h. It slides in steps of
	// Window/10: a count leaves it between 0.9 × Window and Window after
	// it was made. It does not limit retries itself.
	Window time.Duration
	// MinPerSecond is the floor: the bucket refills at least this many
	// retries per second however few requests there are (default 1, see
	// [DefaultMinPerSecond]), as a minimum, not on top of what requests
	// add. It must be finite. Negative: no floor.
	MinPerSecond float64
	// Burst is the size of the bucket, in retries (default 5, see
	// [DefaultBurst]): a new Budget starts with Burst retries, and no
	// outage spends more than Burst beyond the fill rate. It must be at
	// least 1 and finite. (Until this release it was a share from 0 to 1
	// of the window one step might spend; such a value is an error.)
	// Negative: no burst: the bucket holds one retry and starts empty.
	Burst float64
	// Earn is the number of retries a retry that succeeded puts back in
	// the bucket, its own included (default 3), while
	// the window is under Ceiling; past it, a success puts back at most
	// its own. Successes may fill the bucket to three times Burst.
	// Negative: retries that succeed put nothing back, and the budget is
	// the ratio, the floor and the burst alone.
	Earn float64
	// Ceiling bounds earning: a success earns Earn only while the window's
	// attempts (requests and retries) are under 1 + Ceiling times its
	// demand (requests and retries that succeeded) (default 1:
	// an overload whose retries fail at least as often as calls are served
	// cannot grow its own load); at most 1000. Negative: no ceiling.
	Ceiling float64
	// Clock is read by the convenience wrappers ([Budget.Request],
	// [Budget.AllowRetry], [Budget.RetrySucceeded], [Budget.Stats]) only;
	// nil means real time.
	Clock clock.Clock
}

// Validate returns an error matching [ErrInvalid] that names the first bad
// field and its value, as in "budget: Ratio is NaN, must be a number", or
// nil.
// [New] calls it; call it yourself to check a Config read from a file.
func (c Config) Validate() error {
	switch {
	case math.IsNaN(c.Ratio):
		return invalid("Ratio", "is NaN, must be a number")
	case c.Ratio > maxRatio:
		return invalid("Ratio", "is %v, must be at most %v", c.Ratio, maxRatio)
	case c.Window < 0:
		return invalid("Window", "is %v, must not be negative", c.Window)
	case c.Window != 0 && c.Window < minWindow:
		return invalid("Window", "is %v, must be at least %v", c.Window, minWindow)
	case c.Window > maxWindow:
		return invalid("Window", "is %v, must be at most %v", c.Window, maxWindow)
	case math.IsNaN(c.MinPerSecond):
		return invalid("MinPerSecond", "is NaN, must be a number")
	case math.IsInf(c.MinPerSecond, 1):
		return invalid("MinPerSecond", "is +Inf, must be finite")
	case math.IsNaN(c.Burst):
		return invalid("Burst", "is NaN, must be a number")
	case math.IsInf(c.Burst, 1):
		return invalid("Burst", "is +Inf, must be finite")
	case c.Burst > 0 && c.Burst < 1:
		return invalid("Burst", "is %v, must be at least 1: it is the number of retries the bucket holds (default %v), no longer a share of the window", c.Burst, DefaultBurst)
	case math.IsNaN(c.Earn):
		return invalid("Earn", "is NaN, must be a number")
	case math.IsInf(c.Earn, 1):
		return invalid("Earn", "is +Inf, must be finite")
	case math.IsNaN(c.Ceiling):
		return invalid("Ceiling", "is NaN, must be a number")
	case c.Ceiling > maxRatio:
		return invalid("Ceiling", "is %v, must be at most %v", c.Ceiling, maxRatio)
	}
	return nil
}

// Off reports whether c turns the budget off (a negative Ratio).
func (c Config) Off() bool { return c.Ratio < 0 }

// params are a Config after defaults, as a Budget uses them.
type params struct {
	width   int64   // window step in ns
	ratio   float64 // retries added per request
	floor   float64 // retries added per second at least; 0: none
	size    float64 // retries the bucket holds
	empty   bool    // the bucket starts empty (no burst)
	earn    float64 // retries a success puts back
	ceiling float64 // earning stops at attempts >= (1+ceiling) × demand; +Inf: never
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
		w = defaultWindow
	}
	p := params{
		width:   int64(w / numBuckets),
		ratio:   pick(c.Ratio, DefaultRatio),
		floor:   pick(c.MinPerSecond, DefaultMinPerSecond),
		size:    pick(c.Burst, DefaultBurst),
		earn:    pick(c.Earn, defaultEarn),
		ceiling: pick(c.Ceiling, defaultCeiling),
	}
	if c.Burst < 0 {
		p.size, p.empty = 1, true
	}
	if c.Ceiling < 0 {
		p.ceiling = math.Inf(1)
	}
	return p
}

// defaults are the parameters of the zero Budget.
var defaults = Config{}.resolve()

// Stats is a snapshot of a [Budget]'s current window, from [Budget.Stats],
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
	// earnedFill is how full, in multiples of Burst, retries that succeed
	// may fill the bucket (requests and time fill it to Burst). A
	// partial outage whose retries succeed half of the time is a random
	// walk of -1 and +2 per retry: a bucket of 5 runs dry in its bad runs
	// (79% served at 50% failures, 3 attempts, in sim), one that
	// successes may fill to 15 does not (87%, of 87.5% possible). Only
	// an outage that follows a partial one can spend the reserve.
	earnedFill = 3
	// eps absorbs float rounding in sums of Ratio (ten deposits of 0.1
	// make 0.9999999999999999 in float64, and must still be a retry).
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

// base anchors the times that carry a monotonic clock reading (those from
// time.Now): such a time is placed at baseNs + now.Sub(base), which Sub
// computes from the monotonic readings, so steps of the system's wall
// clock do not move the budget.
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
// guards its state, held for a few nanoseconds per call. Its methods never
// allocate. (Until v0.x it was lock-free with per-processor stripes of
// counters; on a path that wraps a network call the mutex costs a few
// nanoseconds more and is far easier to change: see the benchmarks.)
//
// Time: a time from time.Now (as the wrappers and the retry package use) is
// placed by its monotonic clock reading, so steps of the system's wall
// clock do not disturb the budget; other times (time.Date, time.Unix, a
// fake clock) are placed by their wall-clock value. Time only moves
// forward: a time before the latest one any call has seen (a caller that
// read the clock a moment before another, a stale or zero time.Time) is
// treated as that latest time, so it neither refills the bucket nor resets
// the window. A time far in the future moves the budget there, and until
// time catches up nothing refills with time: only an explicit wrong time
// can do this.
type Budget struct {
	mu sync.Mutex
	p  params // zero width in the zero value: defaults
	// The bucket: spent is how far below full it is, so that the zero
	// value is full; prepaid is what requests added in the last second
	// that the floor has not yet consumed (the floor is a minimum, so
	// time adds only what requests did not).
	spent, prepaid float64
	last           int64 // ns of the latest time seen; valid when started
	clk            clock.Clock
	newest         int64 // epoch of the newest bucket; valid when started
	started        bool
	b              [numBuckets]bucket // by epoch mod numBuckets
}

// New returns a Budget for cfg, or an error matching [ErrInvalid]
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
	return newBudget(cfg.resolve(), cfg.Clock), nil
}

// newBudget returns a Budget with parameters p, its bucket full unless p
// says it starts empty.
func newBudget(p params, clk clock.Clock) *Budget {
	b := &Budget{p: p, clk: clk}
	if p.empty {
		b.spent = p.size
	}
	return b
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

// floorAdds returns what the floor adds to the bucket from the latest time
// seen to ns, and what is then left of prepaid: the floor's
// retries per second, less what requests already added.
func (b *Budget) floorAdds(p *params, ns int64) (add, prepaid float64) {
	prepaid = b.prepaid
	if !b.started || ns <= b.last || p.floor == 0 {
		return 0, prepaid
	}
	add = p.floor * float64(ns-b.last) / 1e9
	used := min(prepaid, add)
	return add - used, prepaid - used
}

// advance moves the budget to ns: the floor's refill, and the window's
// newest bucket, which it returns. b.mu must be held.
func (b *Budget) advance(p *params, ns int64) *bucket {
	add, prepaid := b.floorAdds(p, ns)
	if b.spent > 0 {
		b.spent = max(b.spent-add, 0)
	}
	b.prepaid = prepaid
	if !b.started || ns > b.last {
		b.last = ns
	}
	if e := epochOf(ns, p.width); !b.started || e > b.newest {
		b.newest = e
	}
	b.started = true
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

// RequestAt records one request (a first attempt) at time now, which adds
// Ratio of a retry to the bucket. Call it once per call to the
// destination, before the first attempt; retries are counted by
// AllowRetryAt instead. It is safe for concurrent use and does not
// allocate.
func (b *Budget) RequestAt(now time.Time) {
	p := b.params()
	b.mu.Lock()
	b.advance(p, unixNano(now)).reqs++
	if b.spent > 0 {
		// What requests add counts towards the floor for the next
		// second (what a full bucket lost does not).
		add := min(p.ratio, b.spent)
		b.spent -= add
		b.prepaid = min(b.prepaid+add, p.floor)
	}
	b.mu.Unlock()
}

// Request is shorthand for RequestAt(now) with now read from the Budget's
// Clock (real time by default).
func (b *Budget) Request() { b.RequestAt(clock.Now(b.clk)) }

// RetrySucceededAt records that a retry granted by AllowRetryAt succeeded,
// at time now: it puts Earn retries back in the bucket (up to three times
// Burst) while the window's
// attempts are under 1 + Ceiling times its demand (the requests and the
// retries that succeeded, this one included), and at most its own retry
// past that. The retry package calls it; it is safe for concurrent use and
// does not allocate.
func (b *Budget) RetrySucceededAt(now time.Time) {
	p := b.params()
	b.mu.Lock()
	b.advance(p, unixNano(now)).wins++
	if p.earn > 0 {
		w := b.window(b.newest)
		back := min(p.earn, 1)
		// attempts < (1+ceiling) × demand, with attempts = requests +
		// retries and demand = requests + succeeded retries.
		if float64(w.Retries-w.Succeeded) < p.ceiling*float64(w.Requests+w.Succeeded) {
			back = p.earn
		}
		// Successes may fill the bucket beyond its size, to earnedFill
		// times it.
		b.spent = min(b.spent, max(b.spent-back, -(earnedFill-1)*p.size))
	}
	b.mu.Unlock()
}

// RetrySucceeded is shorthand for RetrySucceededAt(now) with now read from
// the Budget's Clock (real time by default).
func (b *Budget) RetrySucceeded() { b.RetrySucceededAt(clock.Now(b.clk)) }

// AllowRetryAt reports whether a retry at time now fits the budget: whether
// the bucket holds a whole retry (see the package documentation for how it
// fills). If it does, the retry takes it and AllowRetryAt returns true; if
// not, a denial is counted and it returns false. Ask once per retry, just
// before making it. It is safe for concurrent use and does not allocate.
func (b *Budget) AllowRetryAt(now time.Time) bool {
	p := b.params()
	b.mu.Lock()
	defer b.mu.Unlock()
	bk := b.advance(p, unixNano(now))
	if p.size-b.spent < 1-eps {
		bk.deny++
		return false
	}
	b.spent++
	bk.rets++
	return true
}

// AllowRetry is shorthand for AllowRetryAt(now) with now read from the
// Budget's Clock (real time by default).
func (b *Budget) AllowRetry() bool { return b.AllowRetryAt(clock.Now(b.clk)) }

// RefillAt returns when, as of now, the bucket will next hold a whole
// retry: now if it does; otherwise when the missing part arrives at the
// current fill rate, the window's requests times Ratio per second or the
// floor, whichever is more (exact for the floor; for requests, an estimate
// from the window's rate). With neither it returns now + Window, when the
// window will have moved on. It changes nothing. A durable job deferred by
// an empty budget is rescheduled for then.
func (b *Budget) RefillAt(now time.Time) time.Time {
	p := b.params()
	ns := unixNano(now)
	b.mu.Lock()
	add, prepaid := b.floorAdds(p, ns)
	spent := b.spent
	if spent > 0 {
		spent = max(spent-add, 0)
	}
	need := spent - p.size + 1
	end := epochOf(ns, p.width)
	if b.started {
		end = max(end, b.newest)
	}
	reqs := b.window(end).Requests
	b.mu.Unlock()
	if need <= eps {
		return now
	}
	win := float64(p.width*numBuckets) / 1e9
	var secs float64
	switch byReqs := p.ratio * float64(reqs) / win; {
	case byReqs > p.floor:
		secs = need / byReqs
	case p.floor > 0:
		// Requests add no more than the floor: time brings the rest,
		// once what requests prepaid is used.
		secs = (need + prepaid) / p.floor
	default:
		secs = win
	}
	// Rounded up to the nanosecond, less float noise (1.0000000000000002 s
	// is 1 s).
	return now.Add(time.Duration(math.Ceil(secs*1e9 - 1e-6)))
}

// statsAt returns the counts of the window as of time now, its current
// step included: a now after the newest bucket reports the window ending at
// now (older buckets drop out), and a now before it reports the window
// ending at the newest bucket, where the other methods would count it.
func (b *Budget) statsAt(now time.Time) Stats {
	p := b.params()
	e := epochOf(unixNano(now), p.width)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.started {
		e = max(e, b.newest)
	}
	return b.window(e)
}

// Stats returns the counts of the window as of now, read from the Budget's
// Clock (real time by default), its current step included; a clock behind
// the latest time given to the methods ending in At reads the window ending
// there. It changes nothing, and it is safe for concurrent use. Most
// callers export it as metrics.
func (b *Budget) Stats() Stats { return b.statsAt(clock.Now(b.clk)) }
