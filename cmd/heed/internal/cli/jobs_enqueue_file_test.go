package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/sqlitestore"
)

func TestJobsEnqueueFile(t *testing.T) {
	path := jobsTestDB(t)
	lines := `{"kind": "noop"}
{"kind": "noop", "args": {}, "queue": "bulk", "priority": -1, "key": "k1"}

{"kind": "fail", "args": {"times": 1}, "in": "10m", "attempts": 3}
{"kind": "noop", "key": "k1", "queue": "bulk"}
`
	code, stdout, stderr := heed(t, lines, "jobs", "enqueue", "--file", "-", "--queue", "q")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if want := "enqueued 3 jobs from stdin (1 already held by their unique keys: not enqueued again)\n"; stdout != want {
		t.Errorf("stdout %q, want %q", stdout, want)
	}
	st, err := sqlitestore.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	jobs, err := st.JobList(context.Background(), queue.JobFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 3 {
		t.Fatalf("%d jobs, want 3", len(jobs))
	}
	if j := jobs[0]; j.Queue != "q" || j.Kind != "noop" {
		t.Errorf("job 1: queue %q kind %q: the --queue default", j.Queue, j.Kind)
	}
	if j := jobs[1]; j.Queue != "bulk" || j.Priority != -1 || j.UniqueKey != "k1" {
		t.Errorf("job 2: %+v", j)
	}
	if j := jobs[2]; j.MaxAttempts != 3 || !j.AvailableAt.After(j.CreatedAt.Add(9*60e9)) || string(j.Args) != `{"times": 1}` {
		t.Errorf("job 3: attempts %d available %v created %v args %s", j.MaxAttempts, j.AvailableAt, j.CreatedAt, j.Args)
	}
}

// Bad lines are reported with their numbers, and nothing is written (the
// database is not even created).
func TestJobsEnqueueFileBadLines(t *testing.T) {
	path := jobsTestDB(t)
	file := filepath.Join(t.TempDir(), "jobs.jsonl")
	lines := []string{
		`{"kind": "noop"}`,
		`{"kind": "frobnicate"}`,
		`{"kind": "fail", "args": {"tims": 2}}`,
		`not json`,
		`{"kind": "noop", "in": "soon"}`,
		`{"kind": "noop", "colour": "red"}`,
		`{"args": {}}`,
		`{"kind": "noop", "attempts": 0}`,
		`{"kind": "noop", "key": "bad\u0000key"}`,
	}
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := heed(t, "", "jobs", "enqueue", "--file", file)
	if code != 2 || stdout != "" {
		t.Fatalf("exit %d, stdout %q", code, stdout)
	}
	for _, want := range []string{
		`line 2: jobkinds: unknown job kind "frobnicate"`,
		`line 3: `, `unknown field "tims"`,
		`line 4: not a job object`,
		`line 5: "in": "soon" is not a duration`,
		`line 6: not a job object: unknown field "colour"`,
		`line 7: no "kind"`,
		`line 8: "attempts" is 0`,
		`line 9: queue: EnqueueOptions.UniqueKey has the control character U+0000`,
		`8 bad lines in ` + file + `: nothing enqueued`,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr does not contain %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "line 1:") {
		t.Errorf("line 1 reported:\n%s", stderr)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the database was created: %v", err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"jobs", "enqueue", "--file", filepath.Join(t.TempDir(), "none.jsonl")}, "invalid --file"},
		{[]string{"jobs", "enqueue", "--file", "-", "noop"}, `unexpected argument "noop"`},
		{[]string{"jobs", "enqueue", "--file", "-"}, "stdin has no jobs"},
	} {
		if code, _, stderr := heed(t, "", tc.args...); code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}
