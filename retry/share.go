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
