package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/heed-go/heed/cmd/heed/internal/plan"
	"github.com/heed-go/heed/cmd/heed/internal/planfile"
	"github.com/heed-go/heed/deadline"
)

var planDeadlineDoc = helpDoc{
	file: "plan-deadline",
	groups: []flagGroup{
		{"Plan flags", []string{"deadline", "reserve", "step"}},
		{"Output flags", []string{"rate", "json"}},
	},
}

// planDeadlineMain is "heed plan deadline".
func planDeadlineMain(_ context.Context, s streams, args []string) int {
	const name = "plan deadline"
	fs := newFlagSet(name)
	dl := durationFlag(fs, "deadline", 0, "the request's deadline, set at the edge (required without FILE)")
	reserve := durationFlag(fs, "reserve", 0, "time kept back for the response and the network")
	var steps stepFlags
	fs.Var(&steps, "step", "one step, in order: `SPEC` as below; repeat for each step")
	rate := fs.Float64("rate", 0, "requests per second, `RPS`, to count the requests left waiting on a step that hangs")
	asJSON := fs.Bool("json", false, "print JSON instead of tables (fields below)")

	// Flags may come before and after FILE.
	pos, code, done := parseInterleaved(fs, args, s, planDeadlineDoc)
	switch {
	case done:
		return code
	case len(pos) > 1:
		return usageError(s, name, fmt.Errorf("unexpected argument %q (plan deadline takes at most one FILE)", pos[1]))
	}
	file := ""
	if len(pos) == 1 {
		file = pos[0]
	}
	var p deadline.Plan
	switch {
	case file != "" && len(steps) > 0:
		return usageError(s, name, errors.New("--step cannot be combined with a plan FILE"))
	case file != "":
		var err error
		if p, err = planfile.Read(file, s.stdin); err != nil {
			return usageError(s, name, err)
		}
	case len(steps) == 0:
		return usageError(s, name, errors.New("no plan: give --deadline and one --step per step, or a plan FILE"))
	default:
		p.Steps = steps
	}
	if isSet(fs, "deadline") || file == "" {
		p.Deadline = *dl
	}
	if isSet(fs, "reserve") {
		p.Reserve = *reserve
	}
	switch {
	case !finite(*rate) || *rate < 0:
		return usageError(s, name, flagError("rate", "%v, must be a number not below 0", *rate))
	case file == "" && !isSet(fs, "deadline"):
		return usageError(s, name, errors.New("missing --deadline: the request's deadline, e.g. --deadline 2s"))
	}
	r, err := plan.Check(p)
	if err != nil {
		err = planfile.InputError(err, file, isSet(fs, "deadline"), isSet(fs, "reserve"))
		return usageError(s, name, err)
	}

	if *asJSON {
		if err := planfile.WriteReportJSON(s.stdout, r, *rate); err != nil {
			fmt.Fprintf(s.stderr, "heed %s: %v\n", name, err)
			return exitUsage
		}
	} else {
		planfile.WriteReport(s.stdout, r, *rate)
	}
	if !r.OK() {
		return exitFailure
	}
	return exitOK
}

// stepFlags is the flag.Value of --step: each use adds one step.
type stepFlags []deadline.PlanStep

func (v *stepFlags) String() string { return "" }

func (v *stepFlags) Set(spec string) error {
	st, err := planfile.ParseStep(spec)
	if err != nil {
		return err
	}
	if len(*v) >= planfile.MaxSteps {
		return fmt.Errorf("more than %d steps", planfile.MaxSteps)
	}
	*v = append(*v, st)
	return nil
}
