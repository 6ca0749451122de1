package plan_test

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/cmd/heed/internal/plan"
	"github.com/heed-go/heed/retry"
)

func TestSchedule(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name   string
		s      backoff.Schedule
		lo, hi []time.Duration // delay before attempts 2, 3, 4
	}{
		{"exponential full", backoff.Schedule{Base: 100 * ms, Cap: 300 * ms},
			[]time.Duration{0, 0, 0}, []time.Duration{100 * ms, 200 * ms, 300 * ms}},
		{"constant none", backoff.Schedule{Kind: backoff.Constant, Base: 50 * ms, Jitter: backoff.NoJitter},
			[]time.Duration{50 * ms, 50 * ms, 50 * ms}, []time.Duration{50 * ms, 50 * ms, 50 * ms}},
		{"linear equal", backoff.Schedule{Kind: backoff.Linear, Base: 100 * ms, Jitter: backoff.EqualJitter},
			[]time.Duration{50 * ms, 100 * ms, 150 * ms}, []time.Duration{100 * ms, 200 * ms, 300 * ms}},
		{"decorrelated", backoff.Schedule{Base: 100 * ms, Cap: time.Second, Jitter: backoff.DecorrelatedJitter},
			[]time.Duration{100 * ms, 100 * ms, 100 * ms}, []time.Duration{300 * ms, 900 * ms, time.Second}},
		{"immediate", backoff.Schedule{Kind: backoff.Immediate},
			[]time.Duration{0, 0, 0}, []time.Duration{0, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows := plan.Schedule(retry.Policy{Attempts: 4, Backoff: tt.s}, 10*ms)
			var waitLo, waitHi time.Duration
			for i, r := range rows[1:] {
				waitLo += tt.lo[i]
				waitHi += tt.hi[i]
				if r.DelayMin != tt.lo[i] || r.DelayMax != tt.hi[i] || r.WaitMin != waitLo || r.WaitMax != waitHi {
					t.Errorf("attempt %d: delay %v–%v wait %v–%v, want %v–%v and %v–%v",
						r.Attempt, r.DelayMin, r.DelayMax, r.WaitMin, r.WaitMax, tt.lo[i], tt.hi[i], waitLo, waitHi)
				}
				if want := waitHi + time.Duration(r.Attempt)*10*ms; r.EndMax != want {
					t.Errorf("attempt %d ends by %v, want %v", r.Attempt, r.EndMax, want)
				}
			}
		})
	}
}

func TestScheduleSaturates(t *testing.T) {
	p := retry.Policy{Attempts: 1000, Backoff: backoff.Schedule{Base: time.Hour, Cap: math.MaxInt64}}
	rows := plan.Schedule(p, math.MaxInt64/2)
	last := rows[len(rows)-1]
	if last.WaitMax != math.MaxInt64 || last.EndMax != math.MaxInt64 || last.EndMin < 0 {
		t.Errorf("last row = %+v, want saturated", last)
	}
}

func TestScheduleFits(t *testing.T) {
	ms := time.Millisecond
	p := retry.Policy{Attempts: 5, TimeBudget: 900 * ms, AttemptTimeout: 200 * ms,
		Backoff: backoff.Schedule{Base: 100 * ms, Cap: 400 * ms}}
	var got []string
	for _, r := range plan.Schedule(p, 200*ms) {
		got = append(got, r.Fits.String())
	}
	// Attempt 4 fits only after short waits (after the longest, attempt 3
	// ends at 900ms); attempt 5 never (attempt 4 ends at 800ms at best,
	// and a retry needs 200ms more).
	if fmt.Sprint(got) != "[yes yes yes maybe no]" {
		t.Errorf("fits = %v", got)
	}
	if f := plan.Schedule(retry.Policy{}, 10*ms)[0].Fits; f != plan.FitUnknown || f.String() != "" {
		t.Errorf("no TimeBudget: fits %v", f)
	}
	if n := len(plan.Schedule(retry.Policy{Attempts: retry.Unlimited}, ms)); n != 1000 {
		t.Errorf("unlimited: %d attempts listed", n)
	}
}

func TestChainAmplification(t *testing.T) {
	for _, tt := range []struct {
		layers, retries   int
		rate, ratio, flr  float64
		every, owner, bud float64
	}{
		{3, 3, 1000, 0.1, 10, 64, 4, 1.1}, // the ratio: more than the floor
		{3, 3, 50, 0.1, 10, 64, 4, 1.2},   // the floor: more than the ratio, not added to it
		{1, 2, 0, 0.1, 10, 3, 3, 1.1},
		{2, 1, 10, 0.5, 10, 4, 2, 2}, // the floor, capped by the policy's own retries
	} {
		a := plan.ChainAmplification(tt.layers, tt.retries, tt.rate, tt.ratio, tt.flr)
		if a.EveryLayer != tt.every || a.OneOwner != tt.owner || math.Abs(a.Budgeted-tt.bud) > 1e-9 {
			t.Errorf("%+v: %+v", tt, a)
		}
	}
}

func ExampleSchedule() {
	p := retry.Policy{Attempts: 4, TimeBudget: time.Second,
		Backoff: backoff.Schedule{Base: 100 * time.Millisecond, Cap: 400 * time.Millisecond}}
	fmt.Println(plan.Describe(p))
	for _, a := range plan.Schedule(p, 50*time.Millisecond) {
		fmt.Printf("attempt %d: waits %v to %v, ends by %v, fits: %v\n", a.Attempt, a.WaitMin, a.WaitMax, a.EndMax, a.Fits)
	}
	// Output:
	// 4 attempts; exponential backoff from 100ms, ×2 per retry, capped at 400ms; full jitter; deadline 1s
	// attempt 1: waits 0s to 0s, ends by 50ms, fits: yes
	// attempt 2: waits 0s to 100ms, ends by 200ms, fits: yes
	// attempt 3: waits 0s to 300ms, ends by 450ms, fits: yes
	// attempt 4: waits 0s to 700ms, ends by 900ms, fits: yes
}

func ExampleChainAmplification() {
	// Three layers each making 4 attempts, 1000 user actions/s, a 10%
	// budget with a floor of 10 retries/s on the one owner (a minimum: at
	// 1000 actions/s the ratio's 100 is more).
	a := plan.ChainAmplification(3, 3, 1000, 0.1, 10)
	fmt.Printf("every layer %.0f, one owner %.0f, budgeted %.2f attempts per action\n", a.EveryLayer, a.OneOwner, a.Budgeted)
	// Output:
	// every layer 64, one owner 4, budgeted 1.10 attempts per action
}
