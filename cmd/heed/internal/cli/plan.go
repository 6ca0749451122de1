package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"

	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/cmd/heed/internal/planreport"
)

var planDoc = helpDoc{
	file: "plan",
	groups: []flagGroup{policyGroup, {"Plan flags", []string{"attempt-time", "json"}},
		{"Call chain flags", []string{"layers", "retries-per-layer", "rate", "capacity", "latency", "budget-ratio"}}},
}

// Limits that keep a plan printable.
const (
	maxPlanAttempts = 1000
	maxLayers       = 64
	maxRetries      = 1000
)

// planMain is "heed plan".
func planMain(ctx context.Context, s streams, args []string) int {
	if len(args) > 0 && args[0] == "deadline" {
		return planDeadlineMain(ctx, s, args[1:])
	}
	fs := newFlagSet("plan")
	pf := addPolicyFlags(fs, false)
	attemptTime := durationFlag(fs, "attempt-time", 0, "how long each attempt takes, for ENDS BY and FITS (default: --timeout, or --min-attempt-time, or 10ms)")
	asJSON := fs.Bool("json", false, "print JSON instead of tables (fields below)")
	layers := fs.Int("layers", 1, "`N` services in the call chain that each retry their call to the next")
	retries := fs.Int("retries-per-layer", -1, "retries `R` each layer makes per call (default --attempts − 1)")
	rate := fs.Float64("rate", 0, "user requests per second at the top, `RPS` (default: loads not shown)")
	capacity := fs.Float64("capacity", 0, "requests per second, `RPS`, that the bottom service can serve (default: not compared)")
	latency := durationFlag(fs, "latency", 0, "the bottom service's latency `D` with no queue: with --capacity, the overload limit they lead to (default: not shown)")
	ratio := fs.Float64("budget-ratio", budget.DefaultRatio, "retry budget `F`: retries allowed per request, 0 to 1000")
	if code, done := parseFlags(fs, args, s, planDoc); done {
		return code
	}
	if fs.NArg() > 0 {
		if fs.Arg(0) == "deadline" {
			return usageError(s, "plan", errors.New(`"deadline" must come right after "plan": heed plan deadline [FLAGS] [FILE]`))
		}
		return usageError(s, "plan", fmt.Errorf("unexpected argument %q (plan takes only flags)", fs.Arg(0)))
	}
	p, err := pf.policy()
	if err == nil && p.Attempts > maxPlanAttempts {
		err = flagError("attempts", "%d, plan prints at most %d", p.Attempts, maxPlanAttempts)
	}
	if err != nil {
		return usageError(s, "plan", err)
	}
	at := *attemptTime
	switch {
	case isSet(fs, "attempt-time"):
	case p.AttemptTimeout > 0:
		at = p.AttemptTimeout // the worst case
	default:
		at = p.MinAttempt() // --min-attempt-time, or 10ms
	}
	if !isSet(fs, "retries-per-layer") {
		*retries = p.Attempts - 1
	}
	switch {
	case at < 0:
		err = flagError("attempt-time", "%v, must not be negative", at)
	case *layers < 1 || *layers > maxLayers:
		err = flagError("layers", "%d, must be from 1 to %d", *layers, maxLayers)
	case *retries < 0 || *retries > maxRetries:
		err = flagError("retries-per-layer", "%d, must be from 0 to %d", *retries, maxRetries)
	case !finite(*rate) || *rate < 0:
		err = flagError("rate", "%v, must be a number not below 0", *rate)
	case !finite(*capacity) || *capacity < 0:
		err = flagError("capacity", "%v, must be a number not below 0", *capacity)
	case *latency < 0:
		err = flagError("latency", "%v, must not be negative", *latency)
	case !finite(*ratio) || *ratio < 0 || (budget.Config{Ratio: *ratio}).Validate() != nil:
		err = flagError("budget-ratio", "%v, must be from 0 to 1000", *ratio)
	}
	if err != nil {
		return usageError(s, "plan", err)
	}

	pl := planreport.Plan{Policy: p, AttemptTime: at}
	if anySet(fs, "layers", "retries-per-layer", "rate", "capacity", "latency", "budget-ratio") {
		pl.Chain = &planreport.Chain{Layers: *layers, Retries: *retries, Rate: *rate, Capacity: *capacity, Ratio: *ratio, Latency: *latency}
	}
	if *asJSON {
		if err := pl.WriteJSON(s.stdout); err != nil {
			fmt.Fprintf(s.stderr, "heed plan: %v\n", err)
			return exitFailure
		}
		return exitOK
	}
	pl.Write(s.stdout)
	return exitOK
}

// finite reports whether f is a number, neither NaN nor infinite.
func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

func anySet(fs *flag.FlagSet, names ...string) bool {
	for _, n := range names {
		if isSet(fs, n) {
			return true
		}
	}
	return false
}
