// Package enginetest holds what the tests of heed's job-engine adapters
// (heedriver, heedasynq) share: a recorder of heed's decisions, the
// conformance suite's view of an engine that defers while the breaker is
// open, retry.Do's attempt starts to compare an engine's with, the
// scenario of whole attempts in a time budget, and the drain benchmark's
// rounds and report. Each adapter keeps only what is
// its engine's own: how to start it, enqueue, and read a job back.
package enginetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/retry"
	"github.com/heed-go/heed/retry/executortest"
)

// Events collects heed's decisions, in order, and says when one is final.
// Make one with NewEvents and hand Observe to the policy.
type Events struct {
	mu    sync.Mutex
	ds    []retry.Decision
	final chan struct{}
	once  sync.Once
	// Then, when set, is called with every decision, on the goroutine of
	// the attempt (the engine's worker or handler).
	Then func(retry.Decision)
}

// NewEvents returns an empty recorder.
func NewEvents() *Events { return &Events{final: make(chan struct{})} }

// Observe is a retry.Policy's Observe: it records e's decision.
func (e *Events) Observe(_ context.Context, ev retry.Event) {
	e.mu.Lock()
	e.ds = append(e.ds, ev.Decision)
	e.mu.Unlock()
	if e.Then != nil {
		e.Then(ev.Decision)
	}
	if ev.Action == retry.Done || ev.Action == retry.GiveUp {
		e.once.Do(func() { close(e.final) })
	}
}

// Final is closed once a decision is final (done or give up).
func (e *Events) Final() <-chan struct{} { return e.final }

// Decisions returns the decisions so far.
func (e *Events) Decisions() []retry.Decision {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.ds)
}

// HeldBack returns ds as the conformance suite expects them from a
// durable executor that holds a call back while its breaker is open.
// heed's queue leaves such a job unclaimed, so the case "breaker open"
// expects no decision before the probe's success; River and asynq claim
// every due job, so their adapters defer it instead, without running it.
// Those deferrals are checked here and left out of what the suite
// compares.
func HeldBack(t *testing.T, c executortest.Case, ds []retry.Decision) []retry.Decision {
	if c.Name != "breaker open" {
		return ds
	}
	n := 0
	for n < len(ds) && ds[n].Action == retry.Defer && ds[n].Reason == retry.ReasonBreakerOpen {
		n++
	}
	if n == 0 {
		t.Errorf("decisions %v: want the open breaker to defer the job first", ds)
	}
	return ds[n:]
}

// DoStarts runs p's call in retry.Do, in virtual time, every attempt
// running into its timeout, and returns when its attempts started and
// when it gave up, from its start: what an engine's attempts of the same
// policy must match.
func DoStarts(t *testing.T, p retry.Policy) (starts []time.Duration, stop time.Duration) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		p.Observe = func(_ context.Context, e retry.Event) {
			if e.Action == retry.GiveUp {
				stop = e.Elapsed
			}
		}
		retry.Do(context.Background(), p, func(ctx context.Context) error {
			starts = append(starts, time.Since(t0))
			<-ctx.Done()
			return ctx.Err()
		})
	})
	return starts, stop
}

// WholeAttempts is the scenario of a job with a 30 s time budget whose
// 8 s attempts all time out: with 2.5 s between attempts they start at 0,
// 10.5 s and 21 s, and the job stops at 29 s (a fourth attempt would need
// until 39.5 s), given up with reason time_budget. Under full jitter, one
// subtest a seed, the attempts start where retry.Do, the in-process
// executor, starts them with the same seed. run runs one job of p on the
// engine (named in errors, "River"), every attempt running into its
// timeout, and returns when its attempts started, heed's last decision,
// and check, which checks the job as the engine stored it, given how many
// attempts it should have made.
func WholeAttempts(t *testing.T, engine string, seeds []uint64,
	run func(t *testing.T, p retry.Policy) (starts []time.Duration, final retry.Decision, check func(attempts int))) {
	type tcase struct {
		name    string
		backoff backoff.Schedule
		seed    uint64
		want    []time.Duration // attempts' starts
		stop    time.Duration   // 0: as retry.Do
	}
	tcs := []tcase{{"constant 2.5s", backoff.Schedule{Kind: backoff.Constant, Base: 2500 * time.Millisecond, Jitter: backoff.NoJitter}, 0,
		[]time.Duration{0, 10500 * time.Millisecond, 21 * time.Second}, 29 * time.Second}}
	for _, seed := range seeds {
		tcs = append(tcs, tcase{fmt.Sprintf("full jitter, seed %d", seed), backoff.Schedule{Base: 2 * time.Second, Cap: 10 * time.Second}, seed, nil, 0})
	}
	base := retry.Policy{Attempts: retry.Unlimited, AttemptTimeout: 8 * time.Second, TimeBudget: 30 * time.Second}
	for _, tc := range tcs {
		t.Run(tc.name, func(t *testing.T) {
			p := base
			p.Backoff = tc.backoff
			want, stop := tc.want, tc.stop
			if want == nil {
				p.Rand = rand.NewPCG(tc.seed, 0)
				want, stop = DoStarts(t, p)
				p.Rand = rand.NewPCG(tc.seed, 0)
			}
			starts, final, check := run(t, p)
			if !slices.Equal(starts, want) {
				t.Errorf("%s's attempts started at %v, want %v", engine, starts, want)
			}
			if final.Action != retry.GiveUp || final.Reason != retry.ReasonTimeBudget || final.Elapsed != stop {
				t.Errorf("last decision %v/%v after %v, want give_up/time_budget after %v", final.Action, final.Reason, final.Elapsed, stop)
			}
			check(len(want))
			t.Logf("attempts at %v, stopped after %v", starts, final.Elapsed)
		})
	}
}

// Drain is an engine's drain benchmark: rounds times, heed's own work per
// job (own, CPU ns) and then a drain of b.N no-op jobs without heed and
// with it, as the sub-benchmarks name and name+"+heed". prepare(b, heed)
// readies the drain and returns run, which starts the engine and returns
// once every job has run (what is timed), and stop. Each sub-benchmark
// reports cpu-ns/op, the process's CPU time (user and system) per job,
// which a busy machine disturbs less than the wall time; the log at the
// end gives each variant's median and least (its least disturbed round),
// and heed's own work beside the engine's CPU per job. engine names the
// engine in the log ("River"), ownName the benchmark of heed's own work.
func Drain(b *testing.B, rounds int, name, engine, ownName string, own func(*testing.B) float64,
	prepare func(b *testing.B, heed bool) (run, stop func())) {
	b.Helper()
	wall, cpu := map[bool][]float64{}, map[bool][]float64{}
	var owns []float64 // heed's own work per job, measured once a round
	for range rounds {
		owns = append(owns, own(b))
		for _, heed := range []bool{false, true} {
			sub := name
			if heed {
				sub = name + "+heed"
			}
			b.Run(sub, func(b *testing.B) {
				run, stop := prepare(b, heed)
				cpu0 := CPUTime()
				b.ResetTimer()
				run()
				b.StopTimer()
				perJob := float64(CPUTime()-cpu0) / float64(b.N)
				b.ReportMetric(perJob, "cpu-ns/op")
				if b.N > 1 {
					wall[heed] = append(wall[heed], float64(b.Elapsed())/float64(b.N))
					cpu[heed] = append(cpu[heed], perJob)
				}
				stop()
			})
		}
	}
	if len(wall[true]) == 0 {
		return
	}
	b.Logf("heed's own work per job (as %s, once a round): median %.0f ns CPU, %.1f%% of %s's median CPU per job",
		ownName, Median(owns), 100*Median(owns)/Median(cpu[false]), engine)
	for _, st := range []struct {
		name string
		f    func([]float64) float64
	}{{"medians", Median}, {"least", slices.Min[[]float64]}} {
		mw, mc := st.f(wall[false]), st.f(cpu[false])
		hw, hc := st.f(wall[true]), st.f(cpu[true])
		b.Logf("%s of %d rounds, per job: %s %.0f ns wall, %.0f ns CPU; %s+heed %.0f ns wall (%+.1f%%), %.0f ns CPU (%+.1f%%)",
			st.name, len(wall[true]), name, mw, mc, name, hw, 100*(hw/mw-1), hc, 100*(hc/mc-1))
	}
}

// Median returns the median of xs, which it does not change.
func Median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
