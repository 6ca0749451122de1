package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/retry"
)

// heed runs Main in-process and returns its exit code and output.
func heed(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = Main(context.Background(), args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestMainDispatch(t *testing.T) {
	tests := []struct {
		args   []string
		code   int
		stdout string // a substring of stdout, or "" for empty
		stderr string // a substring of stderr, or "" for empty
	}{
		{args: nil, code: 2, stderr: "Commands:"},
		{args: []string{"nope"}, code: 2, stderr: `unknown command "nope"`},
		{args: []string{"help"}, code: 0, stdout: "Commands:"},
		{args: []string{"--help"}, code: 0, stdout: "Commands:"},
		{args: []string{"-h"}, code: 0, stdout: "Commands:"},
		{args: []string{"help", "run"}, code: 0, stdout: "Usage: heed run"},
		{args: []string{"help", "plan"}, code: 0, stdout: "Usage: heed plan"},
		{args: []string{"help", "nope"}, code: 2, stderr: `unknown command "nope"`},
		{args: []string{"help", "run", "plan"}, code: 2, stderr: "too many arguments"},
		{args: []string{"version"}, code: 0, stdout: "heed "},
		{args: []string{"version", "x"}, code: 2, stderr: "unexpected argument"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, stdout, stderr := heed(t, "", tt.args...)
			if code != tt.code {
				t.Errorf("exit code %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, stdout, stderr)
			}
			check := func(name, got, want string) {
				if want == "" && got != "" {
					t.Errorf("%s not empty:\n%s", name, got)
				}
				if !strings.Contains(got, want) {
					t.Errorf("%s does not contain %q:\n%s", name, want, got)
				}
			}
			check("stdout", stdout, tt.stdout)
			check("stderr", stderr, tt.stderr)
		})
	}
}

func TestTopLevelUsageListsEveryCommand(t *testing.T) {
	_, stdout, _ := heed(t, "", "help")
	for _, c := range commands {
		if !strings.Contains(stdout, "  "+c.name+" ") {
			t.Errorf("usage does not list %q:\n%s", c.name, stdout)
		}
	}
}

// Every subcommand answers --help with its usage on stdout, exit 0, and
// documents its exit codes.
func TestSubcommandHelp(t *testing.T) {
	for _, c := range commands {
		for _, flag := range []string{"--help", "-h", "-help"} {
			t.Run(c.name+" "+flag, func(t *testing.T) {
				code, stdout, stderr := heed(t, "", c.name, flag)
				if code != 0 || stderr != "" {
					t.Fatalf("exit code %d, stderr %q", code, stderr)
				}
				for _, want := range []string{"Usage: heed " + c.name, "Exit codes"} {
					if !strings.Contains(stdout, want) {
						t.Errorf("help does not contain %q:\n%s", want, stdout)
					}
				}
			})
		}
	}
}

func TestPolicyFlagsInHelp(t *testing.T) {
	for _, name := range []string{"run", "plan"} {
		_, stdout, _ := heed(t, "", name, "--help")
		for _, f := range policyGroup.names {
			if !strings.Contains(stdout, "  --"+f+" ") {
				t.Errorf("heed %s --help does not list --%s", name, f)
			}
		}
		if strings.Contains(stdout, "Other flags") {
			t.Errorf("heed %s --help has flags in no group:\n%s", name, stdout)
		}
	}
}

// A bad flag exits 2 with a message on stderr that names it, and prints
// nothing on stdout.
func TestFlagErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"plan", "--attempts", "0"}, "--attempts"},
		{[]string{"plan", "--attempts", "x"}, "--attempts"},
		{[]string{"plan", "--attempts", "1001"}, "--attempts"},
		{[]string{"plan", "--base", "-1s"}, "--base"},
		{[]string{"plan", "--base", "0"}, "--base"},
		{[]string{"plan", "--base", "fast"}, "--base"},
		{[]string{"plan", "--cap", "10ms"}, "--cap"},
		{[]string{"plan", "--cap", "0"}, "--cap"},
		{[]string{"plan", "--multiplier", "0.5"}, "--multiplier"},
		{[]string{"plan", "--multiplier", "NaN"}, "--multiplier"},
		{[]string{"plan", "--backoff", "fast"}, "--backoff"},
		{[]string{"plan", "--jitter", "some"}, "--jitter"},
		{[]string{"plan", "--timeout", "-1s"}, "--timeout"},
		{[]string{"plan", "--deadline", "-1s"}, "--deadline"},
		{[]string{"plan", "--attempt-time", "-1s"}, "--attempt-time"},
		{[]string{"plan", "--layers", "0"}, "--layers"},
		{[]string{"plan", "--retries-per-layer", "-2"}, "--retries-per-layer"},
		{[]string{"plan", "--rate", "-1"}, "--rate"},
		{[]string{"plan", "--capacity", "Inf"}, "--capacity"},
		{[]string{"plan", "--budget-ratio", "2000"}, "--budget-ratio"},
		{[]string{"plan", "--nope"}, "--nope"},
		{[]string{"plan", "extra"}, "unexpected argument"},
		{[]string{"run"}, "no command"},
		{[]string{"run", "--"}, "no command"},
		{[]string{"run", "--attempts", "0", "--", "true"}, "--attempts"},
		{[]string{"run", "--cap", "1ms", "--", "true"}, "--cap"},
		{[]string{"run", "--timeout=abc", "--", "true"}, "--timeout"},
		{[]string{"run", "--permanent-codes", "300", "--", "true"}, "--permanent-codes"},
		{[]string{"run", "--permanent-codes", "0", "--", "true"}, "--permanent-codes"},
		{[]string{"run", "--transient-codes", "x", "--", "true"}, "--transient-codes"},
		{[]string{"run", "--transient-codes", "9-3", "--", "true"}, "--transient-codes"},
		{[]string{"run", "--permanent-codes", "3", "--transient-codes", "1-5", "--", "true"}, "--transient-codes"},
		{[]string{"run", "--nope", "--", "true"}, "--nope"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, stdout, stderr := heed(t, "", tt.args...)
			want := exitUsage
			if tt.args[0] == "run" {
				want = exitRunFailure // as GNU timeout: not to be mistaken for COMMAND's 2
			}
			if code != want {
				t.Errorf("exit code %d, want %d", code, want)
			}
			if stdout != "" {
				t.Errorf("stdout not empty: %q", stdout)
			}
			if !strings.Contains(stderr, tt.want) || !strings.Contains(stderr, "--help") {
				t.Errorf("stderr does not name %s and point to --help:\n%s", tt.want, stderr)
			}
		})
	}
}

func TestPolicyFromFlags(t *testing.T) {
	parse := func(args ...string) (retry.Policy, error) {
		fs := newFlagSet("test")
		pf := addPolicyFlags(fs, false)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return pf.policy()
	}
	p, err := parse()
	if err != nil {
		t.Fatal(err)
	}
	want := retry.Policy{Attempts: 3, Backoff: backoff.Schedule{Base: 100 * time.Millisecond, Multiplier: 2}}
	if p.Attempts != want.Attempts || p.Backoff != want.Backoff || p.AttemptTimeout != 0 || p.TimeBudget != 0 {
		t.Errorf("defaults: got %+v, want %+v", p, want)
	}

	p, err = parse("--attempts", "5", "--backoff", "linear", "--base", "20ms", "--cap", "1s",
		"--multiplier", "3", "--jitter", "equal", "--timeout", "2s", "--deadline", "9s")
	if err != nil {
		t.Fatal(err)
	}
	want = retry.Policy{
		Attempts: 5,
		Backoff: backoff.Schedule{Kind: backoff.Linear, Base: 20 * time.Millisecond, Cap: time.Second,
			Multiplier: 3, Jitter: backoff.EqualJitter},
		AttemptTimeout: 2 * time.Second,
		TimeBudget:     9 * time.Second,
	}
	if p.Attempts != want.Attempts || p.Backoff != want.Backoff || p.AttemptTimeout != want.AttemptTimeout || p.TimeBudget != want.TimeBudget {
		t.Errorf("got %+v, want %+v", p, want)
	}

	// Without --cap, a base above 5s is its own cap, as in the library.
	p, err = parse("--base", "10s")
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Backoff.Delay(5); got != 10*time.Second {
		t.Errorf("--base 10s: Delay(5) = %v, want 10s", got)
	}
}
