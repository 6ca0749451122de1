//go:build unix

package cli

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
	"github.com/heed-go/heed/sqlitestore"
)

// The README's first steps, as a user runs them on a fresh clone, in one
// directory: heed demo (about 2 s, exit 0) writes ./heed.db, where the
// commands it suggests, the jobs tour of docs/queue.md and heed ui look
// without --db; the tour's drain does not wait for its job scheduled later.
func TestE2EReadmeFirstSteps(t *testing.T) {
	dir := t.TempDir()
	r := runHeed(t, dir, "demo")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("demo: exit %d, stderr %q\n%s", r.code, r.stderr, r.stdout)
	}
	if !strings.HasPrefix(r.stdout, "heed demo: a job queue in sqlite heed.db, where heed jobs and heed ui look by default\n") {
		t.Errorf("the demo does not say it writes ./heed.db:\n%s", r.stdout)
	}
	if _, err := os.Stat(filepath.Join(dir, "heed.db")); err != nil {
		t.Errorf("no ./heed.db after the demo: %v", err)
	}
	if n := strings.Count(r.stdout, "  ok\n"); n != 5 {
		t.Errorf("%d jobs ok, want 5:\n%s", n, r.stdout)
	}
	// The demo's fate table and what it suggests are the README's and
	// docs/queue.md's, line for line (the lines above them carry times and
	// a port).
	readme, queueDoc := repoFile(t, "README.md"), repoFile(t, "docs/queue.md")
	_, tail, _ := strings.Cut(r.stdout, "Every job's fate:\n")
	if tail == "" || !strings.Contains(readme, tail) || !strings.Contains(queueDoc, tail) {
		t.Errorf("the demo's table and suggestions are not those of README.md and docs/queue.md:\n%s", tail)
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
	if ui := suggested[3]; len(ui) != 1 || ui[0] != "ui" {
		t.Errorf("last suggestion is %q, want heed ui", ui)
	}
	requeue := suggested[2]
	if len(requeue) != 4 || requeue[0] != "jobs" || requeue[1] != "dead" || requeue[2] != "requeue" {
		t.Fatalf("third suggestion is %q, want a requeue", requeue)
	}
	show := runHeed(t, dir, "jobs", "show", requeue[3])
	if show.code != 0 || !strings.Contains(show.stdout, "state      dead (attempts)") {
		t.Errorf("the demo suggests requeueing job %s, which is not dead by its attempts:\n%s%s", requeue[3], show.stdout, show.stderr)
	}
	for _, args := range suggested[:3] {
		if got := runHeed(t, dir, args...); got.code != 0 {
			t.Errorf("heed %s: exit %d\n%s%s", strings.Join(args, " "), got.code, got.stdout, got.stderr)
		}
	}

	// The jobs tour of docs/queue.md, in the same directory.
	tour := docBlock(t, "docs/queue.md", "heed jobs enqueue fail '{\"times\": 2}'")
	if len(tour) < 5 {
		t.Fatalf("the jobs tour of docs/queue.md has %d commands", len(tour))
	}
	for _, args := range tour {
		got := runHeed(t, dir, args...)
		if got.code != 0 {
			t.Errorf("heed %s: exit %d\n%s%s", strings.Join(args, " "), got.code, got.stdout, got.stderr)
		}
		if args[0] == "jobs" && args[1] == "work" {
			if got.took > 20*time.Second || !strings.Contains(got.stderr, "1 job of these queues scheduled for later, not waited for") {
				t.Errorf("heed %s took %v:\n%s", strings.Join(args, " "), got.took, got.stderr)
			}
		}
	}

	// docs/queue.md shows heed jobs show 7, the tour's permanent failure.
	show7 := runHeed(t, dir, "jobs", "show", "7")
	for _, want := range []string{"job        7\n", "state      dead (permanent)\n", `args       {"permanent": true, "message": "invalid address"}` + "\n",
		"requeue it with: heed jobs dead requeue 7\n"} {
		if !strings.Contains(show7.stdout, want) || !strings.Contains(queueDoc, want) {
			t.Errorf("heed jobs show 7 and docs/queue.md should both say %q:\n%s", want, show7.stdout)
		}
	}

	// heed ui serves the same database.
	cmd := exec.Command(heedBinary(t), "ui", "--addr", "127.0.0.1:0", "--read-only")
	cmd.Dir = dir
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	m := regexp.MustCompile(`serving sqlite heed\.db on (http://127\.0\.0\.1:\d+/)`).FindStringSubmatch(line)
	if err != nil || m == nil {
		t.Fatalf("heed ui: %q, %v", line, err)
	}
	resp, err := http.Get(m[1] + "dead")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), "invalid email address") {
		t.Errorf("heed ui: GET /dead: %d\n%.400s", resp.StatusCode, b)
	}
}

// docBlock returns the commands of the sh block of the document name (a
// path from the repository's root) that starts with the line first, split
// as the shell would (single quotes kept together, comments dropped),
// without the leading "heed".
func docBlock(t *testing.T, name, first string) [][]string {
	t.Helper()
	_, block, ok := strings.Cut(repoFile(t, name), "```sh\n"+first)
	if !ok {
		t.Fatalf("%s has no sh block starting with %s", name, first)
	}
	block, _, _ = strings.Cut(first+block, "```")
	var cmds [][]string
	for line := range strings.Lines(block) {
		var args []string
		var cur strings.Builder
		quoted, inArg := false, false
		for _, c := range line {
			switch {
			case c == '\'':
				quoted, inArg = !quoted, true
			case !quoted && (c == ' ' || c == '\n'):
				if inArg {
					args, inArg = append(args, cur.String()), false
					cur.Reset()
				}
			case !quoted && c == '#':
				goto done
			default:
				cur.WriteRune(c)
				inArg = true
			}
		}
	done:
		if inArg {
			args = append(args, cur.String())
		}
		if len(args) > 1 && args[0] == "heed" {
			cmds = append(cmds, args[1:])
		}
	}
	return cmds
}

// waitState waits until job id is in state.
func waitState(t *testing.T, st jobstore.Store, id int64, state queue.State) *queue.Job {
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
			if last := j.History[len(j.History)-1]; j.Attempt != 0 || last.Outcome != jobstore.OutcomeReleased {
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
