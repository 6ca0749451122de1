//go:build unix

package cli

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
)

// A piped stdin is given whole to every attempt, even after an attempt
// that read only part of it.
func TestE2ERunReplaysPipedStdin(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(heedBinary(t), "run", "--attempts", "3", "--base", "1ms", "--",
		"sh", "-c", `n=$(cat n 2>/dev/null || echo 0); n=$((n+1)); echo $n > n
if [ $n = 1 ]; then head -n 1 >> seen; else cat >> seen; fi; exit 1`)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader("line 1\nline 2\n") // a pipe, to the binary
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	err := cmd.Run()
	if xe, ok := errors.AsType[*exec.ExitError](err); !ok || xe.ExitCode() != 1 {
		t.Fatalf("exit %v, want 1\n%s", err, errOut.String())
	}
	b, _ := os.ReadFile(filepath.Join(dir, "seen"))
	if want := "line 1\nline 1\nline 2\nline 1\nline 2\n"; string(b) != want {
		t.Errorf("the attempts read %q, want %q", b, want)
	}
}

// When heed is stopped, the command's group gets SIGTERM and time to clean
// up; one that ignores it gets SIGKILL after --kill-after.
func TestE2ERunKillAfter(t *testing.T) {
	dir := t.TempDir()
	ready := filepath.Join(dir, "ready")
	if err := syscall.Mkfifo(ready, 0o600); err != nil {
		t.Fatal(err)
	}
	// The trap is set before the script says it is ready; it only notes
	// the signal, so the script goes on until SIGKILL.
	script := `trap 'echo TERM >> log' TERM; echo ready > ready; while :; do sleep 0.01; done`
	cmd := exec.Command(heedBinary(t), "run", "--kill-after", "0.3", "--", "sh", "-c", script)
	cmd.Dir = dir
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.ReadFile(ready); err != nil { // blocks until the script writes
		cmd.Process.Kill()
		t.Fatal(err)
	}
	start := time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	err := cmd.Wait()
	took := time.Since(start)
	if xe, ok := errors.AsType[*exec.ExitError](err); !ok || xe.ExitCode() != 130 {
		t.Errorf("heed exited with %v, want 130\n%s", err, errOut.String())
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "log")); !strings.HasPrefix(string(b), "TERM\n") {
		t.Errorf("the command's trap saw %q, want SIGTERM first", b)
	}
	if took < 300*time.Millisecond {
		t.Errorf("SIGKILL came %v after SIGTERM, before --kill-after 0.3", took)
	}
}

// An attempt whose time runs out before the command has started is a
// timeout (124), not "cannot run" (126).
func TestE2ERunTimeoutDuringStart(t *testing.T) {
	r := runHeed(t, t.TempDir(), "run", "--timeout", "1ns", "--attempts", "2", "--base", "1ms", "--", "true")
	if r.code != 124 || !strings.Contains(r.stderr, `timed out starting "true"`) || strings.Contains(r.stderr, "cannot run") {
		t.Errorf("exit %d, want 124\n%s", r.code, r.stderr)
	}
}

// startOnTerminal runs heed with a terminal as its stdin, stdout and stderr
// and as its controlling terminal, as a shell would; it returns the
// terminal's other end and what heed wrote to it, line by line.
func startOnTerminal(t *testing.T, args ...string) (wait func() error, term *os.File, lines <-chan string) {
	t.Helper()
	cmd := exec.Command(heedBinary(t), args...)
	cmd.Dir = t.TempDir()
	term, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no terminal: %v", err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := cmd.Start(); err != nil {
		term.Close()
		tty.Close()
		t.Fatal(err)
	}
	// The test keeps its own descriptor of the terminal until heed has
	// exited, then writes an end mark through it. A terminal whose last
	// descriptor closes hangs up, and Linux may then drop what heed wrote
	// just before it exited (seen under load: its last line lost); the mark
	// comes after all of heed's output, so reading up to it reads it all.
	done := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		io.WriteString(tty, "\r\n"+endOfOutput+"\r\n")
		done <- err
	}()
	var once sync.Once
	var werr error
	wait = func() error {
		once.Do(func() { werr = <-done })
		return werr
	}
	ch := make(chan string, 100)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(ch)
		sc := bufio.NewScanner(term)
		for sc.Scan() {
			l := strings.TrimRight(sc.Text(), "\r")
			if l == endOfOutput {
				return
			}
			ch <- l
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		wait()
		tty.Close()
		term.Close()
		wg.Wait()
	})
	return wait, term, ch
}

// endOfOutput is the line startOnTerminal writes after heed has exited.
const endOfOutput = "heed-test: end of output"

// waitLine waits for a line with want in it, and fails when heed's output
// ends first.
func waitLine(t *testing.T, lines <-chan string, want string) {
	t.Helper()
	var seen []string
	for l := range lines {
		if strings.Contains(l, want) {
			return
		}
		seen = append(seen, l)
	}
	t.Fatalf("no line with %q; heed wrote:\n%s", want, strings.Join(seen, "\n"))
}

// A command can read the terminal heed runs on (it used to be stopped by
// SIGTTIN and hang).
func TestE2ERunReadsTerminal(t *testing.T) {
	wait, term, lines := startOnTerminal(t, "run", "--", "sh", "-c", `echo prompt; read x; echo "got $x"`)
	waitLine(t, lines, "prompt")
	io.WriteString(term, "hello\n")
	waitLine(t, lines, "got hello")
	if err := wait(); err != nil {
		t.Errorf("heed: %v", err)
	}
}

// The terminal's Ctrl-C goes to the command, and ends the run: it is not
// retried.
func TestE2ERunTerminalInterrupt(t *testing.T) {
	wait, term, lines := startOnTerminal(t, "run", "--attempts", "3", "--base", "1ms", "--", "sh", "-c", `echo started; exec sleep 30`)
	waitLine(t, lines, "started")
	// sh has exec'd sleep once it printed; a Ctrl-C before the exec would
	// end sh the same way.
	io.WriteString(term, "\x03")
	waitLine(t, lines, "heed: interrupted")
	err := wait()
	if xe, ok := errors.AsType[*exec.ExitError](err); !ok || xe.ExitCode() != 130 {
		t.Errorf("heed exited with %v, want 130", err)
	}
}

// heed jobs bench shows how far each phase is on a terminal (stderr), and
// nothing when stderr is not one; the results go to stdout either way.
func TestE2EJobsBenchProgress(t *testing.T) {
	args := []string{"jobs", "bench", "--jobs", "300", "--inserters", "1", "--concurrency", "4", "--steady=false"}
	cmd := exec.Command(heedBinary(t), args...)
	cmd.Dir = t.TempDir()
	var out bytes.Buffer
	cmd.Stdout = &out
	term, err := pty.Start(cmd)
	if err != nil {
		t.Skipf("no terminal: %v", err)
	}
	defer term.Close()
	read := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(term) // until heed has exited and the terminal is closed
		read <- b
	}()
	err = cmd.Wait()
	shown := string(<-read)
	if err != nil {
		t.Fatalf("heed: %v\n%s%s", err, out.String(), shown)
	}
	for _, want := range []string{"\r\033[Kheed jobs bench: burn-down: inserted ", " of 300 jobs", "\r\033[Kheed jobs bench: burn-down: drained "} {
		if !strings.Contains(shown, want) {
			t.Errorf("the terminal shows no %q:\n%q", want, shown)
		}
	}
	if !strings.HasSuffix(shown, "\r\033[K") {
		t.Errorf("the last progress line is not cleared: %q", shown)
	}
	if !strings.Contains(out.String(), "burn-down: drained 300 jobs in ") {
		t.Errorf("stdout:\n%s", out.String())
	}

	r := runHeed(t, t.TempDir(), args...)
	if r.code != 0 || r.stderr != "" {
		t.Errorf("not on a terminal: exit %d, stderr %q", r.code, r.stderr)
	}
}

// A stdin that stays open with nothing in it (a parent's pipe) does not
// hold up an attempt that has ended.
func TestE2ERunOpenEmptyStdin(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close() // open, never written, until the test ends
	cmd := exec.Command(heedBinary(t), "run", "--attempts", "2", "--base", "1ms", "--", "sh", "-c", "exit 3")
	cmd.Stdin = pr
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	start := time.Now()
	err = cmd.Run()
	pr.Close()
	if xe, ok := errors.AsType[*exec.ExitError](err); !ok || xe.ExitCode() != 3 {
		t.Fatalf("exit %v, want 3\n%s", err, errOut.String())
	}
	// Held up, each attempt would wait --kill-after (10s) and more.
	if took := time.Since(start); took > 9*time.Second {
		t.Errorf("took %v", took)
	}
}

// heed run --timeout 1s --kill-after 1s on a command that ignores SIGTERM
// exits 137, as GNU timeout -k does; -k and -s are GNU timeout's short
// flags, and -s chooses the signal the command gets first.
func TestE2ERunTimeoutKillAfter137(t *testing.T) {
	dir := t.TempDir()
	bin := heedBinary(t)
	// A process started with HUP ignored (under nohup) passes that on to
	// heed and heed to the command, which then outlives the HUP row's
	// signal. Handling HUP here gives the children its default action, as
	// in a terminal. Always, not only when signal.Ignored says HUP is
	// ignored: after a Notify and a Stop, Stop puts the ignoring back but
	// Ignored reports false, so the second run of -count=2 under nohup
	// let the command ignore HUP (exit 137 after -k 5 s).
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for _, tc := range []struct {
		args []string
		want int
		trap string // the signal the command's trap must have seen
	}{
		{[]string{"--timeout", "1s", "--kill-after", "1s"}, 137, "TERM"},
		// -k 2: the trap must have run before the KILL, and a busy
		// machine can take more than 0.3 s to schedule sh after the INT.
		{[]string{"--timeout", "0.3", "-k", "2", "-s", "INT"}, 137, "INT"},
		{[]string{"--timeout", "0.3", "-k", "5", "-s", "HUP"}, 124, ""}, // HUP ends it: a plain timeout
	} {
		// The script says when its traps are set. A signal that comes
		// before that (a busy machine that took longer than the timeout
		// to start sh) meets the default action, not the trap: that run
		// says nothing of heed, and the row runs again.
		script := `trap 'echo TERM >> log' TERM; trap 'echo INT >> log' INT; echo ready >> log; while :; do sleep 0.01; done`
		var code int
		var err error
		var errOut bytes.Buffer
		var b []byte
		for try := 1; ; try++ {
			log := filepath.Join(dir, "log")
			os.Remove(log)
			cmd := exec.Command(bin, append(append([]string{"run", "--attempts", "1"}, tc.args...), "--", "sh", "-c", script)...)
			cmd.Dir = dir
			errOut.Reset()
			cmd.Stderr = &errOut
			err = cmd.Run()
			code = 0
			if xe, ok := errors.AsType[*exec.ExitError](err); ok {
				code = xe.ExitCode()
			}
			b, _ = os.ReadFile(log)
			if tc.trap == "" || strings.HasPrefix(string(b), "ready\n") || try == 5 {
				break
			}
			t.Logf("heed run %v: the signal came before the command's traps were set (exit %d, log %q): again", tc.args, code, b)
		}
		if code != tc.want {
			t.Errorf("heed run %v: exit %d (%v), want %d\n%s", tc.args, code, err, tc.want, errOut.String())
		}
		if tc.trap != "" && !strings.HasPrefix(string(b), "ready\n"+tc.trap+"\n") {
			t.Errorf("heed run %v: the command's trap saw %q, want ready then %s", tc.args, b, tc.trap)
		}
	}
	// A bad signal names the flag as typed.
	out, err := exec.Command(bin, "run", "-s", "NOPE", "--", "true").CombinedOutput()
	if xe, ok := errors.AsType[*exec.ExitError](err); !ok || xe.ExitCode() != 125 || !strings.Contains(string(out), `"NOPE" is not a signal`) {
		t.Errorf("heed run -s NOPE: %v\n%s", err, out)
	}
}
