package cron

import (
	"strings"
	"testing"
	"time"
)

func mustParse(t *testing.T, expr string) *Schedule {
	t.Helper()
	s, err := Parse(expr, time.UTC)
	if err != nil {
		t.Fatalf("Parse(%q): %v", expr, err)
	}
	return s
}

func at(t *testing.T, s string) time.Time {
	t.Helper()
	tm, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

func TestNext(t *testing.T) {
	for _, tc := range []struct {
		expr, from, want string
	}{
		{"* * * * *", "2026-03-04T05:06:07Z", "2026-03-04T05:07:00Z"},
		{"* * * * *", "2026-03-04T05:06:00Z", "2026-03-04T05:07:00Z"},   // strictly after
		{"0 9 * * 1-5", "2026-03-07T10:00:00Z", "2026-03-09T09:00:00Z"}, // Saturday -> Monday
		{"*/15 * * * *", "2026-03-04T05:06:07Z", "2026-03-04T05:15:00Z"},
		{"5/20 * * * *", "2026-03-04T05:46:00Z", "2026-03-04T06:05:00Z"}, // 5, 25, 45
		{"0 0 1,15 * *", "2026-03-02T00:00:00Z", "2026-03-15T00:00:00Z"},
		{"0 12 * jan-mar,DEC *", "2026-04-01T00:00:00Z", "2026-12-01T12:00:00Z"},
		{"0 0 * * sun", "2026-03-04T00:00:00Z", "2026-03-08T00:00:00Z"},
		{"30 2 ? * MON", "2026-03-04T00:00:00Z", "2026-03-09T02:30:00Z"},
		// Both day fields restricted: either matches (the 13th, or a Friday).
		{"0 0 13 * 5", "2026-03-01T00:00:00Z", "2026-03-06T00:00:00Z"},
		{"0 0 13 * 5", "2026-03-12T00:00:00Z", "2026-03-13T00:00:00Z"},
		// One of them "*": both must match, so Fridays only.
		{"0 0 * * 5", "2026-03-12T00:00:00Z", "2026-03-13T00:00:00Z"},
		// "*/2" is not "*": the either-day rule applies (odd days, or Mondays).
		{"0 0 */2 * 1", "2026-03-01T12:00:00Z", "2026-03-02T00:00:00Z"},
		{"0 0 29 2 *", "2026-03-01T00:00:00Z", "2028-02-29T00:00:00Z"},
		{"0 0 30 2 *", "2026-03-01T00:00:00Z", "0001-01-01T00:00:00Z"}, // never
		{"@hourly", "2026-03-04T05:06:07Z", "2026-03-04T06:00:00Z"},
		{"@daily", "2026-03-04T05:06:07Z", "2026-03-05T00:00:00Z"},
		{"@midnight", "2026-03-04T05:06:07Z", "2026-03-05T00:00:00Z"},
		{"@weekly", "2026-03-04T05:06:07Z", "2026-03-08T00:00:00Z"},
		{"@monthly", "2026-03-04T05:06:07Z", "2026-04-01T00:00:00Z"},
		{"@yearly", "2026-03-04T05:06:07Z", "2027-01-01T00:00:00Z"},
		{"@annually", "2026-03-04T05:06:07Z", "2027-01-01T00:00:00Z"},
		{"  0   9 * * *  ", "2026-03-04T10:00:00Z", "2026-03-05T09:00:00Z"},
		// Zones: fields read in the zone, the result in the caller's.
		{"CRON_TZ=Europe/Paris 0 9 * * *", "2026-03-04T12:00:00Z", "2026-03-05T08:00:00Z"},
		{"TZ=America/New_York 0 9 * * *", "2026-07-04T12:00:00Z", "2026-07-04T13:00:00Z"},
		{"CRON_TZ=Europe/Paris @daily", "2026-03-04T12:00:00Z", "2026-03-04T23:00:00Z"},
		// Daylight saving: 2:30 does not exist in Paris on 2026-03-29.
		{"CRON_TZ=Europe/Paris 30 2 * * *", "2026-03-28T12:00:00Z", "2026-03-30T00:30:00Z"},
	} {
		got := mustParse(t, tc.expr).Next(at(t, tc.from))
		if want := at(t, tc.want); !got.Equal(want) && !(got.IsZero() && tc.want == "0001-01-01T00:00:00Z") {
			t.Errorf("%q.Next(%s) = %v, want %s", tc.expr, tc.from, got, tc.want)
		}
	}
}

func TestNextKeepsTheLocation(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Skip(err)
	}
	from := time.Date(2026, 3, 4, 12, 0, 0, 0, paris)
	if got := mustParse(t, "0 * * * *").Next(from); got.Location() != paris || got.Hour() != 13 {
		t.Errorf("Next = %v, want 13:00 in Paris", got)
	}
}

func TestParseErrors(t *testing.T) {
	for expr, want := range map[string]string{
		"":                                   "want 5 fields",
		"* * * *":                            "want 5 fields (minute hour day-of-month month day-of-week), found 4",
		"* * * * * *":                        "found 6",
		"61 * * * *":                         `minute field "61": 61 is above 59`,
		"* 24 * * *":                         `hour field "24": 24 is above 23`,
		"* * 0 * *":                          `day of month field "0": 0 is below 1`,
		"* * * 13 *":                         `month field "13": 13 is above 12`,
		"* * * * 7":                          `day of week field "7": 7 is above 6`,
		"* * * foo *":                        `month field "foo": "foo" is neither a number nor a name (jan-dec)`,
		"* * * * funday":                     `"funday" is neither a number nor a name (sun-sat)`,
		"x * * * *":                          `minute field "x": "x" is not a number from 0 up`,
		"*/0 * * * *":                        `step in "*/0" is 0`,
		"*/x * * * *":                        `step "x" is not a number`,
		"1/2/3 * * * *":                      `"1/2/3" has more than one /`,
		"1-2-3 * * * *":                      `"1-2-3" has more than one -`,
		"5-1 * * * *":                        `range "5-1" runs backwards (5 > 1)`,
		"*-5 * * * *":                        `"*" is not a number`,
		"-1 * * * *":                         `"" is not a number`,
		", * * * *":                          `minute field "," has no value`,
		"@sometimes":                         "unknown descriptor",
		"@every 1h":                          "unknown descriptor",
		"CRON_TZ=Nowhere/City * * * * *":     `unknown time zone "Nowhere/City"`,
		"CRON_TZ=":                           `unknown time zone ""`,
		"CRON_TZ=Europe/Paris":               "want 5 fields",
		"CRON_TZ=Europe/Paris * * * * * bad": "found 6",
	} {
		_, err := Parse(expr, time.UTC)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", expr, err, want)
		}
	}
}

func TestHugeStep(t *testing.T) {
	s := mustParse(t, "7/9223372036854775807 * * * *")
	if got, want := s.Next(at(t, "2026-03-04T05:06:07Z")), at(t, "2026-03-04T05:07:00Z"); !got.Equal(want) {
		t.Errorf("Next = %v, want %v", got, want)
	}
}
