// Package sim is a discrete-event simulator of retry storms: it shows what a
// retry policy does to a struggling dependency before an incident does.
//
// A [Scenario] describes open-loop user traffic, a chain of layers that call
// each other down to a bottom service, the bottom service's capacity, and a
// schedule of faults (outages, capacity drops, error-rate windows, load
// spikes). Each [Chain] of the scenario is the layers and how each of them
// retries. [Run] runs the scenario once per chain and returns, for each, a
// time series and a [Summary]: attempts per user request, peak load
// amplification, success rate and the time to recover after the faults
// end, or that the system did not recover within the horizon (a metastable
// failure). [RunSeeds] runs it over several seeds and reports the median and
// range of each figure: one seed can flatter a policy.
//
// A zero [Layer] is what a zero retryhttp.Transport does over HTTP: heed's
// default retry policy, the default retry budget, all the time left for
// each attempt, ownership claimed when it retries
// and honoured below; a layer whose breaker refuses a call answers its
// caller as a heed server does (Upstream-Breaker: open), which the caller
// neither retries nor counts in its own breaker.
//
// The simulator is one of heed's executors: every retry decision is taken by
// heed's own [retry.Decide], with heed's own backoff schedules,
// [budget.Budget] and [breaker.Breaker], exactly as [retry.Do] takes it, but
// in virtual time. Nothing sleeps and nothing runs concurrently: events wait
// on a heap ordered by virtual time, so a ten-minute scenario at 1,000 user
// requests per second runs in well under a second. A run is deterministic:
// the same scenario and seed give the same result, byte for byte.
//
// Most callers take a scenario from [Builtin] or build one, and call [Run].
// The heed command's "heed sim" reads scenarios from YAML or JSON files and
// draws charts of the results.
package sim

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/heed-go/heed/breaker"
	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/internal/admit"
	"github.com/heed-go/heed/internal/fielderr"
	"github.com/heed-go/heed/overload"
	"github.com/heed-go/heed/retry"
)

// Defaults for zero fields of a [Scenario].
const (
	// defaultInterval is the width of one point of the time series.
	defaultInterval = time.Second
	// defaultRecoverAt is the success rate an interval needs to count as
	// healthy when the recovery time is measured.
	defaultRecoverAt = 0.9
)

// Limits checked by [Scenario.Validate]; they keep a run's memory and time
// bounded.
const (
	maxHorizon   = 24 * time.Hour // the longest Scenario.Horizon
	maxIntervals = 1_000_000      // the most points in a time series
	maxLayers    = 16             // the most layers in a Chain
	maxAttempts  = 100            // the most attempts per layer and call
	maxRate      = 10_000_000     // the highest user request rate, spikes included
)

// Scenario is one experiment: traffic, a bottom service, faults, and the
// retry policies to compare under them. It is a plain value; the zero value
// is not runnable (it has no Horizon, rate or policy). Field names in
// validation errors are spelled as in heed's scenario files, such as
// "policies[1].layers[0].attempts".
type Scenario struct {
	// Name names the scenario in summaries and charts.
	Name string
	// Description says in a sentence or two what the scenario shows.
	Description string
	// Horizon is how much virtual time the run covers. Required.
	Horizon time.Duration
	// Interval is the width of one point of the time series (default 1 s).
	Interval time.Duration
	// Seed makes the run reproducible: the same scenario and seed give the
	// same result. Every policy sees the same arrivals.
	Seed uint64
	// RecoverAt is the share of user requests finishing in an interval that
	// must succeed for the interval to count as healthy (default 0.9). The
	// system has recovered when every interval from some time after the
	// last fault to the horizon is healthy.
	RecoverAt float64
	// Load is the user traffic at the top of the chain.
	Load Load
	// Service is the bottom service that every chain ends in.
	Service Service
	// Faults are the troubles of the bottom service and the traffic, in any
	// order; they may overlap.
	Faults []Fault
	// Chains are the chains of layers to compare; Run runs the scenario
	// once for each. At least one. (Scenario files call them "policies".)
	Chains []Chain
}

// Arrival is how user requests arrive.
type Arrival uint8

const (
	// Poisson arrivals: independent, exponentially distributed gaps. The
	// default, and what large numbers of independent users look like.
	Poisson Arrival = iota
	// Constant arrivals: evenly spaced, one every 1/Rate seconds.
	Constant
)

var arrivalNames = [...]string{"poisson", "constant"}

// String returns "poisson" or "constant".
func (a Arrival) String() string {
	if int(a) < len(arrivalNames) {
		return arrivalNames[a]
	}
	return fmt.Sprintf("Arrival(%d)", a)
}

// parseArrival returns the Arrival named s ("poisson" or "constant").
func parseArrival(s string) (Arrival, error) {
	for i, n := range arrivalNames {
		if s == n {
			return Arrival(i), nil
		}
	}
	return 0, fmt.Errorf("sim: unknown arrival %q (want poisson or constant)", s)
}

// Load is the open-loop user traffic: users keep arriving at Rate whatever
// happens to their earlier requests, as real users and upstream systems do.
type Load struct {
	// Rate is user requests per second. Required.
	Rate float64
	// Arrival is Poisson (default) or Constant.
	Arrival Arrival
	// Deadline is how long a user waits for an answer (default: forever).
	// It is the deadline of the top layer's calls; whether layers below
	// learn of it depends on Chain.PropagateDeadline.
	Deadline time.Duration
}

// NoQueue as Service.QueueLimit rejects an attempt at once when every
// worker is busy.
const NoQueue = -1

// Service is the bottom service: a pool of workers with a queue in front.
// An attempt that finds a free worker starts at once; otherwise it waits in
// the queue (first in, first out), or is rejected with a transient error
// ("503 overloaded") when the queue is full.
type Service struct {
	// Concurrency is the number of workers (default: unlimited, so nothing
	// ever queues and latency grows only through LoadLatency).
	Concurrency int
	// ServiceTime is how long a worker spends on an attempt (default 0:
	// instant). With Exponential it is the mean.
	ServiceTime time.Duration
	// Exponential draws service times from an exponential distribution with
	// mean ServiceTime instead of using ServiceTime as is.
	Exponential bool
	// LoadLatency is added to an attempt's service time for each attempt in
	// service when it starts (default 0): latency that grows with load, as
	// contention, GC and swapping make it. ServiceTime 1 s with LoadLatency
	// 10 ms and no Concurrency limit is the classic congestive-collapse
	// model.
	LoadLatency time.Duration
	// QueueLimit is the most attempts that may wait for a worker (default
	// 0: no limit; [NoQueue]: none may wait).
	QueueLimit int
	// ErrorRate is the share of attempts that fail with a transient error
	// after being served (default 0), outside error-rate faults.
	ErrorRate float64
	// SlowShare is the share of attempts, drawn at random, that take
	// SlowTime instead of ServiceTime (default 0: none): a slow tail, as
	// of a replica in twenty that answers in seconds. Hedging
	// (retry.Policy.Hedge) is for it.
	SlowShare float64
	SlowTime  time.Duration
}

// FaultKind is the kind of a [Fault].
type FaultKind uint8

const (
	// Outage: the bottom service fails every attempt at once with a
	// transient error ("connection refused"); attempts waiting in its
	// queue when it starts fail too.
	Outage FaultKind = iota
	// CapacityDrop: the bottom service works at Factor of its speed
	// (service times are divided by Factor), as when instances are lost or
	// CPU is starved. Factor 0.2 is an 80% drop.
	CapacityDrop
	// ErrorRate: a share Rate of the attempts served fail with a transient
	// error.
	ErrorRate
	// Spike: user requests arrive at Factor times the rate.
	Spike
	// BlackHole: the service at Depth accepts every call and never
	// answers it, not even after the fault (its callers' own limits end
	// the calls), as a hung process or a dropped connection does.
	BlackHole
)

var faultNames = [...]string{"outage", "capacity", "errors", "spike", "black_hole"}

// String returns the fault kind as scenario files spell it: "outage",
// "capacity", "errors", "spike" or "black_hole".
func (k FaultKind) String() string {
	if int(k) < len(faultNames) {
		return faultNames[k]
	}
	return fmt.Sprintf("FaultKind(%d)", k)
}

// parseFaultKind returns the FaultKind named s.
func parseFaultKind(s string) (FaultKind, error) {
	for i, n := range faultNames {
		if s == n {
			return FaultKind(i), nil
		}
	}
	return 0, fmt.Errorf("sim: unknown fault kind %q (want outage, capacity, errors, spike or black_hole)", s)
}

// Fault is a trigger: something that goes wrong from Start to End.
type Fault struct {
	// Kind is what goes wrong; the fields below say which of them it uses.
	Kind FaultKind
	// Start and End bound the fault in virtual time; End must be after
	// Start. A fault may run past the horizon; one that starts at or after
	// it has no effect.
	Start, End time.Duration
	// Factor is the share of capacity left (CapacityDrop, in (0, 1]) or the
	// multiplier of the arrival rate (Spike, positive).
	Factor float64
	// Rate is the share of attempts that fail (ErrorRate, in [0, 1]).
	Rate float64
	// Depth is where a BlackHole is, counted up from the bottom: 0 (the
	// default) the bottom service, 1 the last layer of each chain (the one
	// that calls the bottom service), 2 the layer above it, and so on. A
	// chain with no layer that deep has no black hole.
	Depth int
}

// Chain is the layers between the users and the bottom service, and how
// each of them retries: the thing a scenario compares. Layers[0] is the top
// (it receives user requests); the last layer calls the bottom service, so
// a chain of N layers makes up to the product of their attempts at the
// bottom per user request, unless ownership keeps it to one layer's.
type Chain struct {
	// Name names the chain in summaries, CSV and charts. Unique within a
	// scenario; default "policy N".
	Name string
	// Layers are the services of the chain, top first. At least one.
	Layers []Layer
	// PropagateDeadline sends each attempt's deadline (its timeout, the
	// user's deadline, whichever ends first) down the chain, as heed's
	// deadline package does with the Timeout-Remaining header (which
	// retryhttp sends by default): a layer does not retry past its caller's
	// deadline, and the bottom service drops queued attempts whose deadline
	// has passed instead of serving them.
	PropagateDeadline bool
	// Overload, when set, puts the bottom service behind heed's
	// server-side overload control in this chain's runs, with this Config
	// (default nil: none), as overload.Limiter.Wrap in front of the
	// service's handler: a limit on the attempts in the service that
	// adapts to their latency, a short queue in front of it, refusals (a
	// transient 503 with when to come back, which heed's layers honour)
	// for what cannot finish in time, retries (an attempt number of 2 or
	// more from the layer above, as Retry-Attempt carries it) refused
	// first. It is overload's own decision, run on the simulator's clock;
	// Observe is not called. Scenario files call it overload, with the
	// snake_case names of the Config's fields.
	Overload *overload.Config

	// plainWire, in tests: the layers send no attempt number to the
	// overload control and ignore its Retry-After, as clients outside
	// heed do.
	plainWire bool
}

// Layer is one service in the chain and how it calls the next one.
type Layer struct {
	// Name names the layer, for people reading the scenario.
	Name string
	// Retry is the layer's retry policy, as used with retry.Do. Its
	// Budget, Breaker, Clock, Rand, Observe and Retryable fields must be
	// unset: the simulator makes a fresh budget and breaker for each run
	// from the Budget and Breaker configs below, uses its own clock and
	// random source, and fails attempts only with transient errors.
	// Attempts may not be retry.Unlimited.
	Retry retry.Policy
	// Budget is the layer's retry budget, shared by all of its calls, as
	// retryhttp.Transport.Budget (zero: budget's defaults; a negative
	// Ratio: no budget).
	Budget budget.Config
	// Breaker, when not nil, gives the layer a circuit breaker shared by
	// all of its calls.
	Breaker *breaker.Config
	// AttemptShare is the share of the time left before the caller's
	// deadline that an attempt may take when Retry.AttemptTimeout is zero
	// and a retry may follow, as retryhttp.Transport.AttemptShare, such as
	// 0.5 (default: none, an attempt may take all the time left; negative:
	// none). Scenario files call it attempt_share.
	AttemptShare float64
	// OwnershipOff turns ownership off at this layer, as
	// deadline.Middleware.OwnershipOff does: it retries on its own
	// even when the layer above claims the retries. (A layer claims them,
	// as retryhttp does, when it may retry: Retry allows more than one
	// attempt, or a layer above it claimed them.)
	OwnershipOff bool
}

// ErrInvalid is matched (with errors.Is) by every error
// [Scenario.Validate] returns.
var ErrInvalid = errors.New("sim: invalid scenario")

// invalidError reports an impossible value in a [Scenario]. It matches
// [ErrInvalid].
type invalidError struct {
	// Field is the path of the field as heed's scenario files spell it,
	// such as "policies[0].layers[1].attempts".
	Field string
	// Reason says what is wrong, such as "is -1, must be at least 1".
	Reason string
}

// Error returns "sim: FIELD REASON".
func (e *invalidError) Error() string { return "sim: " + e.Field + " " + e.Reason }

// Is reports whether target is ErrInvalid.
func (e *invalidError) Is(target error) bool { return target == ErrInvalid }

func bad(field, format string, args ...any) error {
	return &invalidError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// Validate returns an error matching [ErrInvalid] that names the first
// impossible value, as scenario files spell its field (such as
// "sim: policies[0].layers[1].attempts is -1, must be at least 1"), or nil.
// [Run] calls it. Besides impossible values it refuses runs too large for
// memory or time: a horizon over 24 h, more than 1,000,000 intervals, more
// than 16 layers, more than 100 attempts per layer and call, and more than
// 10,000,000 user requests/s, spikes included.
func (s *Scenario) Validate() error {
	if err := s.validateTime(); err != nil {
		return err
	}
	if err := s.Load.validate(); err != nil {
		return err
	}
	if err := s.Service.validate(); err != nil {
		return err
	}
	for i := range s.Faults {
		if err := s.Faults[i].validate(i, s.Load.Rate); err != nil {
			return err
		}
	}
	return s.validateChains()
}

// validateTime checks the horizon, the interval and recover_at.
func (s *Scenario) validateTime() error {
	switch {
	case s.Horizon <= 0:
		return bad("horizon", "is %v, must be positive", s.Horizon)
	case s.Horizon > maxHorizon:
		return bad("horizon", "is %v, must be at most %v", s.Horizon, maxHorizon)
	case s.Interval < 0:
		return bad("interval", "is %v, must be positive", s.Interval)
	case s.Interval > s.Horizon:
		return bad("interval", "is %v, longer than the horizon %v", s.Interval, s.Horizon)
	case s.Horizon/s.interval() > maxIntervals:
		return bad("interval", "is %v, too short: %v would need more than %d points", s.interval(), s.Horizon, maxIntervals)
	case !finite(s.RecoverAt) || s.RecoverAt < 0 || s.RecoverAt > 1:
		return bad("recover_at", "is %v, must be from 0 to 1", s.RecoverAt)
	}
	return nil
}

// validate checks the user traffic.
func (l *Load) validate() error {
	switch {
	case !finite(l.Rate) || l.Rate <= 0:
		return bad("load.rate", "is %v, must be a positive number of requests per second", l.Rate)
	case l.Rate > maxRate:
		return bad("load.rate", "is %v, must be at most %v", l.Rate, float64(maxRate))
	case l.Arrival > Constant:
		return bad("load.arrival", "is %d, not a known arrival", l.Arrival)
	case l.Deadline < 0:
		return bad("load.deadline", "is %v, must not be negative", l.Deadline)
	}
	return nil
}

// validate checks the bottom service.
func (v *Service) validate() error {
	switch {
	case v.Concurrency < 0:
		return bad("service.concurrency", "is %d, must not be negative (0: unlimited)", v.Concurrency)
	case v.ServiceTime < 0:
		return bad("service.service_time", "is %v, must not be negative", v.ServiceTime)
	case v.LoadLatency < 0:
		return bad("service.load_latency", "is %v, must not be negative", v.LoadLatency)
	case v.QueueLimit < NoQueue:
		return bad("service.queue_limit", "is %d, must be at least -1 (0: no limit, -1: no queue)", v.QueueLimit)
	case !finite(v.ErrorRate) || v.ErrorRate < 0 || v.ErrorRate > 1:
		return bad("service.error_rate", "is %v, must be from 0 to 1", v.ErrorRate)
	case !finite(v.SlowShare) || v.SlowShare < 0 || v.SlowShare > 1:
		return bad("service.slow_share", "is %v, must be from 0 to 1", v.SlowShare)
	case v.SlowTime < 0:
		return bad("service.slow_time", "is %v, must not be negative", v.SlowTime)
	}
	return nil
}

// validate checks fault i: its kind and window, then the fields its kind
// uses (rate is the load's rate, which a spike multiplies), then that it
// sets no field its kind does not use.
func (f *Fault) validate(i int, rate float64) error {
	p := fmt.Sprintf("faults[%d]", i)
	switch {
	case f.Kind > BlackHole:
		return bad(p+".kind", "is %d, not a known fault kind", f.Kind)
	case f.Start < 0:
		return bad(p+".start", "is %v, must not be negative", f.Start)
	case f.End <= f.Start:
		return bad(p+".end", "is %v, must be after start %v", f.End, f.Start)
	}
	if err := f.validateKindFields(p, rate); err != nil {
		return err
	}
	if f.Kind != CapacityDrop && f.Kind != Spike && f.Factor != 0 {
		return bad(p+".factor", "is set, but a %s fault has no factor", f.Kind)
	}
	if f.Kind != ErrorRate && f.Rate != 0 {
		return bad(p+".rate", "is set, but a %s fault has no rate", f.Kind)
	}
	switch {
	case f.Depth < 0 || f.Depth > maxLayers:
		return bad(p+".depth", "is %d, must be from 0 (the bottom service) to %d", f.Depth, maxLayers)
	case f.Kind != BlackHole && f.Depth != 0:
		return bad(p+".depth", "is set, but a %s fault has no depth", f.Kind)
	}
	return nil
}

// validateKindFields checks the factor or rate of the kinds that use one;
// p is the fault's path.
func (f *Fault) validateKindFields(p string, rate float64) error {
	switch f.Kind {
	case CapacityDrop:
		if !finite(f.Factor) || f.Factor <= 0 || f.Factor > 1 {
			return bad(p+".factor", "is %v, must be in (0, 1]: the share of capacity left", f.Factor)
		}
	case Spike:
		if !finite(f.Factor) || f.Factor <= 0 || f.Factor*rate > maxRate {
			return bad(p+".factor", "is %v, must be positive, and the rate times it at most %v", f.Factor, float64(maxRate))
		}
	case ErrorRate:
		if !finite(f.Rate) || f.Rate < 0 || f.Rate > 1 {
			return bad(p+".rate", "is %v, must be from 0 to 1", f.Rate)
		}
	}
	return nil
}

// validateChains checks that there is at least one policy, that names are
// unique, and each policy with its overload config.
func (s *Scenario) validateChains() error {
	if len(s.Chains) == 0 {
		return bad("policies", "is empty, need at least one policy")
	}
	names := map[string]bool{}
	for i := range s.Chains {
		p := &s.Chains[i]
		path := fmt.Sprintf("policies[%d]", i)
		name := p.name(i)
		if names[name] {
			return bad(path+".name", "is %q, used by an earlier policy", name)
		}
		names[name] = true
		if err := p.validate(path); err != nil {
			return err
		}
		if p.Overload != nil {
			if err := admitConfig(p.Overload).Validate(); err != nil {
				return bad(path+".overload", "%s", strings.TrimPrefix(err.Error(), "overload: "))
			}
		}
	}
	return nil
}

// admitConfig returns the decision fields of c for admit.New.
func admitConfig(c *overload.Config) admit.Config {
	return admit.Config{
		Limit: c.Limit, Initial: c.InitialLimit, Min: c.MinLimit, Max: c.MaxLimit,
		MaxQueue: c.MaxQueue, Target: c.QueueTarget, Interval: c.QueueInterval, FIFO: c.LIFOOff,
	}
}

func (p *Chain) validate(path string) error {
	switch {
	case len(p.Layers) == 0:
		return bad(path+".layers", "is empty, need at least one layer")
	case len(p.Layers) > maxLayers:
		return bad(path+".layers", "has %d layers, at most %d", len(p.Layers), maxLayers)
	}
	for j := range p.Layers {
		l := &p.Layers[j]
		lp := fmt.Sprintf("%s.layers[%d]", path, j)
		r := &l.Retry
		switch {
		case r.Attempts < 0:
			return bad(lp+".attempts", "is %d, must be at least 1 (the simulator needs a limit)", r.Attempts)
		case r.Attempts > maxAttempts:
			return bad(lp+".attempts", "is %d, must be at most %d", r.Attempts, maxAttempts)
		case math.IsNaN(l.AttemptShare) || l.AttemptShare >= 1:
			return bad(lp+".attempt_share", "is %v, must be below 1 (negative: none)", l.AttemptShare)
		case r.AttemptTimeout < 0:
			return bad(lp+".attempt_timeout", "is %v, must not be negative", r.AttemptTimeout)
		case r.TimeBudget < 0:
			return bad(lp+".time_budget", "is %v, must not be negative", r.TimeBudget)
		case r.MinAttemptTime < 0:
			return bad(lp+".min_attempt_time", "is %v, must not be negative", r.MinAttemptTime)
		case r.Budget != nil || r.Breaker != nil:
			return bad(lp+".retry", "has a Budget or Breaker; set Layer.Budget or Layer.Breaker (configs) instead, so that every run starts fresh")
		case r.Clock != nil || r.Rand != nil || r.Observe != nil || r.Retryable != nil:
			return bad(lp+".retry", "has a Clock, Rand, Observe or Retryable; the simulator supplies its own")
		}
		if err := r.Backoff.Validate(); err != nil {
			return fieldError(lp+".backoff", err)
		}
		if err := r.Validate(); err != nil {
			return bad(lp, "%v", err)
		}
		if err := l.Budget.Validate(); err != nil {
			return fieldError(lp+".budget", err)
		}
		if l.Breaker != nil {
			if _, err := breaker.New(*l.Breaker); err != nil {
				return fieldError(lp+".breaker", err)
			}
		}
	}
	return nil
}

// fieldError is err, from a backoff schedule's, a budget's or a breaker's
// check, in the words of a scenario file: the field under prefix, snake
// case.
func fieldError(prefix string, err error) error {
	if fe, ok := fielderr.As(err); ok {
		return bad(prefix+"."+snake(fe.Field), "%s", fe.Reason)
	}
	return bad(prefix, "%v", err)
}

// snake turns a Go field name such as "MinPerSecond" into "min_per_second".
func snake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

func (s *Scenario) interval() time.Duration {
	if s.Interval > 0 {
		return s.Interval
	}
	return min(defaultInterval, s.Horizon)
}

func (s *Scenario) recoverAt() float64 {
	if s.RecoverAt > 0 {
		return s.RecoverAt
	}
	return defaultRecoverAt
}

func (p *Chain) name(i int) string {
	if p.Name != "" {
		return p.Name
	}
	return fmt.Sprintf("policy %d", i+1)
}
