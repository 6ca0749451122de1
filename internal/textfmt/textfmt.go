// Package textfmt formats numbers and durations for heed's tables and
// lines: the one way the command, the simulator's summary and the
// deadline-plan report print them.
package textfmt

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Dur formats d for a table: exact below a millisecond, to the
// microsecond below a second, to the millisecond above.
func Dur(d time.Duration) string {
	switch {
	case d == math.MaxInt64:
		return "∞"
	case d >= time.Second:
		d = d.Round(time.Millisecond)
	case d >= time.Millisecond:
		d = d.Round(time.Microsecond)
	}
	return d.String()
}

// Range formats lo–hi with Dur, or one value when they are equal.
func Range(lo, hi time.Duration) string {
	if lo == hi {
		return Dur(lo)
	}
	return Dur(lo) + "–" + Dur(hi)
}

// Num formats f with thousands separators and at most two decimals.
func Num(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) >= 1e15 {
		return strconv.FormatFloat(f, 'g', 3, 64)
	}
	s := strconv.FormatFloat(f, 'f', 2, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	intPart, frac, _ := strings.Cut(s, ".")
	neg := strings.HasPrefix(intPart, "-")
	intPart = strings.TrimPrefix(intPart, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if frac != "" {
		b.WriteString("." + frac)
	}
	return b.String()
}

// Group formats a rate with thousands separators, dropping a zero
// fraction: 1,000 or 12.5.
func Group(f float64) string {
	s := fmt.Sprintf("%.0f", f)
	if f != float64(int64(f)) {
		return fmt.Sprintf("%g", f)
	}
	n := len(s)
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (n-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Wrap splits s into lines of at most width bytes, between words.
func Wrap(s string, width int) []string {
	var lines []string
	var line string
	for _, w := range strings.Fields(s) {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// Plural is "1 job", "2 jobs".
func Plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// Shorten cuts s to n runes, with "…" when cut, on one line.
func Shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// Round rounds d for a table of jobs: to the µs below 1ms, the ms below
// 1s, 100ms below 1m, the second below 1h, the minute above.
func Round(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	case d < time.Hour:
		return d.Round(time.Second).String()
	}
	return d.Round(time.Minute).String()
}

// Ago describes t relative to now: "3s ago", "in 2m0s".
func Ago(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	switch {
	case d >= 0:
		return Round(d) + " ago"
	default:
		return "in " + Round(-d)
	}
}

// Latency rounds a latency for a table: to 100ms from 10s, to 1ms from
// 10ms, to 1µs below.
func Latency(d time.Duration) time.Duration {
	switch {
	case d >= 10*time.Second:
		return d.Round(100 * time.Millisecond)
	case d >= 10*time.Millisecond:
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Microsecond)
}
