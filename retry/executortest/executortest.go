// Package executortest is the conformance suite of heed's executors: every
// executor of a retry.Policy (retry.Do, retryhttp, the job queue over each
// store, the simulator, and any new one such as gRPC) must take the same
// decisions, with the same reasons and delays, for the same scripted
// attempt outcomes. One policy, one behaviour.
//
// An executor implements [Executor] by running one call whose attempts
// produce the [Step]s of a script, in its own terms (a returned error, an
// HTTP status, a handler's result, a virtual fault), and reporting every
// decision it took. Most executors run it under testing/synctest, so that
// the backoff, timeouts and cooldowns pass in virtual time. [Run] drives
// every [Case] through it and compares.
//
// Durable executors (the queue) differ only where the call protocol says
// they do: a refusal that passes with time (an open breaker, an empty
// retry budget) defers the call instead of ending it (or holds it back,
// undecided, while the executor knows the refusal would come), a server's wait
// longer than MaxPushback is honoured, and there is no caller's deadline.
package executortest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/breaker"
	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/retry"
)

// Kind is what one scripted attempt does.
type Kind uint8

// The kinds of [Step].
const (
	OK        Kind = iota // succeeds
	Transient             // fails in a way that may pass (a 503, a reset connection)
	Permanent             // fails in a way that will not pass (a certificate error, bad input)
	Timeout               // does not end until its attempt timeout cuts it off
	Pushback              // fails with a server's request to wait Step.Wait (whole seconds)
)

// Step is one scripted attempt. Attempts past the end of a script succeed.
type Step struct {
	Kind Kind
	Wait time.Duration // with Pushback
	// Takes is how long the attempt runs before it ends as Kind says
	// (zero: at once), unless its context ends first: the slow answers of
	// the hedging cases.
	Takes time.Duration
}

// Case is one scripted call.
type Case struct {
	Name string
	// Policy returns the call's policy. The executor calls it with the
	// time its call starts at, in its own clock (inside its synctest
	// bubble, or the simulator's virtual time), because it may make a
	// breaker or a budget and bring it to the state the case needs then.
	Policy func(now time.Time) retry.Policy
	// Deadline is the caller's deadline, from the start of the call (zero:
	// none). Durable executors have no caller's deadline and skip such
	// cases.
	Deadline time.Duration
	Script   []Step
	// Want are the decisions expected, in order; WantDurable those of a
	// durable executor, when they differ (nil: the same as Want).
	Want, WantDurable []Want
}

// Err returns what an attempt of step s returns as an error, for
// executors whose attempts are functions (retry.Do, a job handler): nil,
// an error marked retry.Transient, retry.Permanent or retry.After, or,
// for Timeout, ctx's error once the attempt's context ends.
func Err(ctx context.Context, s Step) error {
	if err := Take(ctx, s); err != nil {
		return err
	}
	switch s.Kind {
	case Transient:
		return retry.Transient(errors.New("scripted: 503 service unavailable"))
	case Permanent:
		return retry.Permanent(errors.New("scripted: 400 bad request"))
	case Timeout:
		<-ctx.Done()
		return ctx.Err()
	case Pushback:
		return retry.After(s.Wait, errors.New("scripted: 429 too many requests"))
	}
	return nil
}

// Take waits s.Takes, or until ctx ends; then it returns ctx's error.
func Take(ctx context.Context, s Step) error {
	if s.Takes <= 0 {
		return nil
	}
	t := time.NewTimer(s.Takes)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Step returns the script's attempt n (from 1).
func (c *Case) Step(n int) Step {
	if n >= 1 && n <= len(c.Script) {
		return c.Script[n-1]
	}
	return Step{Kind: OK}
}

// Want is an expected decision. A negative Delay is not compared.
type Want struct {
	// Action, Reason and Delay are the decision's.
	Action retry.Action
	Reason retry.Reason
	Delay  time.Duration
	// Hedges and HedgeWon are the decision's (see retry.Hedge).
	Hedges   int
	HedgeWon bool
}

// String writes w as failures show it: "retry/transient/100ms", with
// "/hedges=N" and "/won" when set.
func (w Want) String() string {
	s := fmt.Sprintf("%v/%v/%v", w.Action, w.Reason.Key(), w.Delay)
	if w.Hedges > 0 {
		s += fmt.Sprintf("/hedges=%d", w.Hedges)
		if w.HedgeWon {
			s += "/won"
		}
	}
	return s
}

// Executor runs scripted calls.
type Executor interface {
	// Durable reports whether the executor's calls are durable
	// (retry.Call.Durable).
	Durable() bool
	// Run runs one call of c, attempt n producing c.Step(n), and returns
	// every decision taken, in order: retries, deferrals and the final
	// done or give-up.
	Run(t *testing.T, c Case) []retry.Decision
}

// Delay is the backoff of every case: constant, no jitter.
const Delay = 100 * time.Millisecond

// AttemptTimeout is the per-attempt timeout of every case.
const AttemptTimeout = time.Second

func policy(attempts int) retry.Policy {
	return retry.Policy{
		Attempts:       attempts,
		Backoff:        backoff.Schedule{Kind: backoff.Constant, Base: Delay, Jitter: backoff.NoJitter},
		AttemptTimeout: AttemptTimeout,
		TimeBudget:     time.Hour,
		MaxPushback:    2 * time.Second,
	}
}

// Cases returns the scripted calls every executor must pass.
func Cases() []Case {
	base := func(time.Time) retry.Policy { return policy(4) }
	retryT := Want{Action: retry.Retry, Reason: retry.ReasonTransient, Delay: Delay}
	done := Want{Action: retry.Done, Reason: retry.ReasonSuccess, Delay: 0}
	return []Case{
		{Name: "success", Policy: base, Want: []Want{done}},
		{Name: "transient twice", Policy: base, Script: []Step{{Kind: Transient}, {Kind: Transient}},
			Want: []Want{retryT, retryT, done}},
		{Name: "transient until attempts run out", Policy: base,
			Script: []Step{{Kind: Transient}, {Kind: Transient}, {Kind: Transient}, {Kind: Transient}},
			Want:   []Want{retryT, retryT, retryT, {Action: retry.GiveUp, Reason: retry.ReasonAttempts, Delay: 0}}},
		{Name: "permanent", Policy: base, Script: []Step{{Kind: Permanent}},
			Want: []Want{{Action: retry.GiveUp, Reason: retry.ReasonPermanent, Delay: 0}}},
		{Name: "timeout", Policy: base, Script: []Step{{Kind: Timeout}},
			Want: []Want{{Action: retry.Retry, Reason: retry.ReasonTimeout, Delay: Delay}, done}},
		{Name: "pushback below the cap", Policy: base, Script: []Step{{Kind: Pushback, Wait: time.Second}},
			Want: []Want{{Action: retry.Retry, Reason: retry.ReasonPushback, Delay: time.Second}, done}},
		{Name: "pushback above the cap", Policy: base, Script: []Step{{Kind: Pushback, Wait: 5 * time.Second}},
			Want:        []Want{{Action: retry.GiveUp, Reason: retry.ReasonPushbackTooLong, Delay: 5 * time.Second}},
			WantDurable: []Want{{Action: retry.Retry, Reason: retry.ReasonPushback, Delay: 5 * time.Second}, done}},
		{Name: "breaker open", Policy: func(now time.Time) retry.Policy {
			p := base(now)
			b, err := breaker.New(breaker.Config{MinCalls: 1, Cooldown: 5 * time.Second})
			if err != nil {
				panic(err)
			}
			permit, _ := b.AllowAt(now)
			permit.RecordAt(now, breaker.Failure) // another caller saw the dependency fail
			p.Breaker = b
			return p
		},
			Want: []Want{{Action: retry.GiveUp, Reason: retry.ReasonBreakerOpen, Delay: 0}},
			// Held back until the end of the cooldown, 5 s after the
			// breaker opened: a durable executor that knows the breaker
			// is open before it starts the call does not start it only to
			// defer it (the queue leaves the job unclaimed), so the first
			// decision is the probe's success.
			WantDurable: []Want{done}},
		{Name: "budget empty", Policy: func(now time.Time) retry.Policy {
			p := base(now)
			// The floor refills the spent retry in 4 s: a durable
			// executor on a real clock and a busy machine's store can
			// take a second from this spend to the retry's claim, and
			// must still find the bucket empty there.
			b, err := budget.New(budget.Config{MinPerSecond: 0.25, Burst: 1})
			if err != nil {
				panic(err)
			}
			b.AllowRetryAt(now) // another call spent the bucket
			p.Budget = b
			return p
		}, Script: []Step{{Kind: Transient}},
			Want: []Want{{Action: retry.GiveUp, Reason: retry.ReasonBudget, Delay: Delay}},
			// The retry waits for the budget to refill (deferred until the
			// floor brings a retry).
			WantDurable: []Want{retryT, {Action: retry.Defer, Reason: retry.ReasonBudget, Delay: -1}, done}},
		{Name: "time budget too close", Policy: func(now time.Time) retry.Policy {
			p := base(now)
			p.TimeBudget = AttemptTimeout + Delay/2 // a whole attempt no longer fits after the delay
			return p
		}, Script: []Step{{Kind: Transient}},
			Want: []Want{{Action: retry.GiveUp, Reason: retry.ReasonTimeBudget, Delay: Delay}}},
		{Name: "deadline too close", Policy: base, Deadline: AttemptTimeout + Delay/2, Script: []Step{{Kind: Transient}},
			Want: []Want{{Action: retry.GiveUp, Reason: retry.ReasonDeadline, Delay: Delay}}},
	}
}

// HedgeDelay is the hedge delay of the hedging cases.
const HedgeDelay = 50 * time.Millisecond

// HedgeCases returns the scripted calls every executor that hedges
// (retry.Policy.Hedge) must pass: under the cases' policy with a Hedge of
// HedgeDelay, a slow first attempt is raced by a hedge, the first
// acceptable answer wins, a failure of one attempt leaves the others
// running, and a hedge is an attempt that the budget and the attempt limit
// refuse. The executor calls the policy's function as for [Cases] and
// makes a call that is safe to repeat; attempt n (the hedges numbered
// after the attempt they race, in the order they start) does c.Step(n).
func HedgeCases() []Case {
	hedged := func(attempts, max int) func(time.Time) retry.Policy {
		return func(time.Time) retry.Policy {
			p := policy(attempts)
			p.Hedge = &retry.Hedge{Delay: HedgeDelay, Max: max}
			return p
		}
	}
	base := hedged(4, 1)
	slow := Step{Kind: OK, Takes: 10 * HedgeDelay}
	done := Want{Action: retry.Done, Reason: retry.ReasonSuccess}
	doneHedged := Want{Action: retry.Done, Reason: retry.ReasonSuccess, Hedges: 1}
	hedgeWon := Want{Action: retry.Done, Reason: retry.ReasonSuccess, Hedges: 1, HedgeWon: true}
	return []Case{
		{Name: "hedge: a fast answer sends none", Policy: base, Want: []Want{done}},
		{Name: "hedge: an answer within the delay sends none", Policy: base,
			Script: []Step{{Kind: OK, Takes: HedgeDelay / 2}}, Want: []Want{done}},
		{Name: "hedge: a slow attempt is raced and the hedge wins", Policy: base,
			Script: []Step{slow}, Want: []Want{hedgeWon}},
		{Name: "hedge: the first attempt answers first", Policy: base,
			Script: []Step{{Kind: OK, Takes: HedgeDelay * 3 / 2}, slow}, Want: []Want{doneHedged}},
		{Name: "hedge: a failed hedge leaves the first attempt running", Policy: base,
			Script: []Step{{Kind: OK, Takes: HedgeDelay * 3 / 2}, {Kind: Transient}}, Want: []Want{doneHedged}},
		{Name: "hedge: both fail and the call retries", Policy: base,
			Script: []Step{{Kind: Transient, Takes: HedgeDelay * 3 / 2}, {Kind: Transient}},
			Want:   []Want{{Action: retry.Retry, Reason: retry.ReasonTransient, Delay: Delay, Hedges: 1}, done}},
		{Name: "hedge: a permanent answer ends the race", Policy: base,
			Script: []Step{slow, {Kind: Permanent}},
			Want:   []Want{{Action: retry.GiveUp, Reason: retry.ReasonPermanent, Hedges: 1, HedgeWon: true}}},
		{Name: "hedge: two hedges, one delay apart", Policy: hedged(4, 2),
			Script: []Step{slow, slow}, Want: []Want{{Action: retry.Done, Reason: retry.ReasonSuccess, Hedges: 2, HedgeWon: true}}},
		{Name: "hedge: none past the attempt limit", Policy: hedged(1, 1),
			Script: []Step{slow}, Want: []Want{done}},
		{Name: "hedge: none when the budget is empty", Policy: func(now time.Time) retry.Policy {
			p := base(now)
			// The floor refills the spent retry in 4 s: a durable
			// executor on a real clock and a busy machine's store can
			// take a second from this spend to the retry's claim, and
			// must still find the bucket empty there.
			b, err := budget.New(budget.Config{MinPerSecond: 0.25, Burst: 1})
			if err != nil {
				panic(err)
			}
			b.AllowRetryAt(now) // another call spent the bucket
			p.Budget = b
			return p
		}, Script: []Step{slow}, Want: []Want{done}},
	}
}

// Run drives every case through ex, in parallel subtests, and fails t
// where ex's decisions differ from the expected ones. For durable executors, consecutive deferrals
// with the same reason count as one: how often a job is deferred before a
// budget refills depends on the budget's steps, not on the protocol.
func Run(t *testing.T, ex Executor) { run(t, ex, Cases()) }

// RunHedge drives every case of [HedgeCases] through ex, as Run does.
func RunHedge(t *testing.T, ex Executor) { run(t, ex, HedgeCases()) }

func run(t *testing.T, ex Executor, cases []Case) {
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			want := c.Want
			if ex.Durable() {
				if c.Deadline > 0 {
					t.Skip("durable executors have no caller's deadline")
				}
				if c.WantDurable != nil {
					want = c.WantDurable
				}
			}
			got := ex.Run(t, c)
			if ex.Durable() {
				got = collapse(got)
			}
			if !match(got, want) {
				t.Errorf("decisions %s, want %s", decisions(got), wants(want))
			}
		})
	}
}

func collapse(ds []retry.Decision) []retry.Decision {
	var out []retry.Decision
	for _, d := range ds {
		if n := len(out); n > 0 && d.Action == retry.Defer && out[n-1].Action == retry.Defer && out[n-1].Reason == d.Reason {
			continue
		}
		out = append(out, d)
	}
	return out
}

func match(got []retry.Decision, want []Want) bool {
	if len(got) != len(want) {
		return false
	}
	for i, w := range want {
		g := got[i]
		if g.Action != w.Action || g.Reason != w.Reason || (w.Delay >= 0 && g.Delay != w.Delay) ||
			g.Hedges != w.Hedges || g.HedgeWon != w.HedgeWon {
			return false
		}
	}
	return true
}

func decisions(ds []retry.Decision) string {
	s := make([]string, len(ds))
	for i, d := range ds {
		s[i] = Want{Action: d.Action, Reason: d.Reason, Delay: d.Delay, Hedges: d.Hedges, HedgeWon: d.HedgeWon}.String()
	}
	return "[" + strings.Join(s, " ") + "]"
}

func wants(ws []Want) string {
	s := make([]string, len(ws))
	for i, w := range ws {
		s[i] = w.String()
	}
	return "[" + strings.Join(s, " ") + "]"
}
