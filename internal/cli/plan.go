package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
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
	head: `Usage: heed plan [FLAGS]

Prints the schedule of a retry policy, one row per attempt: the delay before
it (nominal, and the range jitter draws it from), the total wait before it
(range), when it ends at worst, and, with --deadline, whether it fits.
Nothing runs and nothing is random: the ranges are exact bounds.

FITS applies the rule heed applies at run time, with every attempt taking
--attempt-time: a retry starts only if its delay plus --min-attempt-time (by
default the whole --timeout) still fits before the deadline; the first
attempt fits when it ends in time. "yes" even after the longest waits,
"maybe" only after shorter jittered waits, "no" never (the policy gives up
before it).

With a call chain (any of --layers, --retries-per-layer, --rate, --capacity,
--budget-ratio), it also prints what a total outage of the bottom service
costs it: attempts per user action when every layer retries
((1+R)^layers), the load that makes (rate × attempts) against its capacity,
and the same with a single retry owner (rate × (1+R)) and with a retry budget
on that owner (rate × (1+ratio) plus the budget's floor).

To plan one request's deadline across the steps it makes (per-step budgets,
retries that fit, requests left waiting on a slow step), see
'heed plan deadline --help'.
`,
	groups: []flagGroup{policyGroup, {"Plan flags", []string{"attempt-time", "json"}},
		{"Call chain flags", []string{"layers", "retries-per-layer", "rate", "capacity", "budget-ratio"}}},
	foot: `JSON (--json): one object; durations in milliseconds; absent fields were
not asked for.
  policy    {attempts, backoff, base_ms, cap_ms, multiplier, jitter,
             timeout_ms (0: none), deadline_ms (0: none), attempt_time_ms}
  schedule  [{attempt, delay_ms (nominal; absent with decorrelated jitter),
             delay_lo_ms, delay_hi_ms, wait_lo_ms, wait_hi_ms, end_lo_ms,
             end_hi_ms, fits ("yes", "maybe" or "no"; with --deadline)}]
  chain     {layers, retries_per_layer, rate, capacity, budget_ratio,
             budget_floor (retries/s per client),
             every_layer, single_owner, budget: each
             {attempts_per_action, rps (with --rate),
              capacity_ratio (rps / capacity, with --capacity)}}
            (only with call chain flags)

Exit codes:
  0  the plan was printed
  2  usage error: bad flag value, unexpected argument

Example:
  heed plan --attempts 4 --base 100ms --cap 2s --deadline 3s \
    --layers 3 --rate 1000 --capacity 1500
`,
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

	pl := plan{policy: p, attemptTime: at, rows: schedule(p, at)}
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

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

func anySet(fs *flag.FlagSet, names ...string) bool {
	for _, n := range names {
		if isSet(fs, n) {
			return true
		}
	}
	return false
}

// plan is what heed plan prints.
type plan struct {
	policy      retry.Policy
	attemptTime time.Duration
	rows        []row
	chain       *chain // nil without call chain flags
}

// row is one attempt of the schedule.
type row struct {
	attempt        int
	nominal        time.Duration // delay before the attempt, before jitter
	hasNominal     bool          // false with decorrelated jitter, which has none
	lo, hi         time.Duration // the delay's jitter range
	waitLo, waitHi time.Duration // total wait before the attempt
	endLo, endHi   time.Duration // when the attempt ends, every attempt taking attemptTime
	fits           string        // "yes", "maybe", "no", or "" without a deadline
}

// planStart is the instant a planned call starts at (any fixed instant).
var planStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// schedule returns the rows of p's schedule, each attempt taking
// attemptTime.
func schedule(p retry.Policy, attemptTime time.Duration) []row {
	s := p.Backoff
	rows := make([]row, 0, p.Attempts)
	var waitLo, waitHi, prevLo, prevHi time.Duration
	for k := 1; k <= p.Attempts; k++ {
		r := row{attempt: k, hasNominal: s.Jitter != backoff.DecorrelatedJitter || s.Kind == backoff.Immediate}
		if k > 1 {
			// The delay after failure k-1. Only decorrelated jitter depends
			// on the previous delay: the low end grows from the shortest,
			// the high end from the longest.
			n := k - 1
			r.lo, _ = s.Range(n, prevLo)
			_, r.hi = s.Range(n, prevHi)
			if r.hasNominal {
				r.nominal = s.Delay(n)
			}
			prevLo, prevHi = r.lo, r.hi
			waitLo, waitHi = addSat(waitLo, r.lo), addSat(waitHi, r.hi)
		}
		var prevEndLo, prevEndHi time.Duration // when attempt k-1 ends
		if k > 1 {
			prevEndLo, prevEndHi = rows[k-2].endLo, rows[k-2].endHi
		}
		r.waitLo, r.waitHi = waitLo, waitHi
		busy := mulSat(attemptTime, k)
		r.endLo, r.endHi = addSat(waitLo, busy), addSat(waitHi, busy)
		if d := p.TimeBudget; d > 0 {
			// The first attempt fits when it ends in time; a retry when
			// the runtime's rule (retry.Policy.Fits) lets it start after
			// the attempt before it ends.
			yes, maybe := r.endHi <= d, r.endLo <= d
			if k > 1 {
				h := retry.History{Start: planStart}
				yes, _ = p.Fits(h, planStart.Add(prevEndHi), r.hi)
				maybe, _ = p.Fits(h, planStart.Add(prevEndLo), r.lo)
			}
			switch {
			case yes:
				r.fits = "yes"
			case maybe:
				r.fits = "maybe"
			default:
				r.fits = "no"
			}
		}
		rows = append(rows, r)
	}
	return rows
}

func addSat(a, b time.Duration) time.Duration {
	if c := a + b; c >= a {
		return c
	}
	return math.MaxInt64
}

func mulSat(d time.Duration, n int) time.Duration {
	if d != 0 && time.Duration(n) > math.MaxInt64/d {
		return math.MaxInt64
	}
	return d * time.Duration(n)
}

// chain is the load a total outage of the bottom service puts on it.
type chain struct {
	layers, retries int
	rate, capacity  float64 // 0 when not given
	ratio, floor    float64
	every, owner    load // every layer retries; one layer does
	budget          load // one layer does, under a retry budget
}

type load struct {
	attempts float64 // attempts at the bottom per user action
	rps      float64 // attempts per second at the bottom (rate × attempts)
}

func newChain(layers, retries int, rate, capacity, ratio float64) *chain {
	c := &chain{layers: layers, retries: retries, rate: rate, capacity: capacity, ratio: ratio, floor: budget.DefaultMinPerSecond}
	per := 1 + float64(retries)
	c.every.attempts = math.Pow(per, float64(layers))
	c.owner.attempts = per
	// Under a budget, retries are at most ratio × requests plus the floor,
	// and never more than the policy's own retries.
	if rate > 0 {
		retried := min(float64(retries)*rate, ratio*rate+c.floor)
		c.budget.attempts = (rate + retried) / rate
	} else {
		c.budget.attempts = 1 + min(float64(retries), ratio)
	}
	for _, l := range []*load{&c.every, &c.owner, &c.budget} {
		l.rps = rate * l.attempts
	}
	return c
}

// describe returns the policy in words.
func describe(p retry.Policy) string {
	s := p.Backoff
	eff := s.WithDefaults()
	base, limit := eff.Base, eff.Cap
	var b strings.Builder
	fmt.Fprintf(&b, "%d attempts; ", p.Attempts)
	switch {
	case s.Kind == backoff.Immediate:
		b.WriteString("no delay between attempts")
	case s.Jitter == backoff.DecorrelatedJitter:
		fmt.Fprintf(&b, "decorrelated jitter: each delay from %v to 3× the previous, capped at %v", base, limit)
	default:
		switch s.Kind {
		case backoff.Constant:
			fmt.Fprintf(&b, "constant backoff of %v", base)
		case backoff.Linear:
			fmt.Fprintf(&b, "linear backoff, +%v per retry, capped at %v", base, limit)
		default:
			m := s.Multiplier
			if m == 0 {
				m = backoff.DefaultMultiplier
			}
			fmt.Fprintf(&b, "exponential backoff from %v, ×%s per retry, capped at %v", base, fmtNum(m), limit)
		}
		fmt.Fprintf(&b, "; %s jitter", map[backoff.Jitter]string{
			backoff.FullJitter: "full", backoff.NoJitter: "no", backoff.EqualJitter: "equal",
		}[s.Jitter])
	}
	if p.AttemptTimeout > 0 {
		fmt.Fprintf(&b, "; %v per attempt", p.AttemptTimeout)
	}
	if p.TimeBudget > 0 {
		fmt.Fprintf(&b, "; deadline %v", p.TimeBudget)
	}
	return b.String()
}

func (pl *plan) print(w io.Writer) {
	fmt.Fprintf(w, "policy: %s\n\n", describe(pl.policy))
	deadline := pl.policy.TimeBudget
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "ATTEMPT\tDELAY\tJITTER RANGE\tTOTAL WAIT\tENDS BY")
	if deadline > 0 {
		fmt.Fprintf(tw, "\tFITS IN %v", deadline)
	}
	fmt.Fprintln(tw)
	count := map[string]int{}
	for _, r := range pl.rows {
		nominal := "-"
		if r.hasNominal {
			nominal = fmtDur(r.nominal)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s", r.attempt, nominal, fmtRange(r.lo, r.hi), fmtRange(r.waitLo, r.waitHi), fmtDur(r.endHi))
		if deadline > 0 {
			fmt.Fprintf(tw, "\t%s", r.fits)
			count[r.fits]++
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()

	last := pl.rows[len(pl.rows)-1]
	fmt.Fprintf(w, "\nENDS BY is the worst case: the longest waits, each attempt taking %v (--attempt-time).\n", pl.attemptTime)
	n := len(pl.rows)
	switch {
	case deadline == 0 && n == 1:
		fmt.Fprintf(w, "At worst the only attempt ends within %v.\n", fmtDur(last.endHi))
	case deadline == 0:
		fmt.Fprintf(w, "At worst all %d attempts end within %v, %v of it waiting.\n", n, fmtDur(last.endHi), fmtDur(last.waitHi))
	case count["no"] == n:
		fmt.Fprintf(w, "No attempt fits in the %v deadline: the first is cut short by it, and no retry starts.\n", deadline)
	case n == 1 && count["yes"] == 1:
		fmt.Fprintf(w, "The only attempt fits in the %v deadline.\n", deadline)
	case count["yes"] == n:
		fmt.Fprintf(w, "All %d attempts fit in the %v deadline.\n", n, deadline)
	default:
		var parts []string
		y, m, no := count["yes"], count["maybe"], count["no"]
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
		if count["no"] > 0 {
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
		fmt.Fprintf(w, "; %s requests/s", fmtNum(c.rate))
	}
	if c.capacity > 0 {
		fmt.Fprintf(w, "; bottom capacity %s requests/s", fmtNum(c.capacity))
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
		name string
		l    load
	}{
		{fmt.Sprintf("every layer (%s^%d)", per, c.layers), c.every},
		{fmt.Sprintf("one owner (%s)", per), c.owner},
		{fmt.Sprintf("one owner, %s%% budget", fmtNum(c.ratio*100)), c.budget},
	}
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s", r.name, fmtNum(r.l.attempts))
		if c.rate > 0 {
			fmt.Fprintf(tw, "\t%s/s", fmtNum(r.l.rps))
			if c.capacity > 0 {
				fmt.Fprintf(tw, "\t%s×", fmtNum(r.l.rps/c.capacity))
			}
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nA retry budget lets retries add at most %s%% to the requests (plus a floor of %s retry/s per client), however many attempts each call may make.\n",
		fmtNum(c.ratio*100), fmtNum(c.floor))
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
			Attempt:   r.attempt,
			DelayLoMs: ms(r.lo), DelayHiMs: ms(r.hi),
			WaitLoMs: ms(r.waitLo), WaitHiMs: ms(r.waitHi),
			EndLoMs: ms(r.endLo), EndHiMs: ms(r.endHi),
			Fits: r.fits,
		}
		if r.hasNominal {
			d := ms(r.nominal)
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
		conv := func(l load) loadJSON {
			lj := loadJSON{AttemptsPerAction: l.attempts}
			if c.rate > 0 {
				rps := l.rps
				lj.RPS = &rps
				if c.capacity > 0 {
					ratio := l.rps / c.capacity
					lj.CapacityRatio = &ratio
				}
			}
			return lj
		}
		cj.EveryLayer, cj.SingleOwner, cj.Budget = conv(c.every), conv(c.owner), conv(c.budget)
		out.Chain = cj
	}
	return out
}

// fmtDur formats d for a table: exact below a millisecond, to the
// microsecond below a second, to the millisecond above.
func fmtDur(d time.Duration) string {
	switch {
	case d == math.MaxInt64:
		return "∞"
	case d >= time.Second:
		d = d.Round(time.Millisecond)
	case d >= time.Millisecond:
		d = d.Round(time.Microsecond)
	}
	return d.String()
}

func fmtRange(lo, hi time.Duration) string {
	if lo == hi {
		return fmtDur(lo)
	}
	return fmtDur(lo) + "–" + fmtDur(hi)
}

// fmtNum formats f with thousands separators and at most two decimals.
func fmtNum(f float64) string {
	if !finite(f) || math.Abs(f) >= 1e15 {
		return strconv.FormatFloat(f, 'g', 3, 64)
	}
	s := strconv.FormatFloat(f, 'f', 2, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	intPart, frac, _ := strings.Cut(s, ".")
	neg := strings.HasPrefix(intPart, "-")
	intPart = strings.TrimPrefix(intPart, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if frac != "" {
		b.WriteString("." + frac)
	}
	return b.String()
}
