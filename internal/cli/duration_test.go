package cli

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
		got, err := parseDuration(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("parseDuration(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	for _, in := range []string{"", "fast", "5x", "1e3", "0x10", "inf", "NaN", "5 s", "d", "1d-2h", "200000d", "99999999999999999999", "1.2.3"} {
		_, err := parseDuration(in)
		if err == nil {
			t.Errorf("parseDuration(%q): no error", in)
			continue
		}
		if !strings.Contains(err.Error(), "is not a duration") || !strings.HasSuffix(err.Error(), durationHint) {
			t.Errorf("parseDuration(%q): %v", in, err)
		}
	}
}

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"5", "0.5", "7d", "1d12h", "300ms", "-1", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := parseDuration(s)
		if err != nil {
			return
		}
		// What parses prints back as a Go duration that parses to the same.
		if back, err := parseDuration(d.String()); err != nil || back != d {
			t.Errorf("%q -> %v -> %v, %v", s, d, back, err)
		}
	})
}

// Every command takes the same durations: bare seconds and days too, and a
// bad one is reported with the same example.
func TestDurationFlagsEverywhere(t *testing.T) {
	db := t.TempDir() + "/heed.db"
	for _, tt := range []struct {
		args []string
		code int
	}{
		{[]string{"plan", "--deadline", "1.5", "--base", "0.05", "--cap", "1d"}, 0},
		{[]string{"plan", "deadline", "--deadline", "2", "--step", "name=a,p99=0.1,budget=0.5"}, 0},
		{[]string{"run", "--base", "0.001", "--timeout", "30", "--deadline", "1d", "--", "true"}, 0},
		{[]string{"get", "--max-time", "5", "--connect-timeout", "0.5", "--attempts", "1", "http://127.0.0.1:1/"}, exitTransport},
		{[]string{"jobs", "enqueue", "noop", "{}", "--in", "60", "--budget", "2d", "--db", db}, 0},
		{[]string{"jobs", "purge", "--succeeded-older-than", "7d", "--db", db}, 0},
		{[]string{"jobs", "dead", "purge", "--older-than", "30d", "--db", db}, 0},
		{[]string{"sim", "--horizon", "5", "--policy", "heed", "spike"}, 0},
	} {
		code, stdout, stderr := heed(t, "", tt.args...)
		if code != tt.code {
			t.Errorf("heed %s: exit %d, want %d\n%s%s", strings.Join(tt.args, " "), code, tt.code, stdout, stderr)
		}
	}
	for _, args := range [][]string{
		{"plan", "--base", "5x"},
		{"get", "--max-time", "five", "http://127.0.0.1:1/"},
		{"jobs", "purge", "--succeeded-older-than", "1w", "--db", db},
		{"sim", "--horizon", "1e3", "spike"},
	} {
		_, _, stderr := heed(t, "", args...)
		if !strings.Contains(stderr, "is not a duration: "+durationHint) {
			t.Errorf("heed %s: stderr %q", strings.Join(args, " "), stderr)
		}
	}
}
