package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// heed run starts exactly the attempts heed plan says start: both apply
// retry.Policy.Fits, so a retry starts only if its delay plus a whole
// attempt (--timeout, by default) still fits in --deadline.
func TestRunStartsWhatPlanSays(t *testing.T) {
	policy := []string{"--attempts", "5", "--timeout", "300ms", "--deadline", "1300ms",
		"--backoff", "constant", "--base", "100ms", "--jitter", "none"}
	code, stdout, stderr := heed(t, "", append([]string{"plan", "--json"}, policy...)...)
	if code != 0 {
		t.Fatalf("plan: exit %d, %s", code, stderr)
	}
	var pl struct {
		Schedule []struct {
			Fits string `json:"fits"`
		} `json:"schedule"`
	}
	if err := json.Unmarshal([]byte(stdout), &pl); err != nil {
		t.Fatal(err)
	}
	planned := 0
	for _, r := range pl.Schedule {
		if r.Fits != "no" {
			planned++
		}
	}
	if planned != 3 {
		t.Fatalf("plan says %d attempts start, want 3: %s", planned, stdout)
	}
	_, _, stderr = heed(t, "", append(append([]string{"run"}, policy...), "--", "sleep", "5")...)
	if n := strings.Count(stderr, "heed: attempt "); n != planned {
		t.Errorf("run made %d attempts, plan says %d:\n%s", n, planned, stderr)
	}
	if !strings.Contains(stderr, "attempt 3: timed out after") || !strings.Contains(stderr, "gave up: no retry fits in the time budget left") {
		t.Errorf("run's last attempt should be killed by its timeout and end the call for the time budget:\n%s", stderr)
	}
}
