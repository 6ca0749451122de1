package plan

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/retry"
)

// Fit says whether a planned attempt fits in its policy's TimeBudget
// (see [Schedule]). The zero value, FitUnknown, is for a policy
// without one.
type Fit uint8

const (
	FitUnknown Fit = iota // the policy has no TimeBudget
	FitYes                // it fits even after the longest jittered waits
	FitMaybe              // it fits only after shorter jittered waits
	FitNo                 // it never starts: the policy gives up before it
)

// String returns "yes", "maybe", "no", or "" for FitUnknown.
func (f Fit) String() string {
	switch f {
	case FitYes:
		return "yes"
	case FitMaybe:
		return "maybe"
	case FitNo:
		return "no"
	}
	return ""
}

// Attempt is one attempt of [Schedule]: when it starts and
// ends at best and at worst. The zero value is not meaningful.
type Attempt struct {
	Attempt int // 1 for the first
	// Delay is the delay before the attempt before jitter, and HasDelay
	// whether there is one: decorrelated jitter has no nominal delay.
	Delay              time.Duration
	HasDelay           bool
	DelayMin, DelayMax time.Duration // the range jitter draws the delay from
	WaitMin, WaitMax   time.Duration // the delays before the attempt, in total
	EndMin, EndMax     time.Duration // when the attempt ends, counted from the call's start
	Fits               Fit
}

// maxScheduled is the most attempts Schedule lists.
const maxScheduled = 1000

// Schedule returns the attempts of the retry policy p when every attempt fails after
// attemptTime: for each, the range of its delay, of the total wait before
// it and of when it ends, and with a TimeBudget whether it fits by the rule
// the call applies at run time (retry.Policy.Fits): the first attempt fits when
// it ends in time, a retry when its delay plus p.MinAttempt still fits after
// the attempt before it ends. Nothing is random: the ranges are exact
// bounds, and they saturate at the largest Duration instead of overflowing.
// It lists retry.Policy.MaxAttempts attempts, at most 1000 (also for retry.Unlimited).
func Schedule(p retry.Policy, attemptTime time.Duration) []Attempt {
	n := p.MaxAttempts()
	if n <= 0 || n > maxScheduled {
		n = maxScheduled
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) // any fixed instant
	s := p.Backoff
	rows := make([]Attempt, 0, n)
	var waitLo, waitHi, prevLo, prevHi time.Duration
	for k := 1; k <= n; k++ {
		r := Attempt{Attempt: k, HasDelay: s.Jitter != backoff.DecorrelatedJitter || s.Kind == backoff.Immediate}
		var prevEndLo, prevEndHi time.Duration // when attempt k-1 ends
		if k > 1 {
			// The delay after failure k-1. Only decorrelated jitter depends
			// on the previous delay: the low end grows from the shortest,
			// the high end from the longest.
			r.DelayMin, _ = s.Range(k-1, prevLo)
			_, r.DelayMax = s.Range(k-1, prevHi)
			if r.HasDelay {
				r.Delay = s.Delay(k - 1)
			}
			prevLo, prevHi = r.DelayMin, r.DelayMax
			waitLo, waitHi = addSat(waitLo, r.DelayMin), addSat(waitHi, r.DelayMax)
			prevEndLo, prevEndHi = rows[k-2].EndMin, rows[k-2].EndMax
		}
		r.WaitMin, r.WaitMax = waitLo, waitHi
		busy := mulSat(attemptTime, k)
		r.EndMin, r.EndMax = addSat(waitLo, busy), addSat(waitHi, busy)
		if d := p.TimeBudget; d > 0 {
			yes, maybe := r.EndMax <= d, r.EndMin <= d
			if k > 1 {
				h := retry.History{Start: start}
				yes, _ = p.Fits(h, start.Add(prevEndHi), r.DelayMax)
				maybe, _ = p.Fits(h, start.Add(prevEndLo), r.DelayMin)
			}
			switch {
			case yes:
				r.Fits = FitYes
			case maybe:
				r.Fits = FitMaybe
			default:
				r.Fits = FitNo
			}
		}
		rows = append(rows, r)
	}
	return rows
}

func mulSat(d time.Duration, n int) time.Duration {
	if d != 0 && time.Duration(n) > math.MaxInt64/d {
		return math.MaxInt64
	}
	return d * time.Duration(n)
}

// Amplification is the load that a total outage of the bottom service of
// a call chain puts on it, in attempts at the bottom per user action (see
// [ChainAmplification]).
type Amplification struct {
	EveryLayer float64 // every layer retries: (1+retries)^layers
	OneOwner   float64 // one layer owns retries: 1+retries
	Budgeted   float64 // one owner under a retry budget
}

// ChainAmplification returns the [Amplification] of a chain of layers
// services that each make up to 1+retries attempts per call, at rate user
// actions per second (0 when not known), with a retry budget of ratio
// retries per request and a floor of floor retries per second (budget.Config's
// Ratio and MinPerSecond) on the owner. Under the budget, retries are at most
// ratio × requests, or the floor when that is more (the budget's floor is a
// minimum, not an addition), and never more than the policy's own; without a
// rate the floor is left out. Retries that succeed can earn the budget more
// (budget.Config.Earn): this is the total outage, where none do.
func ChainAmplification(layers, retries int, rate, ratio, floor float64) Amplification {
	per := 1 + float64(retries)
	a := Amplification{EveryLayer: math.Pow(per, float64(layers)), OneOwner: per}
	if rate > 0 {
		retried := min(float64(retries)*rate, max(ratio*rate, floor))
		a.Budgeted = (rate + retried) / rate
	} else {
		a.Budgeted = 1 + min(float64(retries), ratio)
	}
	return a
}

// Describe returns p in words, as heed plan prints it: "3 attempts;
// exponential backoff from 100ms, ×2 per retry, capped at 5s; full jitter;
// 1s per attempt; deadline 10s".
func Describe(p retry.Policy) string {
	s := p.Backoff
	eff := s.WithDefaults()
	base, limit := eff.Base, eff.Cap
	var b strings.Builder
	if n := p.MaxAttempts(); n > 0 {
		fmt.Fprintf(&b, "%d attempts; ", n)
	} else {
		b.WriteString("unlimited attempts; ")
	}
	switch {
	case s.Kind == backoff.Immediate:
		b.WriteString("no delay between attempts")
	case s.Jitter == backoff.DecorrelatedJitter:
		fmt.Fprintf(&b, "decorrelated jitter: each delay from %v to 3× the previous, capped at %v", base, limit)
	default:
		switch s.Kind {
		case backoff.Constant:
			fmt.Fprintf(&b, "constant backoff of %v", base)
		case backoff.Linear:
			fmt.Fprintf(&b, "linear backoff, +%v per retry, capped at %v", base, limit)
		default:
			fmt.Fprintf(&b, "exponential backoff from %v, ×%s per retry, capped at %v", base,
				strconv.FormatFloat(math.Round(eff.Multiplier*100)/100, 'f', -1, 64), limit)
		}
		fmt.Fprintf(&b, "; %s jitter", map[backoff.Jitter]string{
			backoff.FullJitter: "full", backoff.NoJitter: "no", backoff.EqualJitter: "equal",
		}[s.Jitter])
	}
	if p.AttemptTimeout > 0 {
		fmt.Fprintf(&b, "; %v per attempt", p.AttemptTimeout)
	}
	if p.TimeBudget > 0 {
		fmt.Fprintf(&b, "; deadline %v", p.TimeBudget)
	}
	return b.String()
}

func addSat(a, b time.Duration) time.Duration {
	if c := a + b; c >= a {
		return c
	}
	return math.MaxInt64
}
