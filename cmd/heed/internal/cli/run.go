package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/heed-go/heed/cmd/heed/internal/cmdrun"
	"github.com/heed-go/heed/retry"
)

var runDoc = helpDoc{
	file:   "run",
	groups: []flagGroup{policyGroup, {"Run flags", []string{"kill-after", "k", "signal", "s", "permanent-codes", "transient-codes", "quiet"}}},
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
	pf := addPolicyFlags(fs, false)
	var codes cmdrun.Codes
	fs.Var(&codes.Permanent, "permanent-codes", "exit `CODES` never retried, such as 2,64-78 (and 126, 127 unless in --transient-codes)")
	fs.Var(&codes.Transient, "transient-codes", "the only exit `CODES` retried, such as 1,75 (default: every code not permanent)")
	quiet := fs.Bool("quiet", false, "print no decision lines")
	killAfter := durationFlag(fs, "kill-after", defaultKillAfter, "when an attempt is stopped, time between its signal and SIGKILL (0: SIGKILL at once)")
	fs.Var(fs.Lookup("kill-after").Value, "k", "the same as --kill-after `DUR` (GNU timeout's -k)")
	signalName := fs.String("signal", "TERM", "the `SIGNAL` that stops an attempt at --timeout: a name (TERM, INT, HUP, ...) or a number")
	fs.Var(fs.Lookup("signal").Value, "s", "the same as --signal `SIGNAL` (GNU timeout's -s)")
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
	sig, err := cmdrun.ParseSignal(*signalName)
	if err != nil {
		return usageError(s, "run", flagError("signal", "%v", err))
	}
	r := cmdrun.New(argv, s.stdin, s.stdout, s.stderr, &codes, *killAfter)
	r.Signal = sig
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
	if ee, ok := errors.AsType[*cmdrun.ExitError](err); ok && ee.Killed {
		// The last attempt ignored its signal and was killed: 128+9, as
		// GNU timeout -k exits.
		return ee.Code
	}
	if code, ok := giveUpExit(err); ok {
		return code
	}
	if ee, ok := errors.AsType[*cmdrun.ExitError](err); ok {
		return ee.Code
	}
	return exitRunFailure // heed's own failure, copying the output say
}
