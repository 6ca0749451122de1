// Package cli implements the heed command: a thin layer over heed's
// packages that retries shell commands (run) and explains policies (plan).
//
// [Main] is the whole command; cmd/heed only wires it to the process.
// Every subcommand writes to the streams it is given, never to the
// process's own, and returns an exit code, so tests run it in-process.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/heed-go/heed/retry"
	"github.com/heed-go/heed/sqlitestore"
)

// Exit codes shared by the subcommands. A subcommand's help lists the ones
// it uses.
const (
	exitOK          = 0   // success
	exitFailure     = 1   // a failure with no more specific code
	exitUsage       = 2   // bad flag, missing argument, unknown subcommand
	exitRefused     = 75  // EX_TEMPFAIL: retry budget empty or circuit open
	exitTimeout     = 124 // deadline or time budget ended the run (as GNU timeout)
	exitInterrupted = 130 // interrupted (SIGINT or SIGTERM): 128 + SIGINT
)

// giveUpExit returns the exit code for err when it is a retry that gave up
// because time ran out (exitTimeout: the deadline, the time budget, a
// server's pushback past them, or a last attempt that timed out) or because
// a retry budget or circuit breaker refused (exitRefused), and false for any
// other error. Every command that retries maps give-ups here.
func giveUpExit(err error) (int, bool) {
	ex, ok := errors.AsType[*retry.ExhaustedError](err)
	if !ok {
		return 0, false
	}
	if code, ok := reasonExit(ex.Reason); ok {
		return code, true
	}
	if n := len(ex.Trace); n > 0 && ex.Trace[n-1].Outcome == retry.OutcomeTimeout {
		return exitTimeout, true
	}
	return 0, false
}

// reasonExit returns the exit code of a give-up for reason r: see
// giveUpExit.
func reasonExit(r retry.Reason) (int, bool) {
	switch r {
	case retry.ReasonDeadline, retry.ReasonTimeBudget, retry.ReasonPushbackTooLong:
		return exitTimeout, true
	case retry.ReasonBudget, retry.ReasonBreakerOpen:
		return exitRefused, true
	}
	return 0, false
}

// streams are the standard streams a subcommand reads and writes. Main's
// caller supplies them; tests use buffers.
type streams struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

// A command is one subcommand of heed.
type command struct {
	name    string
	summary string // one line for the top-level usage
	// run runs the subcommand with the arguments after its name and
	// returns the exit code. It must handle --help itself (usage to
	// stdout, exit 0).
	run func(ctx context.Context, s streams, args []string) int
}

// commands is the dispatch table, in the order the top-level usage lists
// them. To add a subcommand, write it in its own file and add one line here.
var commands = []command{
	{"run", "run a command until it succeeds or the retry policy gives up", runMain},
	{"get", "send an HTTP request, retrying only what is safe to repeat", getMain},
	{"plan", "print the schedule of a retry policy and its load on a call chain", planMain},
	{"sim", "simulate what retry policies do to a struggling dependency", simMain},
	{"jobs", "durable background jobs: enqueue, work, inspect, dead-letter", jobsMain},
	{"ui", "a web dashboard of jobs, their decision timelines and the dead-letter", uiMain},
	{"demo", "watch the job queue retry, give up and dead-letter (about 2 s)", demoMain},
	{"version", "print heed's version", versionMain},
}

func lookup(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// Main runs the heed command with args (without the program name) and
// returns its exit code. ctx ends the command early (the caller cancels it
// on SIGINT and SIGTERM). It writes only to stdout and stderr and reads only
// from stdin.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	s := streams{stdin: stdin, stdout: stdout, stderr: stderr}
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	switch name := args[0]; name {
	case "help", "-h", "-help", "--help":
		return helpMain(ctx, s, args[1:])
	default:
		c, ok := lookup(name)
		if !ok {
			fmt.Fprintf(stderr, "heed: unknown command %q\nRun 'heed help' for a list of commands.\n", name)
			return exitUsage
		}
		return c.run(ctx, s, args[1:])
	}
}

// usage writes the top-level usage to w.
func usage(w io.Writer) {
	writeUsage(w, "heed", append(commands[:len(commands):len(commands)],
		command{"help", "print this help, or a command's help (heed help COMMAND)", nil}))
}

// helpMain is "heed help [COMMAND]".
func helpMain(ctx context.Context, s streams, args []string) int {
	switch {
	case len(args) == 0:
		usage(s.stdout)
		return exitOK
	case len(args) > 1:
		fmt.Fprintf(s.stderr, "heed help: too many arguments: %s\n", strings.Join(args, " "))
		return exitUsage
	}
	c, ok := lookup(args[0])
	if !ok {
		fmt.Fprintf(s.stderr, "heed help: unknown command %q\nRun 'heed help' for a list of commands.\n", args[0])
		return exitUsage
	}
	return c.run(ctx, s, []string{"--help"})
}

// versionMain is "heed version".
func versionMain(_ context.Context, s streams, args []string) int {
	fs := newFlagSet("version")
	if code, done := parseNoArgs(fs, args, s, helpDoc{file: "version"}); done {
		return code
	}
	version, goVersion := "(devel)", "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		goVersion = bi.GoVersion
		if v := bi.Main.Version; v != "" {
			version = v
		}
	}
	fmt.Fprintf(s.stdout, "heed %s (%s), job store schema %d\n", version, goVersion, sqlitestore.SchemaVersion())
	return exitOK
}

// dispatch runs the subcommand of heed NAME (jobs, jobs dead) that args
// name, or prints NAME's usage: for "help" or --help on stdout, with no
// argument on stderr (exit 2). "help CMD" prints CMD's help.
func dispatch(ctx context.Context, s streams, args []string, name string, cmds []command) int {
	file := strings.ReplaceAll(name, " ", "-")
	if len(args) == 0 {
		writeUsage(s.stderr, file, cmds)
		return exitUsage
	}
	sub, help := args[0], false
	switch sub {
	case "help", "-h", "-help", "--help":
		if len(args) == 1 {
			writeUsage(s.stdout, file, cmds)
			return exitOK
		}
		sub, help = args[1], true
	}
	for _, c := range cmds {
		if c.name == sub && help {
			return c.run(ctx, s, []string{"--help"})
		} else if c.name == sub {
			return c.run(ctx, s, args[1:])
		}
	}
	fmt.Fprintf(s.stderr, "heed %s: unknown command %q\nRun 'heed %s --help' for a list of commands.\n", name, sub, name)
	return exitUsage
}
