package cli

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/heed-go/heed/cmd/heed/internal/jobtext"
)

// The operator's commands end to end: cancel, run now, delete, by ID and
// by filter with --dry-run; pause and resume; what --until-empty reports.
func TestJobsOps(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		jobsTestDB(t)
		jobsOpsTour(t)
	})
	t.Run("postgres", func(t *testing.T) {
		if os.Getenv("HEED_TEST_POSTGRES_URL") == "" {
			t.Skip("HEED_TEST_POSTGRES_URL is not set")
		}
		t.Setenv(envDB, pgTestSchema(t, os.Getenv("HEED_TEST_POSTGRES_URL")))
		jobsOpsTour(t)
	})
}

func jobsOpsTour(t *testing.T) {
	mustHeed(t, 0, "jobs", "migrate")
	mustHeed(t, 0, "jobs", "enqueue", "noop", `{}`)                    // 1
	mustHeed(t, 0, "jobs", "enqueue", "noop", `{}`, "--in", "1h")      // 2
	mustHeed(t, 0, "jobs", "enqueue", "noop", `{}`)                    // 3
	mustHeed(t, 0, "jobs", "enqueue", "noop", `{}`, "--queue", "mail") // 4

	if out := mustHeed(t, 0, "jobs", "cancel", "1"); out != "cancelled 1 job\n" {
		t.Errorf("cancel 1: %q", out)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"jobs", "cancel", "1", "3"}, "job 1 is cancelled, not available, running; nothing was cancelled"},
		{[]string{"jobs", "cancel", "99"}, "no job 99"},
		{[]string{"jobs", "run", "3"}, "job 3 is already due; nothing was made available now"},
		{[]string{"jobs", "delete", "3"}, "job 3 is available, not succeeded, dead, cancelled; nothing was deleted"},
	} {
		code, stdout, stderr := heed(t, "", tc.args...)
		if code != exitNoJob || stdout != "" || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 3 and %q", tc.args, code, stdout, stderr, tc.want)
		}
	}
	if j := showJSON(t, "3"); j.State != "available" {
		t.Errorf("job 3 changed by a refused cancel: %s", j.State)
	}
	if out := mustHeed(t, 0, "jobs", "run", "2"); out != "made available now 1 job\n" {
		t.Errorf("run 2: %q", out)
	}
	if j := showJSON(t, "2"); len(j.History) != 1 || j.History[0].Outcome != "run_now" {
		t.Errorf("job 2 after run: %+v", j.History)
	}

	code, stdout, stderr := heed(t, "", "jobs", "cancel", "--all", "--queue", "default", "--dry-run")
	if code != 0 || !strings.Contains(stdout, "noop") || strings.Count(stdout, "\n") != 3 || !strings.Contains(stderr, "dry run: would cancel 2 jobs") {
		t.Errorf("cancel --dry-run: exit %d\n%s%s", code, stdout, stderr)
	}
	if j := showJSON(t, "3"); j.State != "available" {
		t.Errorf("job 3 changed by a dry run: %s", j.State)
	}
	if out := mustHeed(t, 0, "jobs", "delete", "--all", "--state", "cancelled"); out != "deleted 1 job\n" {
		t.Errorf("delete --all --state cancelled: %q", out)
	}
	if code, _, _ := heed(t, "", "jobs", "show", "1"); code != exitNoJob {
		t.Errorf("show 1 after delete: exit %d, want 3", code)
	}

	// Pause: stats lists it, --until-empty leaves it and says so.
	if out := mustHeed(t, 0, "jobs", "pause", "mail"); !strings.HasPrefix(out, "paused queue mail") {
		t.Errorf("pause: %q", out)
	}
	if out := mustHeed(t, 0, "jobs", "pause", "mail"); out != "queue mail was already paused\n" {
		t.Errorf("pause again: %q", out)
	}
	if out := mustHeed(t, 0, "jobs", "stats"); !strings.Contains(out, "paused: mail (since ") || !strings.Contains(out, "CANCELLED") {
		t.Errorf("stats:\n%s", out)
	}
	var st struct {
		Paused []struct {
			Queue string `json:"queue"`
		} `json:"paused"`
	}
	if err := json.Unmarshal([]byte(mustHeed(t, 0, "jobs", "stats", "--json")), &st); err != nil || len(st.Paused) != 1 || st.Paused[0].Queue != "mail" {
		t.Errorf("stats --json: %+v, %v", st, err)
	}
	mustHeed(t, 0, "jobs", "enqueue", "noop", `{}`, "--queue", "other") // 5
	mustHeed(t, 0, "jobs", "enqueue", "noop", `{}`, "--in", "2h")       // 6
	code, _, stderr = heed(t, "", "jobs", "work", "--queues", "default,mail", "--until-empty", "--quiet", "--poll", "50ms")
	for _, want := range []string{
		"1 job of these queues scheduled for later, not waited for",
		"paused queues with jobs waiting, not run: mail",
		"1 job wait in queues this worker does not serve: other (1 available, 0 scheduled, 0 running)",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("work --until-empty: stderr lacks %q:\n%s", want, stderr)
		}
	}
	if code != 0 {
		t.Errorf("work --until-empty: exit %d", code)
	}
	for id, want := range map[string]string{"2": "succeeded", "3": "succeeded", "4": "available", "6": "available"} {
		if j := showJSON(t, id); string(j.State) != want {
			t.Errorf("job %s after --until-empty: %s, want %s", id, j.State, want)
		}
	}
	if out := mustHeed(t, 0, "jobs", "resume", "mail"); out != "resumed queue mail\n" {
		t.Errorf("resume: %q", out)
	}
	if out := mustHeed(t, 0, "jobs", "resume", "mail"); out != "queue mail was not paused\n" {
		t.Errorf("resume again: %q", out)
	}

	for _, args := range [][]string{
		{"jobs", "cancel"},
		{"jobs", "cancel", "1", "--all"},
		{"jobs", "cancel", "--all", "--state", "dead"},
		{"jobs", "delete", "--all", "--older-than", "-1h"},
		{"jobs", "run", "x"},
		{"jobs", "pause"},
		{"jobs", "pause", "bad\x01name"},
		{"jobs", "work", "--until-empty", "--wait-within", "-1s"},
	} {
		if code, _, stderr := heed(t, "", args...); code != exitUsage || stderr == "" {
			t.Errorf("%q: exit %d, stderr %q; want a usage error", args, code, stderr)
		}
	}
}

// showJSON returns job id as heed jobs show --json prints it.
func showJSON(t *testing.T, id string) jobtext.JSON {
	t.Helper()
	var j jobtext.JSON
	if err := json.Unmarshal([]byte(mustHeed(t, 0, "jobs", "show", id, "--json")), &j); err != nil {
		t.Fatal(err)
	}
	return j
}
