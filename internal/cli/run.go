package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/heed-go/heed/internal/cmdrun"
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
	var codes cmdrun.Codes
	fs.Var(&codes.Permanent, "permanent-codes", "exit `CODES` never retried, such as 2,64-78 (and 126, 127 unless in --transient-codes)")
	fs.Var(&codes.Transient, "transient-codes", "the only exit `CODES` retried, such as 1,75 (default: every code not permanent)")
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
	if err := codes.Check(); err != nil {
		return usageError(s, "run", err)
	}
	argv := fs.Args()
	if len(argv) == 0 {
		return usageError(s, "run", errors.New("no command given: heed run [FLAGS] -- COMMAND [ARGS...]"))
	}
	if *killAfter < 0 {
		return usageError(s, "run", flagError("kill-after", "%v, must not be negative", *killAfter))
	}
	r := cmdrun.New(argv, s.stdin, s.stdout, s.stderr, &codes, *killAfter)
	stderr := r.Stderr
	p.Observe = func(_ context.Context, e retry.Event) {
		switch _, start := errors.AsType[*cmdrun.StartError](e.Err); {
		case *quiet, start:
			return // a start error is reported once, below
		case e.Action == retry.Done && e.Attempt == 1:
			return // nothing to say about a plain success
		}
		fmt.Fprintf(stderr, "heed: %s\n", e.Decision)
	}
	err = retry.Do(ctx, p, r.Attempt)
	code := runExitCode(ctx, err)
	if err != nil && code != exitInterrupted {
		if se, ok := errors.AsType[*cmdrun.StartError](err); ok {
			fmt.Fprintf(stderr, "heed: %v\n", se)
		} else if _, ok := errors.AsType[*retry.ExhaustedError](err); !ok {
			fmt.Fprintf(stderr, "heed: %v\n", err)
		} else if tl, ok := errors.AsType[cmdrun.StdinTooLargeError](err); ok {
			fmt.Fprintf(stderr, "heed: %v\n", tl)
		}
	}
	if code == exitInterrupted {
		fmt.Fprintln(stderr, "heed: interrupted")
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
	if se, ok := errors.AsType[*cmdrun.StartError](err); ok {
		return se.Code()
	}
	if _, ok := errors.AsType[cmdrun.StdinTooLargeError](err); ok {
		return exitRunFailure
	}
	if _, ok := errors.AsType[*cmdrun.TerminalInterrupt](err); ok {
		return exitInterrupted
	}
	if code, ok := giveUpExit(err); ok {
		return code
	}
	if ee, ok := errors.AsType[*cmdrun.ExitError](err); ok {
		return ee.Code
	}
	return exitRunFailure // heed's own failure, copying the output say
}
