// Package dest keeps the per-destination state of heed's client executors,
// retryhttp's hosts and heedgrpc's targets, in one place: for every
// destination a client object calls, the client's retry.Policy with that
// destination's retry budget (from a budget.Registry, the process's by
// default), circuit breaker and hedge (retry.Hedge, whose latencies are
// the destination's) set.
//
// An executor validates its own fields, then calls [Set.Init] once with its
// [Config], and [Set.Get] on every call to find the policy of the call's
// destination.
package dest

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/heed-go/heed/breaker"
	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/retry"
)

// Config is what a client object says about its destinations.
type Config struct {
	// Policy is the client's policy. A Budget or Breaker set in it is
	// shared by every destination instead of the per-destination ones.
	Policy retry.Policy
	// Budget configures each destination's retry budget (a negative Ratio:
	// none).
	Budget budget.Config
	// Budgets keeps the budgets (nil: the process's registry, budget.For),
	// so that client objects made per call still spend one budget per
	// destination.
	Budgets *budget.Registry
	// Breaker, when set, gives each destination a breaker of its own with
	// this configuration.
	Breaker *breaker.Config
	// OnBreakerChange, when set, is called on every change of state of a
	// destination's breaker, with the destination's name, after
	// Breaker.OnStateChange.
	OnBreakerChange func(name string, from, to breaker.State, at time.Time)
}

// State is what a [Set] keeps for one destination. It does not change once
// made.
type State struct {
	// Name is the destination's name, as given to [Set.Get].
	Name string
	// Policy is Config.Policy with the destination's budget and breaker set
	// (where Config.Policy has none of its own): built once per
	// destination, so that a call need not copy the policy to add them.
	Policy retry.Policy
}

// Set holds the state of every destination one client object has called,
// for its lifetime. The zero Set is ready for [Set.Init]; it is safe for
// concurrent use once Init has returned.
type Set struct {
	cfg    Config
	each   bool     // each destination has its own budget or breaker
	shared State    // the state of every destination when none has its own
	m      sync.Map // name -> *State
	last   atomic.Pointer[State]
}

// Init sets s up for cfg. It returns the error of an invalid Budget or
// Breaker (Config.Policy is the executor's to validate); a Set whose Init
// failed must not be used.
func (s *Set) Init(cfg Config) error {
	if err := cfg.Budget.Validate(); err != nil {
		return err
	}
	if cfg.Breaker != nil {
		// Each destination's breaker is made on first use: check the
		// config now, so that a bad one fails every call instead of
		// leaving the destinations without a breaker.
		if _, err := breaker.New(*cfg.Breaker); err != nil {
			return err
		}
	}
	s.cfg = cfg
	s.shared = State{Policy: cfg.Policy}
	s.each = cfg.Policy.Budget == nil && cfg.Budget.Ratio >= 0 || cfg.Policy.Breaker == nil && cfg.Breaker != nil ||
		cfg.Policy.Hedge != nil
	return nil
}

// Get returns the state of destination name, creating it on first use.
// budgetKey, called only then, returns the key of its budget in the
// registry (for HTTP, the host and port with the scheme's default port
// filled in); nil means name itself. When no destination has a state of its
// own, every name gets one shared State, whose Name is empty.
func (s *Set) Get(name string, budgetKey func() string) *State {
	if !s.each {
		return &s.shared
	}
	if st := s.last.Load(); st != nil && st.Name == name {
		return st
	}
	if v, ok := s.m.Load(name); ok {
		return v.(*State)
	}
	return s.add(name, budgetKey)
}

// add makes the state of name and stores it, unless another call stored
// one first.
func (s *Set) add(name string, budgetKey func() string) *State {
	cfg := &s.cfg
	st := &State{Name: name, Policy: cfg.Policy}
	if cfg.Budget.Ratio >= 0 && cfg.Policy.Budget == nil { // a negative Ratio: no budget
		key := name
		if budgetKey != nil {
			key = budgetKey()
		}
		reg := cfg.Budgets
		if reg == nil {
			st.Policy.Budget, _ = budget.For(key, cfg.Budget) // validated in Init
		} else {
			st.Policy.Budget, _ = reg.For(key, cfg.Budget)
		}
	}
	if cfg.Breaker != nil && cfg.Policy.Breaker == nil {
		bc := *cfg.Breaker
		if each, all := cfg.OnBreakerChange, bc.OnStateChange; each != nil {
			bc.OnStateChange = func(from, to breaker.State, at time.Time) {
				if all != nil {
					all(from, to, at)
				}
				each(name, from, to, at)
			}
		}
		st.Policy.Breaker, _ = breaker.New(bc) // validated in Init
	}
	if h := cfg.Policy.Hedge; h != nil {
		// The latencies a hedge's delay follows are the destination's.
		st.Policy.Hedge = &retry.Hedge{Delay: h.Delay, Quantile: h.Quantile, MinDelay: h.MinDelay, MaxDelay: h.MaxDelay, Max: h.Max}
	}
	v, loaded := s.m.LoadOrStore(name, st)
	if !loaded {
		s.last.Store(st)
	}
	return v.(*State)
}
