// Package planreport is the report of heed plan: the schedule of a retry
// policy, attempt by attempt, with what limits it, and the load a total
// outage of the bottom service of a call chain puts on it; as tables or
// JSON.
package planreport

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/cmd/heed/internal/plan"
	"github.com/heed-go/heed/internal/admit"
	"github.com/heed-go/heed/internal/textfmt"
	"github.com/heed-go/heed/retry"
)

// A Plan is what heed plan prints: the schedule of Policy, each attempt
// taking AttemptTime, and the load of a call chain when Chain is set.
type Plan struct {
	Policy      retry.Policy
	AttemptTime time.Duration
	Chain       *Chain // nil: no call chain
}

// A Chain is a call chain of Layers services that each retry their call to
// the next Retries times, Rate user requests per second at the top (0: not
// given) against a bottom service of Capacity requests per second (0: not
// given) whose latency with no queue is Latency (0: not given), with a
// retry budget of Ratio on a single retry owner.
type Chain struct {
	Layers, Retries int
	Rate, Capacity  float64
	Ratio           float64
	Latency         time.Duration
}

// limit is what overload control at the bottom service comes to, by
// Little's law, for a Chain with a Capacity and a Latency.
type limit struct {
	inService float64       // capacity × latency: the requests in service at capacity
	steady    float64       // where the adaptive limit settles
	inside    time.Duration // the wait inside the handler of a request at the steady limit
	served    time.Duration // a served request's latency there
	cutoff    time.Duration // less time left than this: refused at once
	refused   float64       // requests/s refused at Rate, when Rate is above Capacity
}

func (c *Chain) limit() *limit {
	if c == nil || c.Capacity <= 0 || c.Latency <= 0 {
		return nil
	}
	l := &limit{inService: c.Capacity * c.Latency.Seconds()}
	l.steady = admit.SteadyLimit(l.inService)
	// The queue inside, steady - inService, drains at the capacity.
	l.inside = time.Duration((l.steady - l.inService) / c.Capacity * float64(time.Second)).Round(time.Millisecond)
	l.served = c.Latency + l.inside
	// A new waiter expects one place to free (served / limit) and then
	// the no-queue latency.
	l.cutoff = (time.Duration(float64(l.served)/l.steady) + c.Latency).Round(time.Millisecond)
	l.refused = max(0, c.Rate-c.Capacity)
	return l
}

func (l *limit) write(w io.Writer, c *Chain) {
	fmt.Fprintf(w, "\noverload control at the bottom service (overload.Limiter), by Little's law:\n")
	fmt.Fprintf(w, "  in service at capacity: %s requests/s × %v = %s at once\n", textfmt.Num(c.Capacity), c.Latency, textfmt.Num(l.inService))
	fmt.Fprintf(w, "  its adaptive limit (the zero Config) settles near %s in flight: %s more, each waiting inside about %v, so that a place freed is never idle\n",
		textfmt.Num(math.Round(l.steady*10)/10), textfmt.Num(math.Round((l.steady-l.inService)*10)/10), textfmt.Dur(l.inside))
	fmt.Fprintf(w, "  a served request takes about %v; the queue in front holds up to %s more, each waiting at most %v (%v once it has not emptied for %v)\n",
		textfmt.Dur(l.served), textfmt.Num(math.Floor(l.steady)), admit.DefaultInterval, 2*admit.DefaultTarget, admit.DefaultInterval)
	fmt.Fprintf(w, "  at the limit, a request with less than about %v left is refused at once: its deadline cannot cover a place freeing plus %v\n",
		textfmt.Dur(l.cutoff), c.Latency)
	if l.refused > 0 {
		fmt.Fprintf(w, "  at %s requests/s, about %s/s are refused at once with 503 and Retry-After (retries first), and %s/s served\n",
			textfmt.Num(c.Rate), textfmt.Num(l.refused), textfmt.Num(c.Capacity))
	}
	fmt.Fprintf(w, "  a fixed limit (Config.Limit) from %s to %s suits a service whose capacity does not move\n",
		textfmt.Num(math.Ceil(l.inService)), textfmt.Num(math.Ceil(l.steady)))
}

// load is the load a total outage of the bottom service puts on it.
type load struct {
	*Chain
	floor, burst float64 // the budget's, per client
	plan.Amplification
}

func (c *Chain) load() *load {
	if c == nil {
		return nil
	}
	floor := budget.DefaultMinPerSecond
	return &load{Chain: c, floor: floor, burst: budget.DefaultBurst,
		Amplification: plan.ChainAmplification(c.Layers, c.Retries, c.Rate, c.Ratio, floor)}
}

// Write writes the plan as tables: the schedule, what limits it, and the
// chain's load.
func (pl *Plan) Write(w io.Writer) {
	rows := plan.Schedule(pl.Policy, pl.AttemptTime)
	fmt.Fprintf(w, "policy: %s\n\n", plan.Describe(pl.Policy))
	deadline := pl.Policy.TimeBudget
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "ATTEMPT\tDELAY\tJITTER RANGE\tTOTAL WAIT\tENDS BY")
	if deadline > 0 {
		fmt.Fprintf(tw, "\tFITS IN %v", deadline)
	}
	fmt.Fprintln(tw)
	count := map[plan.Fit]int{}
	for _, r := range rows {
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

	last := rows[len(rows)-1]
	fmt.Fprintf(w, "\nENDS BY is the worst case: the longest waits, each attempt taking %v (--attempt-time).\n", pl.AttemptTime)
	n := len(rows)
	y, m, no := count[plan.FitYes], count[plan.FitMaybe], count[plan.FitNo]
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

	if c := pl.Chain.load(); c != nil {
		c.write(w)
	}
	if l := pl.Chain.limit(); l != nil {
		l.write(w, pl.Chain)
	}
}

// attemptSpan reads "attempt 3 " + one or "attempts 3–5 " + many.
func attemptSpan(from, to int, one, many string) string {
	if from == to {
		return fmt.Sprintf("attempt %d %s", from, one)
	}
	return fmt.Sprintf("attempts %d–%d %s", from, to, many)
}

func (c *load) write(w io.Writer) {
	fmt.Fprintf(w, "\ncall chain: %d layer", c.Layers)
	if c.Layers != 1 {
		fmt.Fprint(w, "s")
	}
	fmt.Fprintf(w, ", each making up to %d attempts per call (%d retries)", c.Retries+1, c.Retries)
	if c.Rate > 0 {
		fmt.Fprintf(w, "; %s requests/s", textfmt.Num(c.Rate))
	}
	if c.Capacity > 0 {
		fmt.Fprintf(w, "; bottom capacity %s requests/s", textfmt.Num(c.Capacity))
	}
	fmt.Fprint(w, "\nduring a total outage of the bottom service:\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "RETRIES BY\tATTEMPTS PER ACTION")
	if c.Rate > 0 {
		fmt.Fprint(tw, "\tLOAD ON BOTTOM")
		if c.Capacity > 0 {
			fmt.Fprint(tw, "\tVS CAPACITY")
		}
	}
	fmt.Fprintln(tw)
	per := strconv.Itoa(c.Retries + 1)
	rows := []struct {
		name     string
		attempts float64
	}{
		{fmt.Sprintf("every layer (%s^%d)", per, c.Layers), c.EveryLayer},
		{fmt.Sprintf("one owner (%s)", per), c.OneOwner},
		{fmt.Sprintf("one owner, %s%% budget", textfmt.Num(c.Ratio*100)), c.Budgeted},
	}
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s", r.name, textfmt.Num(r.attempts))
		if c.Rate > 0 {
			fmt.Fprintf(tw, "\t%s/s", textfmt.Num(c.Rate*r.attempts))
			if c.Capacity > 0 {
				fmt.Fprintf(tw, "\t%s×", textfmt.Num(c.Rate*r.attempts/c.Capacity))
			}
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nA retry budget lets retries add at most %[1]s%% to the requests (or %[2]s retry/s per client, when that is more), however many attempts each call may make, after a burst of at most %[3]s retries per client: a total outage of T seconds at r requests/s per client sees at most 1 + %[4]s + %[3]s/(r × T) times its load (%[5]s× in the long run), N clients add N × %[3]s at an outage's onset, and a short-lived process %[3]s per start.\n",
		textfmt.Num(c.Ratio*100), textfmt.Num(c.floor), textfmt.Num(c.burst), textfmt.Num(c.Ratio), textfmt.Num(1+c.Ratio))
}

// The JSON form; the field names are documented in heed plan's help and
// stable.

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
	Layers          int        `json:"layers"`
	RetriesPerLayer int        `json:"retries_per_layer"`
	Rate            *float64   `json:"rate,omitempty"`
	Capacity        *float64   `json:"capacity,omitempty"`
	BudgetRatio     float64    `json:"budget_ratio"`
	BudgetFloor     float64    `json:"budget_floor"`
	BudgetBurst     float64    `json:"budget_burst"`
	EveryLayer      loadJSON   `json:"every_layer"`
	SingleOwner     loadJSON   `json:"single_owner"`
	Budget          loadJSON   `json:"budget"`
	Overload        *limitJSON `json:"overload,omitempty"`
}

type limitJSON struct {
	LatencyMs     float64 `json:"latency_ms"`
	InService     float64 `json:"in_service"`
	Limit         float64 `json:"limit"`
	WaitInsideMs  float64 `json:"wait_inside_ms"`
	ServedLatency float64 `json:"served_latency_ms"`
	RefuseBelowMs float64 `json:"refuse_below_ms"`
	RefusedRPS    float64 `json:"refused_rps"`
}

type loadJSON struct {
	AttemptsPerAction float64  `json:"attempts_per_action"`
	RPS               *float64 `json:"rps,omitempty"`
	CapacityRatio     *float64 `json:"capacity_ratio,omitempty"`
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// WriteJSON writes the plan as one JSON object, durations in
// milliseconds.
func (pl *Plan) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(pl.json())
}

func (pl *Plan) json() planJSON {
	rows := plan.Schedule(pl.Policy, pl.AttemptTime)
	s := pl.Policy.Backoff
	m := s.Multiplier
	if m == 0 {
		m = backoff.Schedule{}.WithDefaults().Multiplier
	}
	out := planJSON{
		Policy: policyJSON{
			Attempts:      pl.Policy.Attempts,
			Backoff:       s.Kind.String(),
			BaseMs:        ms(s.WithDefaults().Base),
			CapMs:         ms(s.WithDefaults().Cap),
			Multiplier:    m,
			Jitter:        s.Jitter.String(),
			TimeoutMs:     ms(pl.Policy.AttemptTimeout),
			DeadlineMs:    ms(pl.Policy.TimeBudget),
			AttemptTimeMs: ms(pl.AttemptTime),
		},
		Schedule: make([]rowJSON, len(rows)),
	}
	for i, r := range rows {
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
	if c := pl.Chain.load(); c != nil {
		cj := &chainJSON{
			Layers: c.Layers, RetriesPerLayer: c.Retries,
			BudgetRatio: c.Ratio, BudgetFloor: c.floor, BudgetBurst: c.burst,
		}
		if c.Rate > 0 {
			cj.Rate = &c.Rate
		}
		if c.Capacity > 0 {
			cj.Capacity = &c.Capacity
		}
		conv := func(attempts float64) loadJSON {
			lj := loadJSON{AttemptsPerAction: attempts}
			if c.Rate > 0 {
				rps := c.Rate * attempts
				lj.RPS = &rps
				if c.Capacity > 0 {
					ratio := rps / c.Capacity
					lj.CapacityRatio = &ratio
				}
			}
			return lj
		}
		cj.EveryLayer, cj.SingleOwner, cj.Budget = conv(c.EveryLayer), conv(c.OneOwner), conv(c.Budgeted)
		if l := pl.Chain.limit(); l != nil {
			cj.Overload = &limitJSON{LatencyMs: ms(c.Latency), InService: l.inService, Limit: l.steady,
				WaitInsideMs: ms(l.inside), ServedLatency: ms(l.served), RefuseBelowMs: ms(l.cutoff), RefusedRPS: l.refused}
		}
		out.Chain = cj
	}
	return out
}
