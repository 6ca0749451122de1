// Package duration parses the durations that heed's command line takes:
// [Parse]. Files (policies, sim scenarios, deadline plans) take Go
// durations only, read by internal/docjson.
package duration

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Hint is the example every duration error shows.
const Hint = "write seconds (5, 0.5) or a number with a unit: 300ms, 30s, 5m, 2h, 7d"

// Parse parses a duration as heed's command line and files take it: a Go
// duration ("1m30s", "500ms"), a bare number of seconds ("5", "0.5"), as
// curl and GNU timeout take them, or a number of days, alone or followed by
// a Go duration ("7d", "1d12h"). Its error quotes s and ends with [Hint].
func Parse(s string) (time.Duration, error) {
	bad := func(why string) error {
		if why != "" {
			why = " (" + why + ")"
		}
		return fmt.Errorf("%q is not a duration%s: %s", s, why, Hint)
	}
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, bad("")
	}
	if isDecimal(t) {
		sec, err := strconv.ParseFloat(t, 64)
		if err != nil {
			return 0, bad("")
		}
		return fromSeconds(sec, 1, bad)
	}
	if i := strings.IndexByte(t, 'd'); i > 0 && isDecimal(t[:i]) {
		days, err := strconv.ParseFloat(t[:i], 64)
		if err != nil {
			return 0, bad("")
		}
		d, err := fromSeconds(days, 24*60*60, bad)
		if err != nil {
			return 0, err
		}
		rest := t[i+1:]
		if rest == "" {
			return d, nil
		}
		if rest[0] == '-' || rest[0] == '+' {
			return 0, bad("a sign goes before the days")
		}
		r, err := time.ParseDuration(rest)
		if err != nil {
			return 0, bad("")
		}
		if t[0] == '-' {
			r = -r
		}
		if (r > 0 && d > math.MaxInt64-r) || (r < 0 && d < math.MinInt64-r) {
			return 0, bad("too long: at most about 106751d")
		}
		return d + r, nil
	}
	d, err := time.ParseDuration(t)
	if err != nil {
		return 0, bad("")
	}
	return d, nil
}

// isDecimal reports whether s is an optionally signed decimal number such as
// 5, -0.5 or .25 (no exponent, no hex, no inf).
func isDecimal(s string) bool {
	if s != "" && (s[0] == '-' || s[0] == '+') {
		s = s[1:]
	}
	digits, dot := 0, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digits++
		case c == '.' && !dot:
			dot = true
		default:
			return false
		}
	}
	return digits > 0
}

// fromSeconds returns n units of unit seconds as a Duration, rounded to the
// nanosecond, or bad's error when it does not fit.
func fromSeconds(n, unit float64, bad func(string) error) (time.Duration, error) {
	ns := n * unit * 1e9
	if math.IsNaN(ns) || ns >= math.MaxInt64 || ns <= math.MinInt64 {
		return 0, bad("too long: at most about 106751d")
	}
	return time.Duration(math.Round(ns)), nil
}
