package cli

import (
	"embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/internal/fielderr"
	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/retry"
)

// newFlagSet returns an empty flag set for subcommand name that reports
// nothing itself: [parseFlags] prints errors and help.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("heed "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// helpDoc is a subcommand's --help text: the file help/FILE.txt, with its
// flags by group where the file has its line {{flags}}. Flags in no group
// are listed last, so none is ever left out.
type helpDoc struct {
	file   string
	groups []flagGroup
}

//go:embed help/*.txt
var helpFiles embed.FS

// helpText returns help/FILE.txt with the lists it names filled in.
func helpText(file string) string {
	b, err := helpFiles.ReadFile("help/" + file + ".txt")
	if err != nil {
		panic(err) // a missing file is a bug the help tests catch
	}
	t := string(b)
	for mark, list := range map[string]func() string{"{{kinds}}": jobsKindsHelp, "{{scenarios}}": simScenariosHelp} {
		if strings.Contains(t, mark) {
			t = strings.ReplaceAll(t, mark, list())
		}
	}
	return t
}

// writeUsage writes the usage of a command that has subcommands: the file
// help/FILE.txt with the table of cmds at its line {{commands}}.
func writeUsage(w io.Writer, file string, cmds []command) {
	head, foot, _ := strings.Cut(helpText(file), "{{commands}}\n")
	fmt.Fprint(w, head)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range cmds {
		fmt.Fprintf(tw, "  %s\t%s\n", c.name, c.summary)
	}
	tw.Flush()
	fmt.Fprint(w, foot)
}

type flagGroup struct {
	title string
	names []string
}

// parseFlags parses args into fs. When it is done (--help, or an error) it
// has printed what is needed and returns the exit code and true: usage on
// stdout and 0 for --help, the error on stderr and 2 for a bad flag.
func parseFlags(fs *flag.FlagSet, args []string, s streams, d helpDoc) (code int, done bool) {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return 0, false
	case errors.Is(err, flag.ErrHelp):
		printHelp(s.stdout, fs, d)
		return exitOK, true
	}
	return usageError(s, strings.TrimPrefix(fs.Name(), "heed "), asTyped(err, args)), true
}

// asTyped rewrites the flag package's "-name" in err as the user typed it
// in args ("-m", "--max-time"), or else as heed's help spells it: "--name",
// and "-n" for a one-letter flag.
func asTyped(err error, args []string) error {
	msg := err.Error()
	for _, prefix := range []string{"not defined: -", "needs an argument: -", "for flag -", "for -"} {
		i := strings.Index(msg, prefix)
		if i < 0 {
			continue
		}
		j := i + len(prefix)
		end := j + strings.IndexAny(msg[j:]+" ", " :")
		name := msg[j:end]
		typed := "--" + name
		if len(name) == 1 {
			typed = "-" + name
		}
		for _, a := range args {
			if a == "--" {
				break
			}
			if n, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "="); n == name && strings.HasPrefix(a, "-") {
				typed, _, _ = strings.Cut(a, "=")
				break
			}
		}
		return errors.New(msg[:j-1] + typed + msg[end:])
	}
	return err
}

// usageError reports err for subcommand name on stderr and returns
// exitUsage.
func usageError(s streams, name string, err error) int {
	fmt.Fprintf(s.stderr, "heed %s: %v\nRun 'heed %s --help' for usage.\n", name, err, name)
	return exitUsage
}

// isSet reports whether the flag name was given on the command line.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			set = true
		}
	})
	return set
}

func printHelp(w io.Writer, fs *flag.FlagSet, d helpDoc) {
	head, foot, _ := strings.Cut(helpText(d.file), "{{flags}}\n")
	fmt.Fprint(w, head)
	listed := map[string]bool{}
	groups := d.groups
	var rest []string
	fs.VisitAll(func(f *flag.Flag) {
		found := false
		for _, g := range groups {
			for _, n := range g.names {
				found = found || n == f.Name
			}
		}
		if !found {
			rest = append(rest, f.Name)
		}
	})
	if len(rest) > 0 {
		groups = append(groups[:len(groups):len(groups)], flagGroup{"Other flags", rest})
	}
	for _, g := range groups {
		fmt.Fprintf(w, "\n%s:\n", g.title)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, n := range g.names {
			f := fs.Lookup(n)
			if f == nil || listed[n] {
				continue
			}
			listed[n] = true
			fmt.Fprintf(tw, "  %s\t%s\n", flagSynopsis(f), flagUsage(f))
		}
		tw.Flush()
	}
	if foot != "" {
		fmt.Fprint(w, "\n", foot)
	}
}

// flagSynopsis returns "--name ARG" for f; ARG comes from a `quoted` word
// in the flag's usage, else from its type.
func flagSynopsis(f *flag.Flag) string {
	arg, _ := flag.UnquoteUsage(f)
	switch arg {
	case "int":
		arg = "N"
	case "duration":
		arg = "DUR"
	case "float":
		arg = "F"
	case "string", "value":
		arg = "VALUE"
		if _, ok := f.Value.(durationValue); ok {
			arg = "DUR"
		}
	}
	dash := "--"
	if len(f.Name) == 1 {
		dash = "-" // curl-style one-letter flags, such as heed get's -X
	}
	if arg == "" {
		return dash + f.Name
	}
	return dash + f.Name + " " + arg
}

// flagUsage returns f's usage with its default appended, unless the usage
// already says its default or the default is a zero value.
func flagUsage(f *flag.Flag) string {
	_, u := flag.UnquoteUsage(f)
	switch f.DefValue {
	case "", "0", "0s", "false":
		return u
	}
	if strings.Contains(u, "(default") {
		return u
	}
	return fmt.Sprintf("%s (default %s)", u, f.DefValue)
}

// policyFlags are the retry policy flags of run, get and plan, or, with
// jobs, of heed jobs work, with the job defaults of package queue and
// --budget for --deadline.
type policyFlags struct {
	fs         *flag.FlagSet
	jobs       bool
	attempts   int
	kind       backoff.Kind
	base       time.Duration
	cap        time.Duration
	multiplier float64
	jitter     backoff.Jitter
	timeout    time.Duration
	deadline   time.Duration // --deadline, or --budget of a job
	minAttempt time.Duration
}

// policyGroup lists the policy flags for the help text.
var policyGroup = flagGroup{"Policy flags", []string{
	"attempts", "backoff", "base", "cap", "multiplier", "jitter", "timeout", "deadline", "min-attempt-time",
}}

// defaultBackoff is the zero schedule with its defaults filled in, for the
// flags' defaults.
var defaultBackoff = backoff.Schedule{}.WithDefaults()

// workerDefaults is the zero worker config with its defaults filled in, for
// the job and worker flags' defaults.
var workerDefaults = queue.WorkerConfig{}.WithDefaults()

// addPolicyFlags registers the policy flags on fs, those of a job's with
// jobs. Call policy after fs.Parse to get the retry.Policy they describe.
func addPolicyFlags(fs *flag.FlagSet, jobs bool) *policyFlags {
	pf := &policyFlags{fs: fs, jobs: jobs}
	fs.TextVar(&pf.kind, "backoff", pf.kind, "`KIND` of delay growth: exponential, constant, linear or immediate")
	fs.Float64Var(&pf.multiplier, "multiplier", defaultBackoff.Multiplier, "growth factor of exponential backoff, at least 1")
	if jobs {
		fs.IntVar(&pf.attempts, "attempts", workerDefaults.Policy.Attempts, "attempts per job, the first included; -1 for no limit (a job's own --attempts wins)")
		durationVar(fs, &pf.base, "base", workerDefaults.Policy.Backoff.Base, "first delay between attempts")
		durationVar(fs, &pf.cap, "cap", workerDefaults.Policy.Backoff.Cap, "largest delay between attempts")
		fs.TextVar(&pf.jitter, "jitter", pf.jitter, "`JITTER` of each delay: full (0 to delay), none, equal or decorrelated")
		durationVar(fs, &pf.deadline, "budget", workerDefaults.Policy.TimeBudget, "time budget of a job from its first attempt (a job's own --budget wins)")
		durationVar(fs, &pf.timeout, "timeout", workerDefaults.Policy.AttemptTimeout, "time limit of each attempt (a job's own --timeout wins)")
		durationVar(fs, &pf.minAttempt, "min-attempt-time", 0, "a retry is scheduled only if its delay plus this still fits in the time budget (default: the whole --timeout)")
		return pf
	}
	fs.IntVar(&pf.attempts, "attempts", retry.DefaultAttempts, "attempts in total, the first one included")
	durationVar(fs, &pf.base, "base", defaultBackoff.Base, "first delay; with decorrelated jitter, the smallest")
	durationVar(fs, &pf.cap, "cap", defaultBackoff.Cap, "largest delay (default 5s, or --base if larger)")
	fs.TextVar(&pf.jitter, "jitter", pf.jitter, "`JITTER` of each delay: full (0 to delay), none, equal (delay/2 to delay) or decorrelated")
	durationVar(fs, &pf.timeout, "timeout", 0, "time limit of each attempt; one that runs out is retried (default: none)")
	durationVar(fs, &pf.deadline, "deadline", 0, "time limit of the whole call, from the start of the first attempt (default: none)")
	durationVar(fs, &pf.minAttempt, "min-attempt-time", 0, "a retry starts only if its delay plus this still fits in --deadline (default: --timeout, a whole attempt; 10ms without one)")
	return pf
}

// flagError is a bad flag value found after parsing.
func flagError(name, format string, args ...any) error {
	return fmt.Errorf("invalid --%s: %s", name, fmt.Sprintf(format, args...))
}

// policy returns the retry.Policy the flags describe, or an error naming
// the first bad flag.
func (pf *policyFlags) policy() (retry.Policy, error) {
	s := backoff.Schedule{Kind: pf.kind, Base: pf.base, Multiplier: pf.multiplier, Jitter: pf.jitter}
	if pf.jobs || isSet(pf.fs, "cap") {
		s.Cap = pf.cap // else the schedule's default: 5s, or Base if larger
	}
	if err := pf.checkSchedule(s); err != nil {
		return retry.Policy{}, err
	}
	if err := pf.checkTimes(); err != nil {
		return retry.Policy{}, err
	}
	if err := pf.scheduleError(s.Validate()); err != nil {
		return retry.Policy{}, err
	}
	p := retry.Policy{Attempts: pf.attempts, Backoff: s, AttemptTimeout: pf.timeout, TimeBudget: pf.deadline, MinAttemptTime: pf.minAttempt}
	if err := p.Validate(); err != nil {
		return retry.Policy{}, err
	}
	return p, nil
}

// checkSchedule checks --attempts and the backoff flags of schedule s.
func (pf *policyFlags) checkSchedule(s backoff.Schedule) error {
	switch {
	case pf.jobs && (pf.attempts < retry.Unlimited || pf.attempts == 0):
		return flagError("attempts", "%d, must be at least 1 (or -1 for no limit)", pf.attempts)
	case !pf.jobs && pf.attempts < 1:
		return flagError("attempts", "%d, must be at least 1", pf.attempts)
	case pf.base <= 0 && pf.jobs:
		return flagError("base", "%v, must be positive", pf.base)
	case pf.base <= 0:
		// A zero Base would mean the default (100ms) to the backoff
		// package, which is not what "--base 0" says.
		return flagError("base", "%v, must be positive (--backoff immediate does not wait)", pf.base)
	case !pf.jobs && isSet(pf.fs, "cap") && pf.cap <= 0:
		return flagError("cap", "%v, must be positive", pf.cap)
	case s.Cap > 0 && s.Cap < pf.base || pf.jobs && s.Cap < pf.base:
		return flagError("cap", "%v is below --base %v", pf.cap, pf.base)
	case !finite(pf.multiplier) || pf.multiplier < 1:
		return flagError("multiplier", "%v, must be a number of at least 1", pf.multiplier)
	}
	return nil
}

// checkTimes checks the time limit flags.
func (pf *policyFlags) checkTimes() error {
	switch {
	case pf.jobs && pf.deadline <= 0:
		return flagError("budget", "%v, must be positive", pf.deadline)
	case pf.jobs && pf.timeout <= 0:
		return flagError("timeout", "%v, must be positive", pf.timeout)
	case pf.timeout < 0:
		return flagError("timeout", "%v, must not be negative", pf.timeout)
	case pf.deadline < 0:
		return flagError("deadline", "%v, must not be negative", pf.deadline)
	case pf.minAttempt < 0:
		return flagError("min-attempt-time", "%v, must not be negative", pf.minAttempt)
	}
	return nil
}

// scheduleError maps err, from the schedule's Validate, to its flag.
func (pf *policyFlags) scheduleError(err error) error {
	if err == nil {
		return nil
	}
	// Not reached for the checks above; map anything new to its flag.
	if fe, ok := fielderr.As(err); ok && !pf.jobs {
		name := map[string]string{"Kind": "backoff", "Jitter": "jitter", "Base": "base", "Cap": "cap", "Multiplier": "multiplier"}[fe.Field]
		if name != "" {
			return flagError(name, "%s", fe.Reason)
		}
	}
	return err
}

// describe is a job policy as heed jobs work's start line says it.
func (pf *policyFlags) describe(p retry.Policy) string {
	att := strconv.Itoa(p.Attempts)
	if p.Attempts == retry.Unlimited {
		att = "unlimited"
	}
	return fmt.Sprintf("%s attempts, %s backoff %v..%v (%s jitter), budget %v, attempt timeout %v",
		att, pf.kind, p.Backoff.Base, p.Backoff.Cap, pf.jitter, p.TimeBudget, p.AttemptTimeout)
}

// parseNoArgs is parseFlags for a subcommand that takes no arguments.
func parseNoArgs(fs *flag.FlagSet, args []string, s streams, d helpDoc) (code int, done bool) {
	if code, done := parseFlags(fs, args, s, d); done {
		return code, true
	}
	if fs.NArg() > 0 {
		return usageError(s, strings.TrimPrefix(fs.Name(), "heed "), fmt.Errorf("unexpected argument %q", fs.Arg(0))), true
	}
	return 0, false
}

// parseInterleaved parses args into fs, allowing flags after positional
// arguments (heed jobs enqueue fail '{}' --in 1m), and returns the
// positional arguments. Everything after "--" is positional. When it is
// done (--help, or an error) it has printed what is needed; see parseFlags.
func parseInterleaved(fs *flag.FlagSet, args []string, s streams, d helpDoc) (pos []string, code int, done bool) {
	for {
		if code, done := parseFlags(fs, args, s, d); done {
			return nil, code, true
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, 0, false
		}
		// flag stops at "--" (and consumes it) or at the first positional.
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), 0, false
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}
