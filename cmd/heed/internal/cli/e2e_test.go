//go:build unix

package cli

// End-to-end tests: they build the heed binary once and run it as a user
// would, with real processes, signals and exit codes.

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// heedBinary returns the path of a freshly built heed binary, building it
// on first use.
func heedBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test: builds the binary")
	}
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "heed-e2e-")
		if binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "heed")
		// As the README installs it: static, without cgo.
		build := exec.Command("go", "build", "-o", binPath, "github.com/heed-go/heed/cmd/heed")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		out, err := build.CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

type result struct {
	code           int
	stdout, stderr string
	took           time.Duration
}

// runHeed runs the heed binary with args in dir and waits for it.
func runHeed(t *testing.T, dir string, args ...string) result {
	t.Helper()
	cmd := exec.Command(heedBinary(t), args...)
	cmd.Dir = dir
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	// A process that outlives heed and holds its output open must not
	// hang the test.
	cmd.WaitDelay = 2 * time.Second
	start := time.Now()
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errOut.String(), took: time.Since(start)}
	var xe *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &xe):
		r.code = xe.ExitCode()
	default:
		t.Fatalf("running heed: %v", err)
	}
	return r
}

// lines counts the lines of file name in dir.
func lines(t *testing.T, dir, name string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

func TestE2EFlakyCommandSucceeds(t *testing.T) {
	dir := t.TempDir()
	// Fails until its third run.
	script := `n=$(cat count 2>/dev/null || echo 0); n=$((n+1)); echo $n > count; echo "run $n"; [ $n -ge 3 ]`
	r := runHeed(t, dir, "run", "--attempts", "5", "--base", "10ms", "--", "sh", "-c", script)
	if r.code != 0 {
		t.Fatalf("exit %d, want 0\n%s", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "count")); string(b) != "3\n" {
		t.Errorf("ran %q times, want 3", b)
	}
	if r.stdout != "run 1\nrun 2\nrun 3\n" {
		t.Errorf("stdout %q", r.stdout)
	}
	if n := strings.Count(r.stderr, ", retry in "); n != 2 || !strings.Contains(r.stderr, "heed: attempt 3: ok") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
}

func TestE2EPermanentCode(t *testing.T) {
	dir := t.TempDir()
	r := runHeed(t, dir, "run", "--permanent-codes", "3", "--", "sh", "-c", "echo x >> runs; exit 3")
	if r.code != 3 || lines(t, dir, "runs") != 1 {
		t.Errorf("exit %d after %d runs, want 3 after 1\n%s", r.code, lines(t, dir, "runs"), r.stderr)
	}
	if !strings.Contains(r.stderr, "heed: attempt 1: exit status 3, gave up: permanent error") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
}

func TestE2EAttemptLimit(t *testing.T) {
	dir := t.TempDir()
	r := runHeed(t, dir, "run", "--attempts", "2", "--base", "10ms", "--", "sh", "-c", "echo x >> runs; exit 1")
	if r.code != 1 || lines(t, dir, "runs") != 2 {
		t.Errorf("exit %d after %d runs, want 1 after 2\n%s", r.code, lines(t, dir, "runs"), r.stderr)
	}
	if !strings.Contains(r.stderr, "heed: attempt 2: exit status 1, gave up: attempts exhausted") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
}

func TestE2EDeadline(t *testing.T) {
	dir := t.TempDir()
	r := runHeed(t, dir, "run", "--deadline", "300ms", "--base", "200ms", "--attempts", "100", "--",
		"sh", "-c", "echo x >> runs; sleep 0.1; exit 1")
	if r.code != 124 {
		t.Errorf("exit %d, want 124\n%s", r.code, r.stderr)
	}
	// Every attempt takes at least its 100 ms of sleep, so at most 3 fit
	// in the 300 ms deadline, however busy the machine (a bound on the
	// wall clock, 2 s, failed at 2.64 s under -race at load 28). The time
	// is only a liveness bound: 100 attempts would take 10 s.
	if n := lines(t, dir, "runs"); n < 1 || n > 3 {
		t.Errorf("%d attempts, want 1 to 3 in the 300 ms deadline", n)
	}
	if r.took > 9*time.Second {
		t.Errorf("took %v", r.took)
	}
	if !strings.Contains(r.stderr, "gave up: no retry fits in the time budget left") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
}

// The per-attempt timeout kills the command's whole process group, not just
// the shell: no "sleep 30" survives. Each attempt writes its shell's and
// its background sleep's pids on one line once both exist; every pid
// written must be dead afterwards. (An attempt that a loaded machine
// starts too slowly to write its line within the 1 s timeout is killed
// before it has a group to leak; at least one of the two must write.)
func TestE2ETimeoutKillsProcessGroup(t *testing.T) {
	dir := t.TempDir()
	script := `sleep 30 & echo "$$ $!" >> pids; sleep 30`
	r := runHeed(t, dir, "run", "--timeout", "1s", "--attempts", "2", "--base", "10ms", "--", "sh", "-c", script)
	if r.code != 124 {
		t.Errorf("exit %d, want 124\n%s", r.code, r.stderr)
	}
	if r.took > 20*time.Second { // not killed: 2 x 30 s
		t.Errorf("took %v", r.took)
	}
	pids := readPids(t, filepath.Join(dir, "pids"))
	if len(pids) < 2 || len(pids)%2 != 0 {
		t.Fatalf("pids %v, want a pair per attempt that started its sleep", pids)
	}
	for _, pid := range pids {
		waitDead(t, pid)
	}
}

// SIGINT to heed kills the command's group and exits 130.
func TestE2EInterrupt(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(heedBinary(t), "run", "--", "sh", "-c", `sleep 30 & echo $! > pids; wait`)
	cmd.Dir = dir
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(dir, "pids")
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if b, _ := os.ReadFile(pidFile); bytes.HasSuffix(b, []byte("\n")) {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the command never started")
		}
	}
	cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	var xe *exec.ExitError
	if !errors.As(err, &xe) || xe.ExitCode() != 130 {
		t.Errorf("heed exited with %v, want code 130\n%s", err, errOut.String())
	}
	for _, pid := range readPids(t, pidFile) {
		waitDead(t, pid)
	}
}

func TestE2ECommandNotFound(t *testing.T) {
	r := runHeed(t, t.TempDir(), "run", "--", "heed-test-no-such-command", "arg")
	if r.code != 127 || !strings.Contains(r.stderr, "heed-test-no-such-command") {
		t.Errorf("exit %d, want 127; stderr %q", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "retry in") {
		t.Errorf("retried a missing command:\n%s", r.stderr)
	}
}

func TestE2EUsageError(t *testing.T) {
	// heed's own usage errors exit 125, as GNU timeout's do, so that they
	// are not mistaken for a command's own exit 2.
	r := runHeed(t, t.TempDir(), "run", "--attempts", "nope", "--", "true")
	if r.code != 125 || !strings.Contains(r.stderr, "--attempts") {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
	r = runHeed(t, t.TempDir(), "run")
	if r.code != 125 {
		t.Errorf("no command: exit %d", r.code)
	}
	r = runHeed(t, t.TempDir(), "run", "--attempts", "1", "--", "sh", "-c", "exit 2")
	if r.code != 2 || !strings.Contains(r.stderr, "exit status 2") {
		t.Errorf("a command's own 2: exit %d, stderr %q", r.code, r.stderr)
	}
}

func readPids(t *testing.T, name string) []int {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for f := range strings.FieldsSeq(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("bad pid %q", f)
		}
		pids = append(pids, pid)
	}
	return pids
}

// waitDead fails t unless process pid is gone (or a zombie) within 5 s.
func waitDead(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); alive(pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("process %d is still running", pid)
			syscall.Kill(pid, syscall.SIGKILL)
			return
		}
	}
}

// alive reports whether process pid exists and is not a zombie (an orphan's
// zombie lingers when the container's init does not reap).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true // no /proc: trust kill
	}
	// The state follows the command name, which is in parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return true
	}
	state := b[i+2]
	return state != 'Z' && state != 'X'
}
