package retry

import "time"

// ShareLimit returns the limit of an attempt that Admit admitted with lim,
// after an attempt share: when the policy sets no AttemptTimeout, lim is the
// caller's deadline, and a retry may still follow this attempt (attempts
// left, no upstream owner), the attempt ends after share of the time left
// (ReasonTimeout), unless that is shorter than the policy's MinAttempt. The
// last attempt keeps all the time left. A share of 0 or less, or 1 or more,
// returns lim unchanged. An executor calls it for a request it may repeat,
// between Admit and the attempt, when it was given a share
// (retryhttp.Transport.AttemptShare, heedgrpc.Client.AttemptShare,
// sim.Layer.AttemptShare; none by default).
func (c *Call) ShareLimit(lim Limit, now time.Time, share float64) Limit {
	return shareLimit(&c.Policy, c.History.Attempts, c.History.UpstreamOwns, lim, now, share)
}

// shareLimit is ShareLimit for an attempt of a call under p that made
// attempts before it, upstreamOwns saying whether a caller above owns its
// retries.
func shareLimit(p *Policy, attempts int, upstreamOwns bool, lim Limit, now time.Time, share float64) Limit {
	if share <= 0 || share >= 1 || lim.Reason != ReasonDeadline || p.AttemptTimeout > 0 || upstreamOwns {
		return lim
	}
	if m := p.MaxAttempts(); m != 0 && attempts+1 >= m {
		return lim
	}
	d := time.Duration(float64(lim.At.Sub(now)) * share)
	if d < p.MinAttempt() {
		return lim
	}
	return Limit{At: now.Add(d), Reason: ReasonTimeout}
}

// AdmitFirst is [Call.Admit] and [Call.ShareLimit] for the first attempt
// of a call under p, for an executor that keeps no Call while that
// attempt may still succeed (a success needs none of a Call's state).
// When p has no Clock, no Breaker, no Hedge and no time limits of its own
// (AttemptTimeout, TimeBudget), and the caller's deadline dl (zero for
// none) has not passed at now, it counts the request in p's Budget and
// returns the attempt's Limit and true: dl, or share of the time left
// before it as ShareLimit gives it (share: the executor's attempt share
// for a call it may repeat, 0 for none; upstreamOwns: a caller above owns
// the retries). Otherwise it changes nothing and returns false, and the
// executor runs the call through a Call from its first attempt.
//
// When the attempt AdmitFirst admitted fails, the executor starts a Call
// with History.Deadline dl, History.Start now and History.UpstreamOwns
// upstreamOwns, and calls its End: the call goes on as if the Call's
// Admit had admitted the attempt at now.
func (p *Policy) AdmitFirst(now, dl time.Time, share float64, upstreamOwns bool) (Limit, bool) {
	if p.Clock != nil || p.Breaker != nil || p.AttemptTimeout > 0 || p.TimeBudget > 0 || p.Hedge != nil {
		return Limit{}, false
	}
	var lim Limit
	if !dl.IsZero() {
		if !now.Before(dl) {
			return Limit{}, false
		}
		lim = shareLimit(p, 0, upstreamOwns, Limit{At: dl, Reason: ReasonDeadline}, now, share)
	}
	if b := p.Budget; b != nil {
		b.RequestAt(now)
	}
	return lim, true
}
