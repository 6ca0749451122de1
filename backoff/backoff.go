// Package backoff computes the delays between retries: capped exponential,
// constant, linear or immediate schedules, with none, full, equal or
// decorrelated jitter.
//
// Everything here is pure. Randomness comes in as a [rand.Source], so a
// seeded source reproduces a schedule exactly, and every function is correct
// for any attempt number from 1 to math.MaxInt: a delay is never negative,
// never above the cap, and never a panic.
//
// Most callers set a [Schedule] on a retry.Policy and never call this
// package directly.
package backoff

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/heed-go/heed/internal/fielderr"
	"github.com/heed-go/heed/internal/uniform"
)

// Kind is the shape of a schedule's growth. The zero value is Exponential.
type Kind uint8

const (
	// Exponential waits min(Cap, Base × Multiplier^(n−1)) after failure n.
	Exponential Kind = iota
	// Constant waits Base after every failure.
	Constant
	// Linear waits min(Cap, Base × n) after failure n.
	Linear
	// Immediate does not wait at all; jitter does not apply. Useful in
	// tests and for retries whose pacing comes from elsewhere.
	Immediate
)

var kindNames = [...]string{Exponential: "exponential", Constant: "constant", Linear: "linear", Immediate: "immediate"}

// String returns the kind's lower-case name, as the heed command spells it.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", k)
}

// Jitter spreads delays randomly so that clients that failed together do not
// retry together. The zero value is FullJitter.
type Jitter uint8

const (
	// FullJitter draws uniformly from [0, d], where d is the schedule's
	// delay. It spreads load best and is the default.
	FullJitter Jitter = iota
	// NoJitter uses the schedule's delay as is.
	NoJitter
	// EqualJitter draws uniformly from [d/2, d].
	EqualJitter
	// DecorrelatedJitter draws uniformly from [Base, 3 × previous delay],
	// then caps the result at Cap (the "decorrelated jitter" of the AWS
	// Architecture Blog). It ignores Kind and Multiplier.
	DecorrelatedJitter
)

var jitterNames = [...]string{FullJitter: "full", NoJitter: "none", EqualJitter: "equal", DecorrelatedJitter: "decorrelated"}

// String returns the jitter's lower-case name, as the heed command spells it.
func (j Jitter) String() string {
	if int(j) < len(jitterNames) {
		return jitterNames[j]
	}
	return fmt.Sprintf("Jitter(%d)", j)
}

// parseKind returns the Kind named s ("exponential", "constant", "linear",
// "immediate").
func parseKind(s string) (Kind, error) {
	for i, n := range kindNames {
		if s == n {
			return Kind(i), nil
		}
	}
	return 0, fmt.Errorf("backoff: unknown kind %q (want exponential, constant, linear or immediate)", s)
}

// parseJitter returns the Jitter named s ("full", "none", "equal",
// "decorrelated").
func parseJitter(s string) (Jitter, error) {
	for i, n := range jitterNames {
		if s == n {
			return Jitter(i), nil
		}
	}
	return 0, fmt.Errorf("backoff: unknown jitter %q (want full, none, equal or decorrelated)", s)
}

// MarshalText returns the kind's name ("exponential", ...), the form
// stored and exchanged: it never depends on the constants' order. A
// value outside the known kinds is an error naming it.
func (k Kind) MarshalText() ([]byte, error) {
	if int(k) < len(kindNames) {
		return []byte(kindNames[k]), nil
	}
	return nil, fmt.Errorf("backoff: cannot encode Kind(%d), not a known kind", k)
}

// UnmarshalText sets k to the kind named text ("exponential", "constant",
// "linear" or "immediate", as [Kind.String] writes them); an unknown name is an error naming it and leaves k unchanged.
func (k *Kind) UnmarshalText(text []byte) error {
	v, err := parseKind(string(text))
	if err != nil {
		return err
	}
	*k = v
	return nil
}

// MarshalText returns the jitter's name ("full", "none", ...), the form
// stored and exchanged: it never depends on the constants' order. A
// value outside the known jitters is an error naming it.
func (j Jitter) MarshalText() ([]byte, error) {
	if int(j) < len(jitterNames) {
		return []byte(jitterNames[j]), nil
	}
	return nil, fmt.Errorf("backoff: cannot encode Jitter(%d), not a known jitter", j)
}

// UnmarshalText sets j to the jitter named text ("full", "none", "equal"
// or "decorrelated", as [Jitter.String] writes them); an unknown name is an error naming it and leaves j unchanged.
func (j *Jitter) UnmarshalText(text []byte) error {
	v, err := parseJitter(string(text))
	if err != nil {
		return err
	}
	*j = v
	return nil
}

// Defaults used for zero fields of a [Schedule].
const (
	defaultBase       = 100 * time.Millisecond
	defaultCap        = 5 * time.Second
	defaultMultiplier = 2.0
)

// ErrInvalid is matched (with errors.Is) by every error [Schedule.Validate]
// returns.
var ErrInvalid = errors.New("backoff: invalid schedule")

// Schedule describes the delays between attempts.
//
// The zero value is the default schedule: exponential from 100 ms, doubling,
// capped at 5 s, with full jitter. A zero Base, Cap or Multiplier takes its
// default. A Schedule is a plain value, safe to copy and to share.
type Schedule struct {
	// Kind is the growth: Exponential (the default), Constant, Linear or
	// Immediate.
	Kind Kind
	// Base is the first delay (default 100 ms). For DecorrelatedJitter it is
	// also the smallest delay.
	Base time.Duration
	// Cap is the largest delay (default 5 s, or Base when Base is larger
	// than 5 s and Cap is unset).
	Cap time.Duration
	// Multiplier is the growth factor of Exponential (default 2). It must be
	// at least 1.
	Multiplier float64
	// Jitter is how delays are randomised (default FullJitter).
	Jitter Jitter
}

// invalid is the error of a bad field: "backoff: Field reason", matching
// [ErrInvalid].
func invalid(field, format string, args ...any) error {
	return fielderr.New("backoff", ErrInvalid, field, format, args...)
}

// Validate returns an error matching [ErrInvalid] that names the first bad
// field and its value, as in "backoff: Cap is 1s, below Base 2s", or nil.
func (s Schedule) Validate() error {
	switch {
	case int(s.Kind) >= len(kindNames):
		return invalid("Kind", "is %d, not a known kind", s.Kind)
	case int(s.Jitter) >= len(jitterNames):
		return invalid("Jitter", "is %d, not a known jitter", s.Jitter)
	case s.Base < 0:
		return invalid("Base", "is %v, must not be negative", s.Base)
	case s.Cap < 0:
		return invalid("Cap", "is %v, must not be negative", s.Cap)
	case s.Cap != 0 && s.Cap < s.base():
		return invalid("Cap", "is %v, below Base %v", s.Cap, s.base())
	case math.IsNaN(s.Multiplier) || s.Multiplier < 0 || (s.Multiplier != 0 && s.Multiplier < 1):
		return invalid("Multiplier", "is %v, must be at least 1", s.Multiplier)
	}
	return nil
}

// WithDefaults returns s with its zero Base, Cap and Multiplier replaced
// by the values the schedule uses, so callers can show them.
func (s Schedule) WithDefaults() Schedule {
	s.Base, s.Cap = s.base(), s.cap()
	if s.Multiplier == 0 {
		s.Multiplier = defaultMultiplier
	}
	return s
}

func (s Schedule) base() time.Duration {
	if s.Base <= 0 {
		return defaultBase
	}
	return s.Base
}

func (s Schedule) cap() time.Duration {
	if s.Cap > 0 {
		return s.Cap
	}
	return max(defaultCap, s.base())
}

// Delay returns the schedule's delay after failure n (n counts from 1)
// before jitter: the upper end of the range that none, full and equal
// jitter draw from. Decorrelated jitter does not use it (see [Range]).
// Values of n below 1 count as 1. It assumes a valid schedule; an invalid
// one still yields a delay in [0, Cap].
func (s Schedule) Delay(n int) time.Duration {
	if n < 1 {
		n = 1
	}
	base, limit := s.base(), s.cap()
	if base > limit {
		base = limit
	}
	switch s.Kind {
	case Immediate:
		return 0
	case Constant:
		return base
	case Linear:
		// base × n, saturating at the cap.
		if uint64(n) > uint64(limit/base) {
			return limit
		}
		return base * time.Duration(n)
	}
	m := s.Multiplier
	if m == 0 {
		m = defaultMultiplier
	}
	if m <= 1 || math.IsNaN(m) {
		return base
	}
	k := n - 1
	if m == 2 {
		if k >= 63 || base > limit>>uint(k) {
			return limit
		}
		return base << uint(k)
	}
	f := float64(base) * math.Pow(m, float64(k))
	if f >= float64(limit) || math.IsInf(f, 0) || math.IsNaN(f) {
		return limit
	}
	return time.Duration(f)
}

// Range returns the smallest and largest delay that jitter can produce after
// failure n, given the previous delay prev (used only by
// DecorrelatedJitter; pass 0 before the first retry).
func (s Schedule) Range(n int, prev time.Duration) (lo, hi time.Duration) {
	if s.Kind == Immediate {
		return 0, 0
	}
	d := s.Delay(n)
	switch s.Jitter {
	case NoJitter:
		return d, d
	case EqualJitter:
		return d - d/2, d
	case DecorrelatedJitter:
		return s.decorrelatedRange(prev)
	}
	return 0, d
}

func (s Schedule) decorrelatedRange(prev time.Duration) (lo, hi time.Duration) {
	base, limit := s.base(), s.cap()
	if base > limit {
		base = limit
	}
	if prev < base {
		prev = base
	}
	hi = limit
	if prev <= limit/3 {
		hi = 3 * prev
	}
	return base, hi
}

// Next returns the jittered delay after failure n, given the previous delay
// prev (only DecorrelatedJitter uses it; pass 0 before the first retry). It
// draws from r; a nil r uses math/rand/v2's concurrency-safe global source.
// The result is always in [Range(n, prev)].
func (s Schedule) Next(n int, prev time.Duration, r rand.Source) time.Duration {
	lo, hi := s.Range(n, prev)
	if lo >= hi {
		return lo
	}
	return lo + uniform.Duration(r, hi-lo)
}
