//go:build unix

package cli

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// counter returns a sh script that appends a line to a file in a fresh
// temporary directory on every run, then runs body; and a function that
// counts the runs so far.
func counter(t *testing.T, body string) (script string, runs func() int) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "runs")
	script = "echo run >> '" + f + "'; " + body
	return script, func() int {
		b, err := os.ReadFile(f)
		if err != nil {
			return 0
		}
		return strings.Count(string(b), "\n")
	}
}

func TestRunSuccessFirstTime(t *testing.T) {
	code, stdout, stderr := heed(t, "", "run", "--", "echo", "hello", "world")
	if code != 0 || stdout != "hello world\n" || stderr != "" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

func TestRunPassesStreams(t *testing.T) {
	code, stdout, stderr := heed(t, "from stdin\n", "run", "--", "sh", "-c", "cat; echo to stderr >&2")
	if code != 0 || stdout != "from stdin\n" || stderr != "to stderr\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

var decisionLine = regexp.MustCompile(`^heed: attempt \d+: .+`)

func TestRunDecisionLines(t *testing.T) {
	script, runs := counter(t, "echo out; exit 1")
	code, stdout, stderr := heed(t, "", "run", "--attempts", "3", "--base", "1ms", "--", "sh", "-c", script)
	if code != 1 || runs() != 3 {
		t.Fatalf("exit %d after %d runs, want 1 after 3", code, runs())
	}
	if stdout != "out\nout\nout\n" {
		t.Errorf("stdout %q", stdout)
	}
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d decision lines, want 3:\n%s", len(lines), stderr)
	}
	for i, l := range lines {
		if !decisionLine.MatchString(l) {
			t.Errorf("line %d is not a decision: %q", i+1, l)
		}
	}
	if !strings.HasPrefix(lines[0], "heed: attempt 1: exit status 1, retry in ") {
		t.Errorf("first line %q", lines[0])
	}
	if want := "heed: attempt 3: exit status 1, gave up: attempts exhausted"; lines[2] != want {
		t.Errorf("last line %q, want %q", lines[2], want)
	}

	code, _, stderr = heed(t, "", "run", "--quiet", "--attempts", "2", "--base", "1ms", "--", "sh", "-c", "exit 4")
	if code != 4 || stderr != "" {
		t.Errorf("--quiet: exit %d, stderr %q", code, stderr)
	}
}

func TestRunSuccessAfterRetryIsReported(t *testing.T) {
	dir := t.TempDir()
	script := "if [ -e '" + dir + "/once' ]; then exit 0; fi; touch '" + dir + "/once'; exit 1"
	code, _, stderr := heed(t, "", "run", "--base", "1ms", "--", "sh", "-c", script)
	if code != 0 || !strings.HasSuffix(stderr, "heed: attempt 2: ok\n") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

func TestRunExitCodes(t *testing.T) {
	tests := []struct {
		name string
		args []string
		body string
		code int
		runs int
	}{
		{"permanent code", []string{"--permanent-codes", "3"}, "exit 3", 3, 1},
		{"not a transient code", []string{"--transient-codes", "75"}, "exit 1", 1, 1},
		{"transient code", []string{"--transient-codes", "75", "--attempts", "2"}, "exit 75", 75, 2},
		{"126 is permanent", nil, "exit 126", 126, 1},
		{"127 is permanent", nil, "exit 127", 127, 1},
		{"127 made transient", []string{"--transient-codes", "127", "--attempts", "2"}, "exit 127", 127, 2},
		{"signal", []string{"--attempts", "2"}, "kill -9 $$", 128 + 9, 2},
		{"deadline", []string{"--deadline", "5s", "--base", "10s", "--jitter", "none", "--attempts", "9"}, "exit 1", 124, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			script, runs := counter(t, tt.body)
			args := append(append([]string{"run", "--base", "1ms"}, tt.args...), "--", "sh", "-c", script)
			code, _, stderr := heed(t, "", args...)
			if code != tt.code || runs() != tt.runs {
				t.Errorf("exit %d after %d runs, want %d after %d\n%s", code, runs(), tt.code, tt.runs, stderr)
			}
		})
	}
}

func TestRunCannotStart(t *testing.T) {
	code, _, stderr := heed(t, "", "run", "--", "heed-test-no-such-command")
	if code != 127 || stderr != "heed: cannot run \"heed-test-no-such-command\": executable file not found in $PATH\n" {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	f := filepath.Join(t.TempDir(), "not-executable")
	if err := os.WriteFile(f, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = heed(t, "", "run", "--", f)
	if code != 126 || !strings.Contains(stderr, "permission denied") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

// An attempt that times out is killed and retried. heed's own lines are
// the evidence that both attempts ran and were killed: on a loaded machine
// the 50 ms timeout may kill a shell before it could have counted its run
// in a file.
func TestRunTimeoutIsRetried(t *testing.T) {
	start := time.Now()
	code, _, stderr := heed(t, "", "run", "--timeout", "50ms", "--attempts", "2", "--base", "1ms", "--", "sh", "-c", "exec sleep 10")
	if d := time.Since(start); d > 9*time.Second { // not killed: 2 x 10 s
		t.Errorf("took %v", d)
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if code != 124 || len(lines) != 2 ||
		!strings.HasPrefix(lines[0], "heed: attempt 1: timed out after ") || !strings.HasSuffix(lines[0], "(attempt timed out)") ||
		!strings.HasPrefix(lines[1], "heed: attempt 2: timed out after ") || !strings.HasSuffix(lines[1], "gave up: attempts exhausted") {
		t.Errorf("exit %d, stderr %q; want 124 after two attempts stopped by the timeout", code, stderr)
	}
}

func TestRunInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	var out, errOut strings.Builder
	code := Main(ctx, []string{"run", "--", "sleep", "10"}, strings.NewReader(""), &out, &errOut)
	if code != 130 || errOut.String() != "heed: interrupted\n" {
		t.Errorf("exit %d, stderr %q", code, errOut.String())
	}
}
