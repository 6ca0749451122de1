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

	"github.com/mattn/go-isatty"

	"github.com/heed-go/heed/retry"
)

var runDoc = helpDoc{
	head: `Usage: heed run [FLAGS] -- COMMAND [ARGS...]

Runs COMMAND until it succeeds or the retry policy gives up, with the same
decisions as heed's retry.Do. Each decision is printed to stderr:

  heed: attempt 1: exit status 1, retry in 180ms
  heed: attempt 3: exit status 1, gave up: attempts exhausted

COMMAND's arguments, environment, stdout and stderr pass through
unchanged. So does stdin when it is a terminal: COMMAND can read it, and
gets its Ctrl-C (which ends the run: it is not retried). Any other stdin (a
pipe, a file) is given whole to every attempt: heed keeps what the attempts
read, up to 16 MiB, and a retry after more was read gives up.

Which failures are retried: a non-zero exit code, unless it is permanent:
126 and 127 (cannot execute, not found), any code in --permanent-codes, and,
with --transient-codes, every code not listed there. A COMMAND that cannot
be started is not retried. A COMMAND killed by a signal counts as exit code
128 + the signal's number, as in a shell.

COMMAND runs in its own process group. An attempt that runs past --timeout
(or a run that heed is told to end) is stopped as GNU timeout -k does: the
group gets SIGTERM, then SIGKILL after --kill-after if it is still running,
and what is left of the group is killed once COMMAND has exited. A timed
out attempt is retried; one that times out while it starts is a timeout too.
`,
	groups: []flagGroup{policyGroup, {"Run flags", []string{"kill-after", "permanent-codes", "transient-codes", "quiet"}}},
	foot: `Exit codes (heed's own are those of GNU timeout, so that they are not
mistaken for COMMAND's: a COMMAND that exits 2 is not a usage error):
  0    COMMAND succeeded
  N    COMMAND's last exit code, when the attempts ran out or the code is
       permanent
  75   a retry budget or circuit breaker refused a retry (none can be set
       from flags yet)
  124  --deadline ended the run, or the last attempt was stopped by
       --timeout (as GNU timeout)
  125  heed run itself failed: a usage error (bad flag, no COMMAND), or its
       stdin could not be replayed to a retry (as GNU timeout)
  126  COMMAND was found but could not be executed
  127  COMMAND was not found
  130  heed was interrupted (SIGINT or SIGTERM; COMMAND's group is
       stopped), or COMMAND was ended by the terminal's Ctrl-C

Examples:
  heed run -- curl -fsS https://example.com/health
  heed run --attempts 5 --timeout 2s --deadline 10s -- ./deploy.sh
  heed run --transient-codes 75 -- make fetch
`,
}

// waitDelay bounds how long an attempt waits, after COMMAND exits or is
// killed, for output pipes that a process that escaped its group keeps open.
const waitDelay = time.Second

// exitRunFailure is heed run's own failure, a usage error included: 125, as
// GNU timeout, so that it cannot be mistaken for COMMAND's exit code.
const exitRunFailure = 125

// defaultKillAfter is how long a stopped attempt has between SIGTERM and
// SIGKILL.
const defaultKillAfter = 10 * time.Second

// runMain is "heed run". Its usage errors exit 125, not 2: see
// exitRunFailure.
func runMain(ctx context.Context, s streams, args []string) int {
	usageError := func(s streams, name string, err error) int {
		usageError(s, name, err)
		return exitRunFailure
	}
	fs := newFlagSet("run")
	pf := addPolicyFlags(fs)
	var codes exitPolicy
	fs.Var(&codes.permanent, "permanent-codes", "exit `CODES` never retried, such as 2,64-78 (and 126, 127 unless in --transient-codes)")
	fs.Var(&codes.transient, "transient-codes", "the only exit `CODES` retried, such as 1,75 (default: every code not permanent)")
	quiet := fs.Bool("quiet", false, "print no decision lines")
	killAfter := durationFlag(fs, "kill-after", defaultKillAfter, "when an attempt is stopped, time between SIGTERM and SIGKILL (0: SIGKILL at once)")
	if code, done := parseFlags(fs, args, s, runDoc); done {
		if code == exitUsage {
			return exitRunFailure
		}
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
	if *killAfter < 0 {
		return usageError(s, "run", flagError("kill-after", "%v, must not be negative", *killAfter))
	}
	r := &runner{argv: argv, codes: &codes, killAfter: *killAfter, tty: -1}
	if f, ok := s.stdin.(*os.File); ok && isatty.IsTerminal(f.Fd()) {
		// As it is: a terminal cannot be replayed, and the command may
		// prompt on it. It gets the terminal while it runs.
		r.tty = foregroundTTY(f)
	} else if s.stdin != nil {
		r.replay = newReplayStdin(s.stdin, maxReplayStdin)
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
	r.s = s
	err = retry.Do(ctx, p, r.attempt)
	code := runExitCode(ctx, err)
	if err != nil && code != exitInterrupted {
		var se *startError
		if errors.As(err, &se) {
			fmt.Fprintf(s.stderr, "heed: %v\n", se)
		} else if _, ok := errors.AsType[*retry.ExhaustedError](err); !ok {
			fmt.Fprintf(s.stderr, "heed: %v\n", err)
		} else if tl, ok := errors.AsType[errStdinTooLarge](err); ok {
			fmt.Fprintf(s.stderr, "heed: %v\n", tl)
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
	if _, ok := errors.AsType[errStdinTooLarge](err); ok {
		return exitRunFailure
	}
	if _, ok := errors.AsType[*terminalInterrupt](err); ok {
		return exitInterrupted
	}
	if code, ok := giveUpExit(err); ok {
		return code
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return exitRunFailure // heed's own failure, copying the output say
}

// runner runs one attempt of a command.
type runner struct {
	argv      []string
	s         streams
	codes     *exitPolicy
	killAfter time.Duration
	tty       int          // the terminal COMMAND gets as its foreground, or -1
	replay    *replayStdin // a stdin that is not a terminal, or nil
}

// attempt runs the command once under ctx, which ends with the attempt's
// timeout, and classifies its result for the retry policy.
func (r *runner) attempt(ctx context.Context) error {
	cmd := exec.CommandContext(ctx, r.argv[0], r.argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = r.s.stdin, r.s.stdout, r.s.stderr
	var feed func() // starts copying the replayed stdin, once COMMAND runs
	if r.replay != nil {
		in, err := r.replay.attempt()
		if err != nil {
			return retry.Permanent(err)
		}
		// A pipe of heed's own, not exec's: exec would wait, after COMMAND
		// exits, for a copy blocked on a stdin that never ends (an open
		// pipe nobody writes to).
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
			pr.Close() // COMMAND has it
			go func() {
				io.Copy(pw, in)
				pw.Close()
			}()
		}
	}
	stop := ownProcessGroup(cmd, r.killAfter, r.tty)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		if ctx.Err() != nil {
			// The attempt's time ran out before the command was running:
			// a timeout, which the policy retries.
			return retry.Transient(fmt.Errorf("timed out starting %q: %w", r.argv[0], ctx.Err()))
		}
		return retry.Permanent(&startError{name: r.argv[0], err: err})
	}
	if feed != nil {
		feed()
	}
	err := cmd.Wait()
	terminated, killed := stop.done()
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
		// Stopped at the attempt's time limit (or heed is ending): a
		// timeout, which the policy retries.
		took := roundDuration(time.Since(start))
		switch {
		case killed:
			e.msg = fmt.Sprintf("timed out after %v: SIGTERM, then SIGKILL after --kill-after %v", took, r.killAfter)
		case terminated:
			e.msg = fmt.Sprintf("timed out after %v: SIGTERM", took)
		default:
			e.msg = fmt.Sprintf("timed out after %v", took)
		}
		return retry.Transient(e)
	}
	if sig, ok := signalOf(xe.ProcessState); ok && r.tty >= 0 && interruptSignal(sig) {
		// The terminal's Ctrl-C, which went to COMMAND: the user wants
		// the run to end.
		return retry.Permanent(&terminalInterrupt{e})
	}
	if r.codes.retryable(e.code) {
		return retry.Transient(e)
	}
	return retry.Permanent(e)
}

// terminalInterrupt is a command ended by the terminal's Ctrl-C or Ctrl-\.
type terminalInterrupt struct{ *exitError }

func (t *terminalInterrupt) Unwrap() error { return t.exitError }

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
