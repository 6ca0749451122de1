package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/heed-go/heed/retry"
)

var runDoc = helpDoc{
	head: `Usage: heed run [FLAGS] -- COMMAND [ARGS...]

Runs COMMAND until it succeeds or the retry policy gives up, with the same
decisions as heed's retry.Do. Each decision is printed to stderr:

  heed: attempt 1: exit status 1, retry in 180ms
  heed: attempt 3: exit status 1, gave up: attempts exhausted

COMMAND's arguments, environment, stdin, stdout and stderr pass through
unchanged (a retry reads what earlier attempts left of stdin).

Which failures are retried: a non-zero exit code, unless it is permanent:
126 and 127 (cannot execute, not found), any code in --permanent-codes, and,
with --transient-codes, every code not listed there. An attempt that runs
past --timeout is killed with its whole process group (SIGKILL) and retried.
A COMMAND that cannot be started is not retried. A COMMAND killed by a
signal counts as exit code 128 + the signal's number, as in a shell.

COMMAND runs in its own process group, so it does not get the terminal's
SIGINT; heed gets it and kills the group. Commands that read from the
terminal are stopped by it (SIGTTIN); give them stdin from elsewhere.
`,
	groups: []flagGroup{policyGroup, {"Run flags", []string{"permanent-codes", "transient-codes", "quiet"}}},
	foot: `Exit codes:
  0    COMMAND succeeded
  N    COMMAND's last exit code, when the attempts ran out or the code is
       permanent
  2    usage error: bad flag, no COMMAND
  75   a retry budget or circuit breaker refused a retry (none can be set
       from flags yet)
  124  --deadline ended the run, or the last attempt was killed by --timeout
       (as GNU timeout)
  126  COMMAND was found but could not be executed
  127  COMMAND was not found
  130  heed was interrupted (SIGINT or SIGTERM); COMMAND's group is killed

Examples:
  heed run -- curl -fsS https://example.com/health
  heed run --attempts 5 --timeout 2s --deadline 10s -- ./deploy.sh
  heed run --transient-codes 75 -- make fetch
`,
}

// waitDelay bounds how long an attempt waits, after COMMAND exits or is
// killed, for output pipes that a process that escaped its group keeps open.
const waitDelay = time.Second

// runMain is "heed run".
func runMain(ctx context.Context, s streams, args []string) int {
	fs := newFlagSet("run")
	pf := addPolicyFlags(fs)
	var codes exitPolicy
	fs.Var(&codes.permanent, "permanent-codes", "exit `CODES` never retried, such as 2,64-78 (and 126, 127 unless in --transient-codes)")
	fs.Var(&codes.transient, "transient-codes", "the only exit `CODES` retried, such as 1,75 (default: every code not permanent)")
	quiet := fs.Bool("quiet", false, "print no decision lines")
	if code, done := parseFlags(fs, args, s, runDoc); done {
		return code
	}
	p, err := pf.policy()
	if err != nil {
		return usageError(s, "run", err)
	}
	if err := codes.check(); err != nil {
		return usageError(s, "run", err)
	}
	argv := fs.Args()
	if len(argv) == 0 {
		return usageError(s, "run", errors.New("no command given: heed run [FLAGS] -- COMMAND [ARGS...]"))
	}

	s = lockStreams(s)
	p.Observe = func(_ context.Context, e retry.Event) {
		var se *startError
		switch {
		case *quiet, errors.As(e.Err, &se):
			return // a start error is reported once, below
		case e.Action == retry.Done && e.Attempt == 1:
			return // nothing to say about a plain success
		}
		fmt.Fprintf(s.stderr, "heed: %s\n", e.Decision)
	}
	r := &runner{argv: argv, s: s, codes: &codes}
	err = retry.Do(ctx, p, r.attempt)
	code := runExitCode(ctx, err)
	if err != nil && code != exitInterrupted {
		var se *startError
		if errors.As(err, &se) {
			fmt.Fprintf(s.stderr, "heed: %v\n", se)
		} else if _, ok := errors.AsType[*retry.ExhaustedError](err); !ok {
			fmt.Fprintf(s.stderr, "heed: %v\n", err)
		}
	}
	if code == exitInterrupted {
		fmt.Fprintln(s.stderr, "heed: interrupted")
	}
	return code
}

// runExitCode maps the result of retry.Do to heed run's exit code.
func runExitCode(ctx context.Context, err error) int {
	if err == nil {
		return exitOK
	}
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		if errors.Is(err, context.DeadlineExceeded) {
			return exitTimeout
		}
		return exitInterrupted
	}
	var se *startError
	if errors.As(err, &se) {
		return se.code()
	}
	var ex *retry.ExhaustedError
	if errors.As(err, &ex) {
		switch ex.Reason {
		case retry.ReasonTimeBudget, retry.ReasonDeadline:
			return exitTimeout
		case retry.ReasonBudget, retry.ReasonBreakerOpen:
			return exitRefused
		}
		if n := len(ex.Trace); n > 0 && ex.Trace[n-1].Outcome == retry.OutcomeTimeout {
			return exitTimeout
		}
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return exitFailure
}

// runner runs one attempt of a command.
type runner struct {
	argv  []string
	s     streams
	codes *exitPolicy
}

// attempt runs the command once under ctx, which ends with the attempt's
// timeout, and classifies its result for the retry policy.
func (r *runner) attempt(ctx context.Context) error {
	cmd := exec.CommandContext(ctx, r.argv[0], r.argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = r.s.stdin, r.s.stdout, r.s.stderr
	cmd.WaitDelay = waitDelay
	ownProcessGroup(cmd)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return retry.Permanent(&startError{name: r.argv[0], err: err})
	}
	err := cmd.Wait()
	if err == nil || errors.Is(err, exec.ErrWaitDelay) {
		// ErrWaitDelay: COMMAND succeeded, but something it started still
		// held its output open after waitDelay.
		return nil
	}
	var xe *exec.ExitError
	if !errors.As(err, &xe) {
		// An I/O error copying the streams: repeating will not fix it.
		return retry.Permanent(err)
	}
	e := &exitError{code: exitCodeOf(xe.ProcessState), err: err}
	if ctx.Err() != nil {
		// Killed at the attempt's time limit (or heed is ending): a
		// timeout, which the policy retries.
		e.msg = fmt.Sprintf("killed after %v", time.Since(start).Round(time.Millisecond))
		return retry.Transient(e)
	}
	if r.codes.retryable(e.code) {
		return retry.Transient(e)
	}
	return retry.Permanent(e)
}

// exitError is a command's failed exit.
type exitError struct {
	code int    // the exit code, or 128 + signal
	msg  string // replaces err's message when set
	err  error  // the *exec.ExitError
}

func (e *exitError) Error() string {
	if e.msg != "" {
		return e.msg
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// exitCodeOf returns the exit code of a process as a shell reports it: its
// exit status, or 128 + the signal that killed it.
func exitCodeOf(ps *os.ProcessState) int {
	if code := ps.ExitCode(); code >= 0 {
		return code
	}
	if sig, ok := signalOf(ps); ok {
		return 128 + sig
	}
	return exitFailure
}

// startError is a command that could not be started.
type startError struct {
	name string
	err  error
}

func (e *startError) Error() string {
	cause := e.err
	var ee *exec.Error
	var pe *fs.PathError
	switch {
	case errors.As(cause, &ee):
		cause = ee.Err
	case errors.As(cause, &pe):
		cause = pe.Err
	}
	return fmt.Sprintf("cannot run %q: %v", e.name, cause)
}

func (e *startError) Unwrap() error { return e.err }

// code is 127 when the command does not exist, 126 when it cannot be run.
func (e *startError) code() int {
	if errors.Is(e.err, exec.ErrNotFound) || errors.Is(e.err, fs.ErrNotExist) {
		return exitNotFound
	}
	return exitCannotExec
}

// lockStreams serialises writes to stdout and stderr that are not files, so
// that heed's own lines and a command's copied output never race (files are
// handed to the command as they are).
func lockStreams(s streams) streams {
	var mu sync.Mutex
	wrap := func(w io.Writer) io.Writer {
		if _, ok := w.(*os.File); ok || w == nil {
			return w
		}
		return &lockedWriter{mu: &mu, w: w}
	}
	s.stdout, s.stderr = wrap(s.stdout), wrap(s.stderr)
	return s
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
