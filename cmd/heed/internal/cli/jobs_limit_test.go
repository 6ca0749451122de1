package cli

import (
	"os"
	"strings"
	"testing"
	"time"
)

// heed jobs limit end to end: set, list, replace, remove; a worker holds
// to the limit; usage errors.
func TestJobsLimit(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		jobsTestDB(t)
		jobsLimitTour(t)
	})
	t.Run("postgres", func(t *testing.T) {
		if os.Getenv("HEED_TEST_POSTGRES_URL") == "" {
			t.Skip("HEED_TEST_POSTGRES_URL is not set")
		}
		t.Setenv(envDB, pgTestSchema(t, os.Getenv("HEED_TEST_POSTGRES_URL")))
		jobsLimitTour(t)
	})
}

func jobsLimitTour(t *testing.T) {
	mustHeed(t, 0, "jobs", "migrate")
	if out := mustHeed(t, 0, "jobs", "limit"); out != "no queue has a limit\n" {
		t.Errorf("limit with none: %q", out)
	}
	if out := mustHeed(t, 0, "jobs", "limit", "geocode", "--concurrency", "10", "--rate", "50"); out != "queue geocode: at most 10 running, 50 starts per 1s, across every worker\n" {
		t.Errorf("limit geocode: %q", out)
	}
	mustHeed(t, 0, "jobs", "limit", "reports", "--rate", "100/1h")
	if out := mustHeed(t, 0, "jobs", "limit"); out != "queue geocode: at most 10 running, 50 starts per 1s\nqueue reports: at most 100 starts per 1h0m0s\n" {
		t.Errorf("limit list: %q", out)
	}
	if out := mustHeed(t, 0, "jobs", "limit", "geocode", "--concurrency", "1"); out != "queue geocode: at most 1 running, across every worker\n" {
		t.Errorf("limit replaced: %q", out)
	}
	if out := mustHeed(t, 0, "jobs", "limit", "reports", "--off"); out != "queue reports: no limit\n" {
		t.Errorf("limit --off: %q", out)
	}
	if out := mustHeed(t, 0, "jobs", "limit"); out != "queue geocode: at most 1 running\n" {
		t.Errorf("limit list after --off: %q", out)
	}
	for _, args := range [][]string{
		{"jobs", "limit", "--concurrency", "1"},
		{"jobs", "limit", "geocode"},
		{"jobs", "limit", "geocode", "--off", "--rate", "5"},
		{"jobs", "limit", "geocode", "--concurrency", "-1"},
		{"jobs", "limit", "geocode", "--rate", "fast"},
		{"jobs", "limit", "geocode", "--rate", "5/soon"},
		{"jobs", "limit", "geocode", "--rate", "5/1us"},
		{"jobs", "limit", "bad\x01name", "--rate", "5"},
	} {
		if code, _, stderr := heed(t, "", args...); code != exitUsage || !strings.Contains(stderr, "heed jobs limit: ") {
			t.Errorf("%q: exit %d, want %d: %s", args, code, exitUsage, stderr)
		}
	}
}

// --rate takes N, N/PERIOD and N/UNIT (one of the unit).
func TestParseRate(t *testing.T) {
	for _, tt := range []struct {
		in   string
		rate int
		per  time.Duration
		ok   bool
	}{
		{"", 0, 0, true},
		{"50", 50, 0, true},
		{"100/1m", 100, time.Minute, true},
		{"50/s", 50, time.Second, true},
		{"100/h", 100, time.Hour, true},
		{"5/soon", 0, 0, false},
		{"fast", 0, 0, false},
		{"5/", 0, 0, false},
	} {
		rate, per, err := parseRate(tt.in)
		if (err == nil) != tt.ok || rate != tt.rate || per != tt.per {
			t.Errorf("parseRate(%q) = %d, %v, %v; want %d, %v, ok %v", tt.in, rate, per, err, tt.rate, tt.per, tt.ok)
		}
	}
}
