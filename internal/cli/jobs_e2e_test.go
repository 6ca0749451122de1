//go:build unix

package cli

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/sqlitestore"
)

// The README's main-job command, as a user runs it: a fresh temporary
// database, under a minute (about 2 s), exit 0.
func TestE2EDemo(t *testing.T) {
	r := runHeed(t, t.TempDir(), "demo")
	if m := regexp.MustCompile(`--db (\S+heed-demo-\d+)/demo\.db`).FindStringSubmatch(r.stdout); m != nil {
		defer os.RemoveAll(m[1])
	} else {
		t.Errorf("the demo does not say where its database is:\n%s", r.stdout)
	}
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("exit %d, stderr %q\n%s", r.code, r.stderr, r.stdout)
	}
	if n := strings.Count(r.stdout, "  ok\n"); n != 5 {
		t.Errorf("%d jobs ok, want 5:\n%s", n, r.stdout)
	}
	if r.took > 20*time.Second {
		t.Errorf("the demo took %v", r.took)
	}

	// The commands it suggests work as printed, and the job it suggests
	// requeueing is one whose error was transient, not the permanent one.
	var suggested [][]string
	for line := range strings.Lines(r.stdout) {
		cmd, ok := strings.CutPrefix(line, "  heed ")
		if !ok {
			continue
		}
		cmd, _, _ = strings.Cut(cmd, "#")
		suggested = append(suggested, strings.Fields(cmd))
	}
	if len(suggested) != 4 {
		t.Fatalf("%d suggested commands, want 4:\n%s", len(suggested), r.stdout)
	}
	// The last opens the dashboard on the same database (it serves until
	// interrupted: TestUIServes runs it).
	if ui := suggested[3]; len(ui) != 3 || ui[0] != "ui" || ui[1] != "--db" || ui[2] != suggested[0][len(suggested[0])-1] {
		t.Errorf("last suggestion is %q, want heed ui --db on the demo's database", ui)
	}
	suggested = suggested[:3]
	requeue := suggested[2]
	if len(requeue) < 4 || requeue[0] != "jobs" || requeue[1] != "dead" || requeue[2] != "requeue" {
		t.Fatalf("last suggestion is %q, want a requeue", requeue)
	}
	show := runHeed(t, t.TempDir(), "jobs", "show", requeue[3], "--db", requeue[len(requeue)-1])
	if show.code != 0 || !strings.Contains(show.stdout, "state      dead (attempts)") {
		t.Errorf("the demo suggests requeueing job %s, which is not dead by its attempts:\n%s%s", requeue[3], show.stdout, show.stderr)
	}
	for _, args := range suggested {
		if got := runHeed(t, t.TempDir(), args...); got.code != 0 {
			t.Errorf("heed %s: exit %d\n%s%s", strings.Join(args, " "), got.code, got.stdout, got.stderr)
		}
	}
}

// waitState waits until job id is in state.
func waitState(t *testing.T, st queue.Store, id int64, state queue.State) *queue.Job {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		j, err := st.JobGet(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if j.State == state {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %d is %s after 10s, want %s", id, j.State, state)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// SIGTERM stops a worker gracefully: a job that finishes within --grace
// succeeds (exit 0); one that does not is released, available again with
// its attempt given back (exit 1).
func TestE2EJobsWorkSIGTERM(t *testing.T) {
	heedBinary(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "jobs.db")
	st, err := sqlitestore.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c := queue.NewClient(st, queue.ClientConfig{})

	for _, tc := range []struct {
		ms    int
		grace string
		code  int
		state queue.State
	}{
		{ms: 700, grace: "10s", code: 0, state: queue.StateSucceeded},
		{ms: 20000, grace: "200ms", code: 1, state: queue.StateAvailable},
	} {
		job, _, err := c.Enqueue(context.Background(), "sleep", map[string]int{"ms": tc.ms}, queue.EnqueueOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(heedBinary(t), "jobs", "work", "--db", db, "--poll", "50ms", "--grace", tc.grace)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waitState(t, st, job.ID, queue.StateRunning)
		cmd.Process.Signal(syscall.SIGTERM)
		err = cmd.Wait()
		code := 0
		if xe, ok := err.(*exec.ExitError); ok {
			code = xe.ExitCode()
		}
		if code != tc.code || !strings.Contains(errOut.String(), "stopping: running jobs have "+tc.grace) {
			t.Errorf("grace %s: exit %d, want %d\nstdout: %s\nstderr: %s", tc.grace, code, tc.code, out.String(), errOut.String())
		}
		j := waitState(t, st, job.ID, tc.state)
		if tc.state == queue.StateAvailable {
			if last := j.History[len(j.History)-1]; j.Attempt != 0 || last.Outcome != queue.OutcomeReleased {
				t.Errorf("released job: attempt %d, history %+v", j.Attempt, j.History)
			}
			if !strings.Contains(out.String(), "released at shutdown") {
				t.Errorf("no release line:\n%s", out.String())
			}
		}
	}
}

// Bad input through the binary: a clear message, exit 2, no database.
func TestE2EJobsBadInput(t *testing.T) {
	t.Setenv(envDB, "") // the child inherits it
	dir := t.TempDir()
	r := runHeed(t, dir, "jobs", "enqueue", "frobnicate", "{}")
	if r.code != 2 || !strings.Contains(r.stderr, `unknown job kind "frobnicate"`) {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, defaultDB)); !os.IsNotExist(err) {
		t.Errorf("a database was created: %v", err)
	}
	r = runHeed(t, dir, "jobs", "enqueue", "noop", "{}")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, defaultDB)); err != nil {
		t.Errorf("the default database ./%s was not created: %v", defaultDB, err)
	}
}
