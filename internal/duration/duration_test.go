package duration

import (
	"strings"
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want time.Duration
	}{
		{"5", 5 * time.Second},
		{"0.5", 500 * time.Millisecond},
		{".25", 250 * time.Millisecond},
		{"0", 0},
		{"-2", -2 * time.Second},
		{"300ms", 300 * time.Millisecond},
		{"1m30s", 90 * time.Second},
		{"7d", 7 * 24 * time.Hour},
		{"1.5d", 36 * time.Hour},
		{"1d12h", 36 * time.Hour},
		{"-1d12h", -36 * time.Hour},
		{" 2s ", 2 * time.Second},
		{"0.000000001", time.Nanosecond},
	} {
		got, err := Parse(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("Parse(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	for _, in := range []string{"", "fast", "5x", "1e3", "0x10", "inf", "NaN", "5 s", "d", "1d-2h", "200000d", "99999999999999999999", "1.2.3"} {
		_, err := Parse(in)
		if err == nil {
			t.Errorf("Parse(%q): no error", in)
			continue
		}
		if !strings.Contains(err.Error(), "is not a duration") || !strings.HasSuffix(err.Error(), Hint) {
			t.Errorf("Parse(%q): %v", in, err)
		}
	}
}

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"5", "0.5", "7d", "1d12h", "300ms", "-1", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := Parse(s)
		if err != nil {
			return
		}
		// What parses prints back as a Go duration that parses to the same.
		if back, err := Parse(d.String()); err != nil || back != d {
			t.Errorf("%q -> %v -> %v, %v", s, d, back, err)
		}
	})
}

// Every command takes the same durations: bare seconds and days too, and a
// bad one is reported with the same example.
