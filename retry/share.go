package retry

import "time"

// DefaultAttemptShare is the share of the time left before the caller's
// deadline that an attempt takes by default when its policy sets no
// AttemptTimeout and a retry may follow it: 0.5, so that a dependency that
// accepts and never answers (a black hole) leaves half of the time for one
// retry instead of taking all of it. retryhttp and sim apply it (see
// [Call.ShareLimit]).
const DefaultAttemptShare = 0.5

// ShareLimit returns the limit of an attempt that Admit admitted with lim,
// after an attempt share: when the policy sets no AttemptTimeout, lim is the
// caller's deadline, and a retry may still follow this attempt (attempts
// left, no upstream owner), the attempt ends after share of the time left
// (ReasonTimeout), unless that is shorter than the policy's MinAttempt. The
// last attempt keeps all the time left. A share of 0 or less, or 1 or more,
// returns lim unchanged. An executor calls it for a request it may repeat,
// between Admit and the attempt.
func (c *Call) ShareLimit(lim Limit, now time.Time, share float64) Limit {
	p := &c.Policy
	if share <= 0 || share >= 1 || lim.Reason != ReasonDeadline || p.AttemptTimeout > 0 || c.History.UpstreamOwns {
		return lim
	}
	if m := p.MaxAttempts(); m != 0 && c.History.Attempts+1 >= m {
		return lim
	}
	d := time.Duration(float64(lim.At.Sub(now)) * share)
	if d < p.MinAttempt() {
		return lim
	}
	return Limit{At: now.Add(d), Reason: ReasonTimeout}
}
