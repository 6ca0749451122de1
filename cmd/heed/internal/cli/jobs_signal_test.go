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

// A worker SIGTERMed early in its start, 40 times from 50 to 100 ms
// after the process started (on a busy machine the process's first
// milliseconds of CPU spread over tens of milliseconds), stops gracefully:
// exit 0, never killed by the signal.
func TestE2EJobsWorkSIGTERMAtStart(t *testing.T) {
	bin, db := heedBinary(t), filepath.Join(t.TempDir(), "jobs.db")
	killed := 0
	for i := range 40 {
		cmd := exec.Command(bin, "jobs", "work", "--db", db)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50*time.Millisecond + time.Duration(i)*50*time.Millisecond/39)
		cmd.Process.Signal(syscall.SIGTERM)
		err := cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			killed++
			t.Errorf("start %d: killed by the signal sent after %v", i, 50*time.Millisecond+time.Duration(i)*50*time.Millisecond/39)
		} else if err != nil {
			t.Errorf("start %d: %v", i, err)
		}
	}
	t.Logf("%d of 40 starts killed by an early SIGTERM", killed)
}
