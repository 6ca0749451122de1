//go:build unix

package cli

import (
	"bufio"
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
	"github.com/heed-go/heed/sqlitestore"
)

// The binary catches SIGINT and SIGTERM before it initialises its slow
// dependencies (database drivers, telemetry, the CLI itself), so that a
// signal sent right after start stops it gracefully instead of killing it.
// GODEBUG=inittrace=1 lists package initialisations in order.
func TestE2ESignalsCaughtBeforeSlowInit(t *testing.T) {
	cmd := exec.Command(heedBinary(t), "help")
	cmd.Env = append(cmd.Environ(), "GODEBUG=inittrace=1")
	out, _ := cmd.CombinedOutput()
	pos := map[string]int{}
	for i, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "init" {
			if _, seen := pos[f[1]]; !seen {
				pos[f[1]] = i
			}
		}
	}
	sig, ok := pos["github.com/heed-go/heed/cmd/heed/internal/signals"]
	if !ok {
		t.Fatalf("internal/signals is not initialised by the binary:\n%s", out)
	}
	for _, p := range []string{"modernc.org/sqlite", "github.com/jackc/pgx/v5", "net/http",
		"github.com/heed-go/heed/cmd/heed/internal/cli"} {
		if at, ok := pos[p]; ok && at < sig {
			t.Errorf("%s is initialised before signals are caught", p)
		}
	}
}

// A signal while the worker is still opening its database is the normal
// way to stop too: exit 0, not 130.
func TestJobsWorkSignalWhileOpening(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errOut bytes.Buffer
	code := Main(ctx, []string{"jobs", "work", "--db", filepath.Join(t.TempDir(), "jobs.db")}, strings.NewReader(""), &out, &errOut)
	if code != exitOK || !strings.Contains(errOut.String(), "heed jobs work: stopped") {
		t.Errorf("exit %d, want 0 and a stopped line\n%s", code, errOut.String())
	}
}

// A second SIGTERM ends the grace at once: the running job is released
// and the worker exits 130 without waiting out --grace.
func TestE2EJobsWorkSecondSignal(t *testing.T) {
	heedBinary(t)
	db := filepath.Join(t.TempDir(), "jobs.db")
	st, err := sqlitestore.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	job, _, err := queue.NewClient(st, queue.ClientConfig{}).Enqueue(context.Background(), "sleep", map[string]int{"ms": 60000}, queue.EnqueueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(heedBinary(t), "jobs", "work", "--db", db, "--poll", "50ms", "--grace", "1m")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitState(t, st, job.ID, queue.StateRunning)
	cmd.Process.Signal(syscall.SIGTERM)
	var errOut strings.Builder
	sc := bufio.NewScanner(stderr)
	for sc.Scan() { // the first signal was taken: the worker is stopping
		errOut.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), "stopping: running jobs have 1m0s") {
			break
		}
	}
	sent := time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	for sc.Scan() {
		errOut.WriteString(sc.Text() + "\n")
	}
	err = cmd.Wait()
	took := time.Since(sent)
	code := 0
	if xe, ok := err.(*exec.ExitError); ok {
		code = xe.ExitCode()
	}
	if code != exitInterrupted || !strings.Contains(errOut.String(), "interrupted again") {
		t.Errorf("exit %d, want 130 with 'interrupted again'\nstderr: %s", code, errOut.String())
	}
	if took > 10*time.Second {
		t.Errorf("the second signal took %v to stop the worker", took)
	}
	j := waitState(t, st, job.ID, queue.StateAvailable)
	if last := j.History[len(j.History)-1]; j.Attempt != 0 || last.Outcome != jobstore.OutcomeReleased {
		t.Errorf("job after the second signal: attempt %d, history %+v", j.Attempt, j.History)
	}
}

// A worker SIGTERMed early in its start stops gracefully: exit 0, never
// killed by the signal. The child runs with GODEBUG=inittrace=1, so its
// runtime writes a line to stderr as each package finishes initialising;
// the line of internal/signals proves the signals are caught from then on
// (before it, in the runtime's own start, no Go program can catch them).
// The 40 starts take SIGTERM at points spread from that line, through the
// initialisation of the slow dependencies and the opening of the
// database, to the worker's first log line: the signal follows an event of
// the child's own start, not a delay, so a busy machine (where the child's
// first milliseconds of CPU spread over a second) does not move it before
// the signals are caught.
func TestE2EJobsWorkSIGTERMAtStart(t *testing.T) {
	bin, db := heedBinary(t), filepath.Join(t.TempDir(), "jobs.db")
	const signalsInit = "init github.com/heed-go/heed/cmd/heed/internal/signals "
	const workerLine = "heed jobs work: worker "
	// start runs a worker and sends it SIGTERM on the at-th line of
	// stderr after the signals line (at < 0: on the worker's first log
	// line). It returns how many lines came after the signals line up to
	// the one that triggered the signal.
	start := func(i, at int) int {
		cmd := exec.Command(bin, "jobs", "work", "--db", db)
		cmd.Env = append(cmd.Environ(), "GODEBUG=inittrace=1")
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var seen strings.Builder
		sc := bufio.NewScanner(stderr)
		caught, after, sent := false, 0, false
		for !sent && sc.Scan() {
			line := sc.Text()
			seen.WriteString(line + "\n")
			switch {
			case !caught:
				caught = strings.HasPrefix(line, signalsInit)
				sent = caught && at == 0
			case at < 0 && strings.HasPrefix(line, workerLine), at > 0 && after+1 == at:
				after++
				sent = true
			default:
				after++
			}
		}
		if !sent {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("start %d: stderr ended before the signal point (signals line seen: %v):\n%s", i, caught, seen.String())
		}
		cmd.Process.Signal(syscall.SIGTERM)
		for sc.Scan() {
			seen.WriteString(sc.Text() + "\n")
		}
		err = cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			t.Errorf("start %d: killed by the signal sent on line %d after the signals line:\n%s", i, after, seen.String())
		} else if err != nil {
			t.Errorf("start %d: %v (signal sent on line %d after the signals line):\n%s", i, err, after, seen.String())
		}
		return after
	}
	last := start(0, -1) // on the worker line: how many lines come before it
	if last < 2 {
		t.Fatalf("only %d lines between the signals line and the worker line", last)
	}
	for i := 1; i < 40; i++ {
		start(i, (i-1)*last/38) // from 0 (the signals line itself) to last
	}
}
