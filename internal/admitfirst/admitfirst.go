// Package admitfirst lets heed's own executors make a call's first
// attempt without building a [retry.Call], for the common call that
// succeeds at once: a success needs none of a Call's state, and building
// one (a copy of the policy, a cleared trace) is most of what such a call
// costs. heedgrpc uses it on its unary path, hedged or not.
//
// It is not a second door into the call protocol: it admits exactly what
// [retry.Call.Admit] and [retry.Call.ShareLimit] would (a test holds them
// equal), and declines whenever a Call's state could matter, and a failed
// attempt goes on through a Call. Users and other executors use
// retry.Call alone.
package admitfirst

import (
	"time"

	"github.com/heed-go/heed/retry"
)

// Admit is [retry.Call.Admit] and [retry.Call.ShareLimit] for the first
// attempt of a call under p, for an executor that keeps no Call while that
// attempt may still succeed. When p has no Clock, no Breaker and no time
// limits of its own (AttemptTimeout, TimeBudget), and the caller's
// deadline dl (zero for none) has not passed at now, it counts the request
// in p's Budget and returns the attempt's Limit and true: dl, or share of
// the time left before it as ShareLimit gives it (share: the executor's
// attempt share for a call it may repeat, 0 for none; upstreamOwns: a
// caller above owns the retries). Otherwise it changes nothing and returns
// false, and the executor runs the call through a Call from its first
// attempt.
//
// When the attempt Admit admitted fails, the executor starts a Call under
// p with History.Deadline dl, History.Start now and History.UpstreamOwns
// upstreamOwns, and calls its End: the call goes on as if the Call's Admit
// had admitted the attempt at now (that Call is then the one Admit would
// have left: a test holds them equal). An executor that hedges (p.Hedge)
// starts that Call before the attempt, to make it with retry.Call.Race;
// when no hedge was sent and the attempt succeeded, it needs no End
// either, unless p's Hedge learns latencies (Hedge.Delay zero).
func Admit(p *retry.Policy, now, dl time.Time, share float64, upstreamOwns bool) (retry.Limit, bool) {
	if p.Clock != nil || p.Breaker != nil || p.AttemptTimeout > 0 || p.TimeBudget > 0 {
		return retry.Limit{}, false
	}
	var lim retry.Limit
	if !dl.IsZero() {
		if !now.Before(dl) {
			return retry.Limit{}, false
		}
		lim = retry.Limit{At: dl, Reason: retry.ReasonDeadline}
		// ShareLimit's rule for a first attempt (no AttemptTimeout, as
		// checked above): a share of the time left, when a retry may
		// follow and the share is not below MinAttempt.
		if share > 0 && share < 1 && !upstreamOwns && p.MaxAttempts() != 1 {
			if d := time.Duration(float64(dl.Sub(now)) * share); d >= p.MinAttempt() {
				lim = retry.Limit{At: now.Add(d), Reason: retry.ReasonTimeout}
			}
		}
	}
	if b := p.Budget; b != nil {
		b.RequestAt(now)
	}
	return lim, true
}
