package wire

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestParseHeaderAccepts(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"0ms", 0},
		{"0ns", 0},
		{"0h", 0},
		{"1ns", time.Nanosecond},
		{"1us", time.Microsecond},
		{"1ms", time.Millisecond},
		{"1s", time.Second},
		{"1m", time.Minute},
		{"1h", time.Hour},
		{"3200ms", 3200 * time.Millisecond},
		{"2s", 2 * time.Second},
		{"007s", 7 * time.Second},        // leading zeros allowed
		{"00000001ms", time.Millisecond}, // and count toward 8 digits
		{"99999999ns", 99999999},         // 8 digits
		{"12345678ms", 12345678 * time.Millisecond},
		{"99999999m", 99999999 * time.Minute}, // fits: ~190 years
		{"2562047h", 2562047 * time.Hour},     // largest hour value that fits
	}
	for _, tt := range tests {
		got, err := ParseHeader(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseHeader(%q) = %v, %v; want %v, nil", tt.in, got, err, tt.want)
		}
	}
}

func TestParseHeaderRejects(t *testing.T) {
	tests := []struct {
		in     string
		reason string // substring of the error message
	}{
		{"", "empty"},
		{"+1s", "sign not allowed"},
		{"-1s", "sign not allowed"},
		{"-0ms", "sign not allowed"},
		{"1.5s", "fraction not allowed"},
		{"12.5s", "fraction not allowed"},
		{".5s", "fraction not allowed"},
		{"1,5s", "fraction not allowed"},
		{"1 s", "whitespace not allowed"},
		{" 1s", "whitespace not allowed"},
		{"1s ", "whitespace not allowed"},
		{"1s\t", "whitespace not allowed"},
		{"1s\r\n", "whitespace not allowed"},
		{"s", "missing digits"},
		{"ms", "missing digits"},
		{"0x10s", "unknown unit"},
		{"1e3ms", "unknown unit"},
		{"123456789ms", "more than 8 digits"},
		{"000000001ms", "more than 8 digits"},
		{"99999999999999999999999999h", "more than 8 digits"},
		{"1", "missing unit"},
		{"12345678", "missing unit"},
		{"1S", `unknown unit "S"`},
		{"1M", `unknown unit "M"`},
		{"1H", `unknown unit "H"`},
		{"1Ms", `unknown unit "Ms"`},
		{"1sec", `unknown unit "sec"`},
		{"1µs", "unknown unit"},
		{"1d", `unknown unit "d"`},
		{"1s1ms", `unknown unit "s1ms"`},
		{"1h30m", `unknown unit "h30m"`},
		{"1ms\x00", "unknown unit"},
		{"2562048h", "too large"},
		{"99999999h", "too large"},
	}
	for _, tt := range tests {
		got, err := ParseHeader(tt.in)
		if err == nil {
			t.Errorf("ParseHeader(%q) = %v, nil; want error", tt.in, got)
			continue
		}
		if got != 0 {
			t.Errorf("ParseHeader(%q) returned %v with error", tt.in, got)
		}
		if !errors.Is(err, ErrBadHeader) {
			t.Errorf("ParseHeader(%q) error %v does not match ErrBadHeader", tt.in, err)
		}
		var he *HeaderError
		if !errors.As(err, &he) || he.Value != tt.in {
			t.Errorf("ParseHeader(%q) error %#v is not a *HeaderError with the value", tt.in, err)
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, "deadline: Timeout-Remaining ") || !strings.Contains(msg, tt.reason) {
			t.Errorf("ParseHeader(%q) error = %q; want it to contain %q", tt.in, msg, tt.reason)
		}
	}
}

func TestHeaderErrorMessage(t *testing.T) {
	_, err := ParseHeader("12.5s")
	if got, want := err.Error(), `deadline: Timeout-Remaining "12.5s": fraction not allowed`; got != want {
		t.Errorf("message = %q; want %q", got, want)
	}
	_, err = ParseHeader("1S")
	if got, want := err.Error(), `deadline: Timeout-Remaining "1S": unknown unit "S" (want h, m, s, ms, us or ns; units are case-sensitive)`; got != want {
		t.Errorf("message = %q; want %q", got, want)
	}
	// Long and hostile values are cut short and escaped.
	long := strings.Repeat("9", 1000) + "\nX-Injected: 1"
	_, err = ParseHeader(long)
	if msg := err.Error(); len(msg) > 120 || strings.Contains(msg, "\n") {
		t.Errorf("message not shortened or escaped: %q", msg)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Error("HeaderError matches context.DeadlineExceeded")
	}
}

func TestFormatHeader(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want string
	}{
		{math.MinInt64, "0ms"},
		{-time.Second, "0ms"},
		{0, "0ms"},
		{1, "1ns"},
		{999, "999ns"},
		{time.Microsecond, "1us"},
		{1500 * time.Nanosecond, "1500ns"},
		{99999999, "99999999ns"},
		{100000000, "100ms"},    // 1e8ns: 9 digits; exact in ms
		{100000001, "100ms"},    // rounded down to 100000us, written in ms
		{100000999, "100ms"},    // rounded down, never up
		{123456789, "123456us"}, // finest fitting unit is us
		{2 * time.Second, "2s"}, // exact, so the coarsest exact unit
		{3200 * time.Millisecond, "3200ms"},
		{1500 * time.Millisecond, "1500ms"},
		{time.Minute, "1m"},
		{90 * time.Second, "90s"},
		{time.Hour, "1h"},
		{time.Hour + time.Nanosecond, "1h"}, // 3600000ms after rounding down: exactly 1h
		{time.Hour + time.Millisecond, "3600001ms"},
		{99999999 * time.Microsecond, "99999999us"},
		{99999999*time.Microsecond + 999, "99999999us"},
		{100000 * time.Second, "100000s"},
		{99999999*time.Second + 999*time.Millisecond, "99999999s"},
		{100000000 * time.Second, "1666666m"}, // rounded down from 1666666.67m
		{24 * time.Hour, "24h"},
		{math.MaxInt64, "2562047h"},
	}
	for _, tt := range tests {
		if got := FormatHeader(tt.in); got != tt.want {
			t.Errorf("FormatHeader(%d) = %q; want %q", int64(tt.in), got, tt.want)
		}
	}
}

// unitOf returns the unit a valid header value is written in.
func unitOf(t *testing.T, s string) time.Duration {
	t.Helper()
	for i := len(units) - 1; i >= 0; i-- { // try two-letter units first
		if strings.HasSuffix(s, units[i].name) && len(units[i].name) == 2 {
			return units[i].d
		}
	}
	for _, u := range units {
		if strings.HasSuffix(s, u.name) {
			return u.d
		}
	}
	t.Fatalf("no unit in %q", s)
	return 0
}

func checkRoundTrip(t *testing.T, d time.Duration) {
	t.Helper()
	s := FormatHeader(d)
	got, err := ParseHeader(s)
	if err != nil {
		t.Fatalf("ParseHeader(FormatHeader(%d) = %q): %v", int64(d), s, err)
	}
	if d <= 0 {
		if got != 0 {
			t.Fatalf("FormatHeader(%d) = %q parses to %v; want 0", int64(d), s, got)
		}
		return
	}
	if got > d {
		t.Fatalf("FormatHeader(%d) = %q parses to %d: promises more time", int64(d), s, int64(got))
	}
	if u := unitOf(t, s); d-got >= u {
		t.Fatalf("FormatHeader(%d) = %q parses to %d: lost a whole unit or more", int64(d), s, int64(got))
	}
	if (d-got)*99999 >= d && d-got > 0 {
		t.Fatalf("FormatHeader(%d) = %q parses to %d: relative error too large", int64(d), s, int64(got))
	}
	if len(s) > 10 {
		t.Fatalf("FormatHeader(%d) = %q: too long", int64(d), s)
	}
}

func TestFormatHeaderRoundTrip(t *testing.T) {
	var ds []time.Duration
	for _, base := range []time.Duration{1, time.Microsecond, time.Millisecond, time.Second, time.Minute, time.Hour} {
		for _, k := range []int64{1, 7, 99999, 100000, 99999999, 100000000, 100000001, 1666666, 2562047} {
			if int64(base) > math.MaxInt64/k {
				continue
			}
			d := base * time.Duration(k)
			ds = append(ds, d-1, d, d+1)
		}
	}
	ds = append(ds, math.MaxInt64, math.MaxInt64-1, math.MinInt64, -1, 0)
	for _, d := range ds {
		checkRoundTrip(t, d)
	}
}

func FuzzFormatHeader(f *testing.F) {
	for _, d := range []int64{0, 1, -1, 99999999, 100000001, int64(time.Hour) + 1, math.MaxInt64, math.MinInt64} {
		f.Add(d)
	}
	f.Fuzz(func(t *testing.T, d int64) {
		checkRoundTrip(t, time.Duration(d))
	})
}

func FuzzParseHeader(f *testing.F) {
	for _, s := range []string{
		"0ms", "1ns", "1us", "1ms", "1s", "1m", "1h", "3200ms", "007s",
		"99999999ns", "99999999m", "2562047h", "2562048h", "99999999h",
		"", "+1s", "-1s", "1.5s", "1 s", " 1s", "s", "1", "123456789ms",
		"1S", "1µs", "1s1ms", "0x10s", "1e3ms", "\x00", "9999999999999999999h",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseHeader(s)
		if err != nil {
			if d != 0 {
				t.Fatalf("ParseHeader(%q) = %v with error %v", s, d, err)
			}
			if !errors.Is(err, ErrBadHeader) {
				t.Fatalf("ParseHeader(%q) error %v does not match ErrBadHeader", s, err)
			}
			return
		}
		if d < 0 {
			t.Fatalf("ParseHeader(%q) = %v < 0", s, d)
		}
		if len(s) > 10 {
			t.Fatalf("ParseHeader accepted %q: longer than 8 digits + 2-byte unit", s)
		}
		enc := FormatHeader(d)
		d2, err := ParseHeader(enc)
		if err != nil {
			t.Fatalf("ParseHeader(FormatHeader(ParseHeader(%q) = %v) = %q): %v", s, d, enc, err)
		}
		if d2 > d {
			t.Fatalf("%q -> %v -> %q -> %v: re-encoding grew the value", s, d, enc, d2)
		}
		if d2 != d && FormatHeader(d2) != enc {
			t.Fatalf("%q -> %v -> %q -> %v: encoding is not stable", s, d, enc, d2)
		}
	})
}

var sinkDuration time.Duration
var sinkString string

func BenchmarkParseHeader(b *testing.B) {
	for _, s := range []string{"3200ms", "99999999us", "2s"} {
		b.Run(s, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				d, err := ParseHeader(s)
				if err != nil {
					b.Fatal(err)
				}
				sinkDuration = d
			}
		})
	}
}

func BenchmarkParseHeaderInvalid(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_, err := ParseHeader("12.5s")
		if err == nil {
			b.Fatal("accepted")
		}
	}
}

func BenchmarkFormatHeader(b *testing.B) {
	for _, d := range []time.Duration{3200 * time.Millisecond, 2999873412 * time.Nanosecond} {
		b.Run(d.String(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sinkString = FormatHeader(d)
			}
		})
	}
}
