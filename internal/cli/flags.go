package cli

import (
	"embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/heed-go/heed/backoff"
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
	return usageError(s, strings.TrimPrefix(fs.Name(), "heed "), dashDash(err)), true
}

// dashDash rewrites the flag package's "-name" in err as "--name", the
// spelling heed's help uses.
func dashDash(err error) error {
	msg := err.Error()
	for _, prefix := range []string{"not defined: -", "needs an argument: -", "for flag -", "for -"} {
		if i := strings.Index(msg, prefix); i >= 0 {
			j := i + len(prefix)
			return errors.New(msg[:j] + "-" + msg[j:])
		}
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

// policyFlags are the retry policy flags that run and plan share.
type policyFlags struct {
	fs         *flag.FlagSet
	attempts   int
	kind       backoff.Kind
	base       time.Duration
	cap        time.Duration
	multiplier float64
	jitter     backoff.Jitter
	timeout    time.Duration
	deadline   time.Duration
	minAttempt time.Duration
}

// policyGroup lists the policy flags for the help text.
var policyGroup = flagGroup{"Policy flags", []string{
	"attempts", "backoff", "base", "cap", "multiplier", "jitter", "timeout", "deadline", "min-attempt-time",
}}

// addPolicyFlags registers the policy flags on fs. Call policy after
// fs.Parse to get the retry.Policy they describe.
func addPolicyFlags(fs *flag.FlagSet) *policyFlags {
	pf := &policyFlags{fs: fs}
	fs.IntVar(&pf.attempts, "attempts", retry.DefaultAttempts, "attempts in total, the first one included")
	fs.TextVar(&pf.kind, "backoff", pf.kind, "`KIND` of delay growth: exponential, constant, linear or immediate")
	durationVar(fs, &pf.base, "base", backoff.DefaultBase, "first delay; with decorrelated jitter, the smallest")
	durationVar(fs, &pf.cap, "cap", backoff.DefaultCap, "largest delay (default 5s, or --base if larger)")
	fs.Float64Var(&pf.multiplier, "multiplier", backoff.DefaultMultiplier, "growth factor of exponential backoff, at least 1")
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
	s := backoff.Schedule{
		Kind:       pf.kind,
		Base:       pf.base,
		Multiplier: pf.multiplier,
		Jitter:     pf.jitter,
	}
	if isSet(pf.fs, "cap") {
		s.Cap = pf.cap // else the schedule's default: 5s, or Base if larger
	}
	switch {
	case pf.attempts < 1:
		return retry.Policy{}, flagError("attempts", "%d, must be at least 1", pf.attempts)
	case pf.base <= 0:
		// A zero Base would mean the default (100ms) to the backoff
		// package, which is not what "--base 0" says.
		return retry.Policy{}, flagError("base", "%v, must be positive (--backoff immediate does not wait)", pf.base)
	case isSet(pf.fs, "cap") && pf.cap <= 0:
		return retry.Policy{}, flagError("cap", "%v, must be positive", pf.cap)
	case s.Cap > 0 && s.Cap < pf.base:
		return retry.Policy{}, flagError("cap", "%v is below --base %v", pf.cap, pf.base)
	case math.IsNaN(pf.multiplier) || math.IsInf(pf.multiplier, 0) || pf.multiplier < 1:
		return retry.Policy{}, flagError("multiplier", "%v, must be a number of at least 1", pf.multiplier)
	case pf.timeout < 0:
		return retry.Policy{}, flagError("timeout", "%v, must not be negative", pf.timeout)
	case pf.deadline < 0:
		return retry.Policy{}, flagError("deadline", "%v, must not be negative", pf.deadline)
	case pf.minAttempt < 0:
		return retry.Policy{}, flagError("min-attempt-time", "%v, must not be negative", pf.minAttempt)
	}
	if err := s.Validate(); err != nil {
		// Not reached for the cases above; map anything new to its flag.
		var ie *backoff.InvalidError
		if errors.As(err, &ie) {
			name := map[string]string{"Kind": "backoff", "Jitter": "jitter", "Base": "base", "Cap": "cap", "Multiplier": "multiplier"}[ie.Field]
			if name != "" {
				return retry.Policy{}, flagError(name, "%s", ie.Reason)
			}
		}
		return retry.Policy{}, err
	}
	p := retry.Policy{
		Attempts:       pf.attempts,
		Backoff:        s,
		AttemptTimeout: pf.timeout,
		TimeBudget:     pf.deadline,
		MinAttemptTime: pf.minAttempt,
	}
	if err := p.Validate(); err != nil {
		return retry.Policy{}, err
	}
	return p, nil
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
