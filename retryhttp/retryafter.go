package retryhttp

import (
	"net/http"
	"time"
)

// maxRetryAfter is the largest wait [ParseRetryAfter] returns: a longer
// Retry-After (in seconds or as a date) is clamped to it. It only keeps
// absurd values sane; the wait a [Transport] actually sleeps is further
// capped by its Policy's MaxPushback (default 30 s), and a wait that does
// not fit before the deadline is not slept at all.
const maxRetryAfter = 6 * time.Hour

// ParseRetryAfter parses a Retry-After header value (RFC 9110 §10.2.3)
// received at now: delay-seconds (1*DIGIT) or an HTTP-date in any of the
// three forms of §5.6.7 (IMF-fixdate, RFC 850, asctime). It returns the
// wait and true, or 0 and false for a value to ignore: empty, negative,
// fractional, with a sign or spaces, or otherwise not one of those forms.
//
// A date in the past gives 0 (retry now). Waits longer than 6 hours
// are clamped to it, including seconds too large for a time.Duration. It
// reads no clock and never panics.
func ParseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if '0' <= v[0] && v[0] <= '9' {
		var secs int64
		for i := 0; i < len(v); i++ {
			c := v[i]
			if c < '0' || c > '9' {
				return parseRetryDate(v, now) // "Sun, ..." never starts with a digit; asctime neither
			}
			if secs <= int64(maxRetryAfter/time.Second) {
				secs = secs*10 + int64(c-'0')
			}
		}
		d := time.Duration(secs) * time.Second
		if secs > int64(maxRetryAfter/time.Second) {
			d = maxRetryAfter
		}
		return d, true
	}
	return parseRetryDate(v, now)
}

func parseRetryDate(v string, now time.Time) (time.Duration, bool) {
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	d := t.Sub(now)
	switch {
	case d < 0:
		d = 0
	case d > maxRetryAfter:
		d = maxRetryAfter
	}
	return d, true
}
