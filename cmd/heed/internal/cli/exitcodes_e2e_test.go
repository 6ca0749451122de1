//go:build unix

package cli

import (
	"bufio"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// exitOf runs cmd and returns its exit code (-1 when a signal killed it).
func exitOf(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	err := cmd.Wait()
	if err == nil {
		return 0
	}
	if xe, ok := errors.AsType[*exec.ExitError](err); ok {
		return xe.ExitCode()
	}
	t.Fatal(err)
	return 0
}

// Every row of heed get's exit-code table, through the binary, as a
// user's shell sees it (75, a refused retry, cannot be reached from
// flags: heed get runs without a retry budget or breaker). The short
// flags -m, -I, -A and -u are curl's.
func TestE2EGetExitCodes(t *testing.T) {
	bin := heedBinary(t)
	cut := make(chan struct{}, 1) // the trickling body's client went away
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			if r.Header.Get("User-Agent") != "agent-7" && r.URL.Query().Get("ua") != "" {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			if u, p, ok := r.BasicAuth(); r.URL.Query().Get("auth") != "" && (!ok || u != "me" || p != "pw") {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			w.Write([]byte("ok"))
		case "/missing":
			http.NotFound(w, r)
		case "/trickle": // a body that has begun and stalls until the client goes
			w.Header().Set("Content-Length", "30")
			w.WriteHeader(http.StatusOK)
			w.Write([]byte("x"))
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				cut <- struct{}{}
			case <-time.After(time.Minute): // not cut: the rest, and exit 0 fails the test
				w.Write([]byte(strings.Repeat("x", 29)))
			}
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	for _, tt := range []struct {
		name string
		args []string
		want int
	}{
		{"0 a response below 400", []string{srv.URL + "/ok"}, 0},
		{"0 with -A", []string{"-A", "agent-7", srv.URL + "/ok?ua=1"}, 0},
		{"0 with -u", []string{"-u", "me:pw", srv.URL + "/ok?auth=1"}, 0},
		{"0 with -I", []string{"-I", srv.URL + "/ok"}, 0},
		{"2 usage: no URL", nil, 2},
		{"2 usage: a flag curl has not", []string{"-Z", srv.URL}, 2},
		{"7 no response", []string{"--attempts", "1", "http://127.0.0.1:1/"}, 7},
		{"22 status 400 or more", []string{"--attempts", "1", srv.URL + "/missing"}, 22},
		{"124 -m cuts a trickling body", []string{"-m", "1s", srv.URL + "/trickle"}, 124},
		{"124 --max-time cuts a trickling body", []string{"--max-time", "1s", srv.URL + "/trickle"}, 124},
		{"1 the output cannot be written", []string{"-o", filepath.Join(dir, "no", "such", "dir"), srv.URL + "/ok"}, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(bin, append([]string{"get"}, tt.args...)...)
			var out strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			code := exitOf(t, cmd)
			if code != tt.want {
				t.Errorf("heed get %v: exit %d, want %d\n%s", tt.args, code, tt.want, out.String())
			}
			if strings.Contains(tt.name, "trickl") && code == tt.want {
				<-cut // the server saw the body cut, not finished
			}
		})
	}
	t.Run("130 interrupted", func(t *testing.T) {
		hung := make(chan struct{}, 1)
		slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hung <- struct{}{}
			<-r.Context().Done()
		}))
		defer slow.Close()
		cmd := exec.Command(bin, "get", slow.URL)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		<-hung
		cmd.Process.Signal(syscall.SIGTERM)
		if code := exitOf(t, cmd); code != 130 {
			t.Errorf("exit %d, want 130", code)
		}
	})
}

// Every row of heed run's exit-code table, through the binary (75, a
// refused retry, cannot be reached from flags: none sets a budget or a
// breaker yet). 137 with -k and -s is TestE2ERunTimeoutKillAfter137.
func TestE2ERunExitCodes(t *testing.T) {
	bin := heedBinary(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "not-executable"), []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		args []string
		want int
	}{
		{"0 COMMAND succeeded", []string{"--", "true"}, 0},
		{"N COMMAND's last code", []string{"--attempts", "2", "--base", "1ms", "--", "sh", "-c", "exit 3"}, 3},
		{"124 --deadline", []string{"--deadline", "300ms", "--base", "10s", "--jitter", "none", "--", "sh", "-c", "exit 1"}, 124},
		{"124 --timeout", []string{"--attempts", "1", "--timeout", "200ms", "--", "sleep", "10"}, 124},
		{"137 --timeout ignored, -k", []string{"--attempts", "1", "--timeout", "1s", "-k", "1s", "--", "sh", "-c", "trap '' TERM; while :; do sleep 0.05; done"}, 137},
		{"125 usage", []string{"--no-such-flag", "--", "true"}, 125},
		{"125 no COMMAND", nil, 125},
		{"126 cannot execute", []string{"--", "./not-executable"}, 126},
		{"127 not found", []string{"--", "heed-test-no-such-command"}, 127},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(bin, append([]string{"run"}, tt.args...)...)
			cmd.Dir = dir
			var out strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if code := exitOf(t, cmd); code != tt.want {
				t.Errorf("heed run %v: exit %d, want %d\n%s", tt.args, code, tt.want, out.String())
			}
		})
	}
	t.Run("130 interrupted", func(t *testing.T) {
		cmd := exec.Command(bin, "run", "--", "sh", "-c", "echo started; sleep 30")
		cmd.Dir = dir
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if line, _ := bufio.NewReader(stdout).ReadString('\n'); line != "started\n" {
			t.Fatalf("stdout %q", line)
		}
		cmd.Process.Signal(syscall.SIGTERM)
		if code := exitOf(t, cmd); code != 130 {
			t.Errorf("exit %d, want 130", code)
		}
	})
}
