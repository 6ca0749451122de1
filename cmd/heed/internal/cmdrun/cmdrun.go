// Package cmdrun runs a command as one attempt of a retry policy: the
// executor of heed run. [Runner.Attempt] starts the command in its own
// process group, stops the group as GNU timeout -k does when the attempt's
// context ends, gives every attempt the same stdin, and classifies the
// result for package retry: a timeout or a retryable exit code is
// transient, any other failure permanent.
package cmdrun

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/mattn/go-isatty"

	"github.com/heed-go/heed/internal/duration"
	"github.com/heed-go/heed/retry"
)

// Exit codes a shell gives a command it cannot run.
const (
	CannotExec = 126 // found but could not be executed
	NotFound   = 127 // not found
)

// waitDelay bounds how long an attempt waits, after the command exits or is
// killed, for output pipes that a process that escaped its group keeps open.
const waitDelay = time.Second

// MaxReplayStdin is how much of a piped stdin a runner keeps to give every
// attempt the same input: 16 MiB. A retry after more was read gives up.
const MaxReplayStdin = 16 << 20

// A Runner runs one command, attempt after attempt. Make one with [New].
type Runner struct {
	// Stdout and Stderr are the command's output streams; writes to them
	// that are not files are serialised, so that the caller's own lines
	// and the command's copied output never race.
	Stdout, Stderr io.Writer
	// Signal is what stops an attempt at its time limit, before SIGKILL
	// after the kill-after time (0: SIGTERM), as GNU timeout's -s. See
	// [ParseSignal].
	Signal syscall.Signal

	argv      []string
	stdin     io.Reader
	codes     *Codes
	killAfter time.Duration
	tty       int          // the terminal the command gets as its foreground, or -1
	replay    *replayStdin // a stdin that is not a terminal, or nil
}

// New returns a runner of argv (the command and its arguments) with the
// given streams. A stdin that is a terminal is passed as it is, and the
// command gets it as its foreground while it runs; any other stdin is
// given whole to every attempt. codes says which exit codes are retried;
// killAfter is the time between SIGTERM and SIGKILL when an attempt is
// stopped.
func New(argv []string, stdin io.Reader, stdout, stderr io.Writer, codes *Codes, killAfter time.Duration) *Runner {
	r := &Runner{argv: argv, stdin: stdin, codes: codes, killAfter: killAfter, tty: -1}
	if f, ok := stdin.(*os.File); ok && isatty.IsTerminal(f.Fd()) {
		// As it is: a terminal cannot be replayed, and the command may
		// prompt on it. It gets the terminal while it runs.
		r.tty = foregroundTTY(f)
	} else if stdin != nil {
		r.replay = newReplayStdin(stdin, MaxReplayStdin)
	}
	var mu sync.Mutex
	lock := func(w io.Writer) io.Writer {
		if _, ok := w.(*os.File); ok || w == nil {
			return w // handed to the command as it is
		}
		return &lockedWriter{mu: &mu, w: w}
	}
	r.Stdout, r.Stderr = lock(stdout), lock(stderr)
	return r
}

// Attempt runs the command once under ctx, which ends with the attempt's
// timeout, and classifies its result for the retry policy.
func (r *Runner) Attempt(ctx context.Context) error {
	cmd := exec.CommandContext(ctx, r.argv[0], r.argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = r.stdin, r.Stdout, r.Stderr
	var feed func() // starts copying the replayed stdin, once the command runs
	if r.replay != nil {
		in, err := r.replay.attempt()
		if err != nil {
			return retry.Permanent(err)
		}
		// A pipe of our own, not exec's: exec would wait, after the
		// command exits, for a copy blocked on a stdin that never ends (an
		// open pipe nobody writes to).
		pr, pw, err := os.Pipe()
		if err != nil {
			in.Close()
			return retry.Permanent(fmt.Errorf("stdin: %w", err))
		}
		cmd.Stdin = pr
		defer func() {
			in.Close()
			pr.Close()
			pw.Close() // a copy still blocked on stdin fails when it wakes
		}()
		feed = func() {
			pr.Close() // the command has it
			go func() {
				io.Copy(pw, in)
				pw.Close()
			}()
		}
	}
	stop := ownProcessGroup(cmd, r.killAfter, r.tty, cmp.Or(r.Signal, syscall.SIGTERM))
	start := time.Now()
	if err := cmd.Start(); err != nil {
		if ctx.Err() != nil {
			// The attempt's time ran out before the command was running:
			// a timeout, which the policy retries.
			return retry.Transient(fmt.Errorf("timed out starting %q: %w", r.argv[0], ctx.Err()))
		}
		return retry.Permanent(&StartError{Name: r.argv[0], Err: err})
	}
	if feed != nil {
		feed()
	}
	err := cmd.Wait()
	terminated, killed := stop.done()
	if err == nil || errors.Is(err, exec.ErrWaitDelay) {
		// ErrWaitDelay: the command succeeded, but something it started
		// still held its output open after waitDelay.
		return nil
	}
	var xe *exec.ExitError
	if !errors.As(err, &xe) {
		// An I/O error copying the streams: repeating will not fix it.
		return retry.Permanent(err)
	}
	e := &ExitError{Code: exitCodeOf(xe.ProcessState), Killed: killed, err: err}
	if ctx.Err() != nil {
		// Stopped at the attempt's time limit (or the run is ending): a
		// timeout, which the policy retries.
		took := duration.Round(time.Since(start))
		switch {
		case killed:
			e.msg = fmt.Sprintf("timed out after %v: %s, then SIGKILL after --kill-after %v", took, SignalName(cmp.Or(r.Signal, syscall.SIGTERM)), r.killAfter)
		case terminated:
			e.msg = fmt.Sprintf("timed out after %v: %s", took, SignalName(cmp.Or(r.Signal, syscall.SIGTERM)))
		default:
			e.msg = fmt.Sprintf("timed out after %v", took)
		}
		return retry.Transient(e)
	}
	if sig, ok := signalOf(xe.ProcessState); ok && r.tty >= 0 && interruptSignal(sig) {
		// The terminal's Ctrl-C, which went to the command: the user
		// wants the run to end.
		return retry.Permanent(&TerminalInterrupt{e})
	}
	if r.codes.retryable(e.Code) {
		return retry.Transient(e)
	}
	return retry.Permanent(e)
}

// TerminalInterrupt is a command ended by the terminal's Ctrl-C or Ctrl-\.
type TerminalInterrupt struct{ *ExitError }

// Unwrap returns the command's exit.
func (t *TerminalInterrupt) Unwrap() error { return t.ExitError }

// ExitError is a command's failed exit.
type ExitError struct {
	Code   int    // the exit code, or 128 + signal
	Killed bool   // stopped at its time limit with SIGKILL, after the kill-after time
	msg    string // replaces err's message when set
	err    error  // the *exec.ExitError
}

// Error is the exit status, or how a timed-out attempt was stopped.
func (e *ExitError) Error() string {
	if e.msg != "" {
		return e.msg
	}
	return e.err.Error()
}

// Unwrap returns the *exec.ExitError.
func (e *ExitError) Unwrap() error { return e.err }

// exitCodeOf returns the exit code of a process as a shell reports it: its
// exit status, or 128 + the signal that killed it.
func exitCodeOf(ps *os.ProcessState) int {
	if code := ps.ExitCode(); code >= 0 {
		return code
	}
	if sig, ok := signalOf(ps); ok {
		return 128 + sig
	}
	return 1
}

// StartError is a command that could not be started.
type StartError struct {
	Name string // the command
	Err  error  // why
}

// Error names the command and why it could not run.
func (e *StartError) Error() string {
	cause := e.Err
	var ee *exec.Error
	var pe *fs.PathError
	switch {
	case errors.As(cause, &ee):
		cause = ee.Err
	case errors.As(cause, &pe):
		cause = pe.Err
	}
	return fmt.Sprintf("cannot run %q: %v", e.Name, cause)
}

// Unwrap returns why.
func (e *StartError) Unwrap() error { return e.Err }

// Code is [NotFound] when the command does not exist, [CannotExec] when it
// cannot be run.
func (e *StartError) Code() int {
	if errors.Is(e.Err, exec.ErrNotFound) || errors.Is(e.Err, fs.ErrNotExist) {
		return NotFound
	}
	return CannotExec
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
