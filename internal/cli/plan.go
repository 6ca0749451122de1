package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/heed-go/heed/internal/textfmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/retry"
)

var planDoc = helpDoc{
	file: "plan",
	groups: []flagGroup{policyGroup, {"Plan flags", []string{"attempt-time", "json"}},
		{"Call chain flags", []string{"layers", "retries-per-layer", "rate", "capacity", "budget-ratio"}}},
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
	pf := addPolicyFlags(fs)
	attemptTime := durationFlag(fs, "attempt-time", 0, "how long each attempt takes, for ENDS BY and FITS (default: --timeout, or --min-attempt-time, or 10ms)")
	asJSON := fs.Bool("json", false, "print JSON instead of tables (fields below)")
	layers := fs.Int("layers", 1, "`N` services in the call chain that each retry their call to the next")
	retries := fs.Int("retries-per-layer", -1, "retries `R` each layer makes per call (default --attempts − 1)")
	rate := fs.Float64("rate", 0, "user requests per second at the top, `RPS` (default: loads not shown)")
	capacity := fs.Float64("capacity", 0, "requests per second, `RPS`, that the bottom service can serve (default: not compared)")
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
	case !finite(*ratio) || *ratio < 0 || *ratio > budget.MaxRatio:
		err = flagError("budget-ratio", "%v, must be from 0 to %v", *ratio, budget.MaxRatio)
	}
	if err != nil {
		return usageError(s, "plan", err)
	}

	pl := plan{policy: p, attemptTime: at, rows: p.Schedule(at)}
	if anySet(fs, "layers", "retries-per-layer", "rate", "capacity", "budget-ratio") {
		pl.chain = newChain(*layers, *retries, *rate, *capacity, *ratio)
	}
	if *asJSON {
		enc := json.NewEncoder(s.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(pl.json()); err != nil {
			fmt.Fprintf(s.stderr, "heed plan: %v\n", err)
			return exitFailure
		}
		return exitOK
	}
	pl.print(s.stdout)
	return exitOK
}

// plan is what heed plan prints.
type plan struct {
	policy      retry.Policy
	attemptTime time.Duration
	rows        []retry.PlannedAttempt
	chain       *chain // nil without call chain flags
}

// chain is the load a total outage of the bottom service puts on it.
type chain struct {
	layers, retries int
	rate, capacity  float64 // 0 when not given
	ratio, floor    float64
	retry.Amplification
}

func newChain(layers, retries int, rate, capacity, ratio float64) *chain {
	floor := budget.DefaultMinPerSecond
	return &chain{layers: layers, retries: retries, rate: rate, capacity: capacity, ratio: ratio, floor: floor,
		Amplification: retry.ChainAmplification(layers, retries, rate, ratio, floor)}
}

func (pl *plan) print(w io.Writer) {
	fmt.Fprintf(w, "policy: %s\n\n", pl.policy.Describe())
	deadline := pl.policy.TimeBudget
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "ATTEMPT\tDELAY\tJITTER RANGE\tTOTAL WAIT\tENDS BY")
	if deadline > 0 {
		fmt.Fprintf(tw, "\tFITS IN %v", deadline)
	}
	fmt.Fprintln(tw)
	count := map[retry.Fit]int{}
	for _, r := range pl.rows {
		nominal := "-"
		if r.HasDelay {
			nominal = textfmt.Dur(r.Delay)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s", r.Attempt, nominal, textfmt.Range(r.DelayMin, r.DelayMax), textfmt.Range(r.WaitMin, r.WaitMax), textfmt.Dur(r.EndMax))
		if deadline > 0 {
			fmt.Fprintf(tw, "\t%s", r.Fits)
			count[r.Fits]++
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()

	last := pl.rows[len(pl.rows)-1]
	fmt.Fprintf(w, "\nENDS BY is the worst case: the longest waits, each attempt taking %v (--attempt-time).\n", pl.attemptTime)
	n := len(pl.rows)
	y, m, no := count[retry.FitYes], count[retry.FitMaybe], count[retry.FitNo]
	switch {
	case deadline == 0 && n == 1:
		fmt.Fprintf(w, "At worst the only attempt ends within %v.\n", textfmt.Dur(last.EndMax))
	case deadline == 0:
		fmt.Fprintf(w, "At worst all %d attempts end within %v, %v of it waiting.\n", n, textfmt.Dur(last.EndMax), textfmt.Dur(last.WaitMax))
	case no == n:
		fmt.Fprintf(w, "No attempt fits in the %v deadline: the first is cut short by it, and no retry starts.\n", deadline)
	case n == 1 && y == 1:
		fmt.Fprintf(w, "The only attempt fits in the %v deadline.\n", deadline)
	case y == n:
		fmt.Fprintf(w, "All %d attempts fit in the %v deadline.\n", n, deadline)
	default:
		var parts []string
		if y > 0 {
			parts = append(parts, attemptSpan(1, y, "always fits", "always fit"))
		}
		if m > 0 {
			parts = append(parts, attemptSpan(y+1, y+m, "fits only after short jittered waits", "fit only after short jittered waits"))
		}
		if no > 0 {
			parts = append(parts, attemptSpan(n-no+1, n, "never starts", "never start"))
		}
		limits := "may limit"
		if no > 0 {
			limits = "limits"
		}
		fmt.Fprintf(w, "In the %v deadline, %s: the deadline, not --attempts, %s this policy.\n", deadline, strings.Join(parts, "; "), limits)
	}

	if pl.chain != nil {
		pl.chain.print(w)
	}
}

// attemptSpan reads "attempt 3 " + one or "attempts 3–5 " + many.
func attemptSpan(from, to int, one, many string) string {
	if from == to {
		return fmt.Sprintf("attempt %d %s", from, one)
	}
	return fmt.Sprintf("attempts %d–%d %s", from, to, many)
}

func (c *chain) print(w io.Writer) {
	fmt.Fprintf(w, "\ncall chain: %d layer", c.layers)
	if c.layers != 1 {
		fmt.Fprint(w, "s")
	}
	fmt.Fprintf(w, ", each making up to %d attempts per call (%d retries)", c.retries+1, c.retries)
	if c.rate > 0 {
		fmt.Fprintf(w, "; %s requests/s", textfmt.Num(c.rate))
	}
	if c.capacity > 0 {
		fmt.Fprintf(w, "; bottom capacity %s requests/s", textfmt.Num(c.capacity))
	}
	fmt.Fprint(w, "\nduring a total outage of the bottom service:\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "RETRIES BY\tATTEMPTS PER ACTION")
	if c.rate > 0 {
		fmt.Fprint(tw, "\tLOAD ON BOTTOM")
		if c.capacity > 0 {
			fmt.Fprint(tw, "\tVS CAPACITY")
		}
	}
	fmt.Fprintln(tw)
	per := strconv.Itoa(c.retries + 1)
	rows := []struct {
		name     string
		attempts float64
	}{
		{fmt.Sprintf("every layer (%s^%d)", per, c.layers), c.EveryLayer},
		{fmt.Sprintf("one owner (%s)", per), c.OneOwner},
		{fmt.Sprintf("one owner, %s%% budget", textfmt.Num(c.ratio*100)), c.Budgeted},
	}
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s", r.name, textfmt.Num(r.attempts))
		if c.rate > 0 {
			fmt.Fprintf(tw, "\t%s/s", textfmt.Num(c.rate*r.attempts))
			if c.capacity > 0 {
				fmt.Fprintf(tw, "\t%s×", textfmt.Num(c.rate*r.attempts/c.capacity))
			}
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nA retry budget lets retries add at most %s%% to the requests (or a floor of %s retry/s per client, when that is more), however many attempts each call may make.\n",
		textfmt.Num(c.ratio*100), textfmt.Num(c.floor))
}

// JSON output; the field names are documented in planDoc and stable.

type planJSON struct {
	Policy   policyJSON `json:"policy"`
	Schedule []rowJSON  `json:"schedule"`
	Chain    *chainJSON `json:"chain,omitempty"`
}

type policyJSON struct {
	Attempts      int     `json:"attempts"`
	Backoff       string  `json:"backoff"`
	BaseMs        float64 `json:"base_ms"`
	CapMs         float64 `json:"cap_ms"`
	Multiplier    float64 `json:"multiplier"`
	Jitter        string  `json:"jitter"`
	TimeoutMs     float64 `json:"timeout_ms"`
	DeadlineMs    float64 `json:"deadline_ms"`
	AttemptTimeMs float64 `json:"attempt_time_ms"`
}

type rowJSON struct {
	Attempt   int      `json:"attempt"`
	DelayMs   *float64 `json:"delay_ms,omitempty"`
	DelayLoMs float64  `json:"delay_lo_ms"`
	DelayHiMs float64  `json:"delay_hi_ms"`
	WaitLoMs  float64  `json:"wait_lo_ms"`
	WaitHiMs  float64  `json:"wait_hi_ms"`
	EndLoMs   float64  `json:"end_lo_ms"`
	EndHiMs   float64  `json:"end_hi_ms"`
	Fits      string   `json:"fits,omitempty"`
}

type chainJSON struct {
	Layers          int      `json:"layers"`
	RetriesPerLayer int      `json:"retries_per_layer"`
	Rate            *float64 `json:"rate,omitempty"`
	Capacity        *float64 `json:"capacity,omitempty"`
	BudgetRatio     float64  `json:"budget_ratio"`
	BudgetFloor     float64  `json:"budget_floor"`
	EveryLayer      loadJSON `json:"every_layer"`
	SingleOwner     loadJSON `json:"single_owner"`
	Budget          loadJSON `json:"budget"`
}

type loadJSON struct {
	AttemptsPerAction float64  `json:"attempts_per_action"`
	RPS               *float64 `json:"rps,omitempty"`
	CapacityRatio     *float64 `json:"capacity_ratio,omitempty"`
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func (pl *plan) json() planJSON {
	s := pl.policy.Backoff
	m := s.Multiplier
	if m == 0 {
		m = backoff.DefaultMultiplier
	}
	out := planJSON{
		Policy: policyJSON{
			Attempts:      pl.policy.Attempts,
			Backoff:       s.Kind.String(),
			BaseMs:        ms(s.WithDefaults().Base),
			CapMs:         ms(s.WithDefaults().Cap),
			Multiplier:    m,
			Jitter:        s.Jitter.String(),
			TimeoutMs:     ms(pl.policy.AttemptTimeout),
			DeadlineMs:    ms(pl.policy.TimeBudget),
			AttemptTimeMs: ms(pl.attemptTime),
		},
		Schedule: make([]rowJSON, len(pl.rows)),
	}
	for i, r := range pl.rows {
		j := rowJSON{
			Attempt:   r.Attempt,
			DelayLoMs: ms(r.DelayMin), DelayHiMs: ms(r.DelayMax),
			WaitLoMs: ms(r.WaitMin), WaitHiMs: ms(r.WaitMax),
			EndLoMs: ms(r.EndMin), EndHiMs: ms(r.EndMax),
			Fits: r.Fits.String(),
		}
		if r.HasDelay {
			d := ms(r.Delay)
			j.DelayMs = &d
		}
		out.Schedule[i] = j
	}
	if c := pl.chain; c != nil {
		cj := &chainJSON{
			Layers: c.layers, RetriesPerLayer: c.retries,
			BudgetRatio: c.ratio, BudgetFloor: c.floor,
		}
		if c.rate > 0 {
			cj.Rate = &c.rate
		}
		if c.capacity > 0 {
			cj.Capacity = &c.capacity
		}
		conv := func(attempts float64) loadJSON {
			lj := loadJSON{AttemptsPerAction: attempts}
			if c.rate > 0 {
				rps := c.rate * attempts
				lj.RPS = &rps
				if c.capacity > 0 {
					ratio := rps / c.capacity
					lj.CapacityRatio = &ratio
				}
			}
			return lj
		}
		cj.EveryLayer, cj.SingleOwner, cj.Budget = conv(c.EveryLayer), conv(c.OneOwner), conv(c.Budgeted)
		out.Chain = cj
	}
	return out
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
