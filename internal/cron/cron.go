// Package cron parses standard five-field cron expressions and computes
// their next tick, for queue.Cron. It accepts what github.com/robfig/cron/v3's
// ParseStandard accepted when queue used it (a differential test in
// internal/compare holds the two to the same ticks), with the standard
// library only, so that the core module has no third-party dependency.
//
// An expression is five fields separated by spaces: minute (0-59), hour
// (0-23), day of month (1-31), month (1-12 or jan-dec) and day of week (0-6,
// Sunday is 0, or sun-sat). A field is a comma-separated list of "*" (or
// "?"), a value, a range "a-b", each optionally with a step "/n"; "a/n" means
// a to the field's maximum every n. Names are case-insensitive. As in cron,
// when both the day of month and the day of week are restricted (neither is
// "*" or "?"), a day matches when either matches. A descriptor may stand for
// the five fields: @yearly (or @annually), @monthly, @weekly, @daily (or
// @midnight), @hourly. A prefix "CRON_TZ=Zone " or "TZ=Zone " sets the time
// zone the fields are read in.
package cron

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Schedule is a parsed expression: a set of allowed values per field, as bits.
type Schedule struct {
	minute, hour, dom, month, dow uint64
	// domStar and dowStar: the field was "*" or "?" (unstepped), which
	// turns off cron's either-day rule.
	domStar, dowStar bool
	loc              *time.Location
}

// field is one of the five fields: its name in errors, its bounds and the
// names it accepts for values.
type field struct {
	name     string
	min, max int
	names    map[string]int
}

var (
	minute = field{"minute", 0, 59, nil}
	hour   = field{"hour", 0, 23, nil}
	dom    = field{"day of month", 1, 31, nil}
	month  = field{"month", 1, 12, map[string]int{"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
		"jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12}}
	dow = field{"day of week", 0, 6, map[string]int{"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}}
)

// descriptors are the five fields each descriptor stands for.
var descriptors = map[string]string{
	"@yearly":   "0 0 1 1 *",
	"@annually": "0 0 1 1 *",
	"@monthly":  "0 0 1 * *",
	"@weekly":   "0 0 * * 0",
	"@daily":    "0 0 * * *",
	"@midnight": "0 0 * * *",
	"@hourly":   "0 * * * *",
}

// Parse parses expr, reading its fields in loc unless it starts with a zone
// (CRON_TZ= or TZ=). Errors name the field and the value at fault.
func Parse(expr string, loc *time.Location) (*Schedule, error) {
	spec := strings.TrimSpace(expr)
	if zone, ok := cutZone(spec); ok {
		name, rest, _ := strings.Cut(zone, " ")
		l, err := time.LoadLocation(name)
		if err != nil || name == "" {
			return nil, fmt.Errorf("unknown time zone %q", name)
		}
		loc, spec = l, strings.TrimSpace(rest)
	}
	if strings.HasPrefix(spec, "@") {
		fields, ok := descriptors[spec]
		if !ok {
			return nil, fmt.Errorf("unknown descriptor %q (known: @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly)", spec)
		}
		spec = fields
	}
	fields := strings.Fields(spec)
	if len(fields) != 5 {
		return nil, fmt.Errorf("want 5 fields (minute hour day-of-month month day-of-week), found %d", len(fields))
	}
	s := &Schedule{loc: loc}
	for i, p := range []struct {
		f    field
		bits *uint64
		star *bool
	}{{minute, &s.minute, nil}, {hour, &s.hour, nil}, {dom, &s.dom, &s.domStar}, {month, &s.month, nil}, {dow, &s.dow, &s.dowStar}} {
		bits, star, err := p.f.parse(fields[i])
		if err != nil {
			return nil, err
		}
		*p.bits = bits
		if p.star != nil {
			*p.star = star
		}
	}
	return s, nil
}

// cutZone returns what follows "CRON_TZ=" or "TZ=".
func cutZone(spec string) (string, bool) {
	if z, ok := strings.CutPrefix(spec, "CRON_TZ="); ok {
		return z, true
	}
	return strings.CutPrefix(spec, "TZ=")
}

// parse reads one field: a comma-separated list of ranges. star reports a
// "*" or "?" without a step above 1 in the list.
func (f field) parse(s string) (bits uint64, star bool, err error) {
	for _, part := range strings.Split(s, ",") {
		if part == "" {
			continue // "1,,2" is "1,2", as robfig/cron read it
		}
		b, st, err := f.parseRange(part)
		if err != nil {
			return 0, false, fmt.Errorf("%s field %q: %w", f.name, s, err)
		}
		bits |= b
		star = star || st
	}
	if bits == 0 {
		return 0, false, fmt.Errorf("%s field %q has no value", f.name, s)
	}
	return bits, star, nil
}

// parseRange reads "*", "?", "a", "a-b", each with an optional "/step".
func (f field) parseRange(s string) (bits uint64, star bool, err error) {
	rng, stepText, stepped := strings.Cut(s, "/")
	if strings.Contains(stepText, "/") {
		return 0, false, fmt.Errorf("%q has more than one /", s)
	}
	step := 1
	if stepped {
		if step, err = number(stepText); err != nil {
			return 0, false, fmt.Errorf("step %w", err)
		}
		if step == 0 {
			return 0, false, fmt.Errorf("step in %q is 0", s)
		}
		step = min(step, f.max+1) // the same values, and v += step cannot overflow
	}
	lo, hi := f.min, f.max
	switch lowText, highText, isRange := strings.Cut(rng, "-"); {
	case rng == "*" || rng == "?":
		star = step == 1
	case isRange:
		if strings.Contains(highText, "-") {
			return 0, false, fmt.Errorf("%q has more than one -", s)
		}
		if lo, err = f.value(lowText); err != nil {
			return 0, false, err
		}
		if hi, err = f.value(highText); err != nil {
			return 0, false, err
		}
	default:
		if lo, err = f.value(rng); err != nil {
			return 0, false, err
		}
		if !stepped {
			hi = lo // "a" alone; "a/n" runs to the maximum
		}
	}
	switch {
	case lo < f.min:
		return 0, false, fmt.Errorf("%d is below %d", lo, f.min)
	case hi > f.max:
		return 0, false, fmt.Errorf("%d is above %d", hi, f.max)
	case lo > hi:
		return 0, false, fmt.Errorf("range %q runs backwards (%d > %d)", rng, lo, hi)
	}
	for v := lo; v <= hi; v += step {
		bits |= 1 << v
	}
	return bits, star, nil
}

// value reads a number or one of the field's names.
func (f field) value(s string) (int, error) {
	if v, ok := f.names[strings.ToLower(s)]; ok {
		return v, nil
	}
	v, err := number(s)
	if err != nil && f.names != nil {
		return 0, fmt.Errorf("%q is neither a number nor a name (%s)", s, names(f))
	}
	return v, err
}

// number reads a non-negative decimal number.
func number(s string) (int, error) {
	v, err := strconv.Atoi(s)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%q is not a number from 0 up", s)
	}
	return v, nil
}

func names(f field) string {
	if f.names["jan"] == 1 {
		return "jan-dec"
	}
	return "sun-sat"
}

// Next returns the first tick strictly after t, in t's location, or the zero
// time when there is none within five years (such as "0 0 30 2 *"). It
// walks from t field by field, from the month down to the minute, the way
// robfig/cron does, so that ticks across daylight saving changes are the
// ones heed computed with it.
func (s *Schedule) Next(t time.Time) time.Time {
	orig := t.Location()
	loc := s.loc
	if loc == time.Local {
		loc = orig // "CRON_TZ=Local": t's own location, as robfig/cron read it
	}
	t = t.In(loc)
	// At least a second after t, on a whole second: the seconds field is 0.
	t = t.Add(time.Second - time.Duration(t.Nanosecond()))
	added := false // whether t has moved to the start of a unit yet
	yearLimit := t.Year() + 5

wrap:
	if t.Year() > yearLimit {
		return time.Time{}
	}
	for s.month&(1<<uint(t.Month())) == 0 {
		if !added {
			added = true
			t = time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, loc)
		}
		t = t.AddDate(0, 1, 0)
		if t.Month() == time.January {
			goto wrap
		}
	}
	for !s.dayMatches(t) {
		if !added {
			added = true
			t = time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, loc)
		}
		t = t.AddDate(0, 0, 1)
		// A daylight saving change at midnight moves the day's start off 0:00.
		if h := t.Hour(); h != 0 {
			if h > 12 {
				t = t.Add(time.Duration(24-h) * time.Hour)
			} else {
				t = t.Add(time.Duration(-h) * time.Hour)
			}
		}
		if t.Day() == 1 {
			goto wrap
		}
	}
	for s.hour&(1<<uint(t.Hour())) == 0 {
		if !added {
			added = true
			t = time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), 0, 0, 0, loc)
		}
		t = t.Add(time.Hour)
		if t.Hour() == 0 {
			goto wrap
		}
	}
	for s.minute&(1<<uint(t.Minute())) == 0 {
		if !added {
			added = true
			t = t.Truncate(time.Minute)
		}
		t = t.Add(time.Minute)
		if t.Minute() == 0 {
			goto wrap
		}
	}
	for t.Second() != 0 {
		if !added {
			added = true
			t = t.Truncate(time.Second)
		}
		t = t.Add(time.Second)
		if t.Second() == 0 {
			goto wrap
		}
	}
	return t.In(orig)
}

// dayMatches applies cron's day rule: when either day field is "*", both
// must match (the "*" always does); when both are restricted, either may.
func (s *Schedule) dayMatches(t time.Time) bool {
	domMatch := s.dom&(1<<uint(t.Day())) != 0
	dowMatch := s.dow&(1<<uint(t.Weekday())) != 0
	if s.domStar || s.dowStar {
		return domMatch && dowMatch
	}
	return domMatch || dowMatch
}
