package retry

import (
	"testing"
	"time"

	"github.com/heed-go/heed/breaker"
	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/clock"
)

func TestShareLimit(t *testing.T) {
	ms := time.Millisecond
	dl := Limit{At: t0.Add(1000 * ms), Reason: ReasonDeadline}
	half := Limit{At: t0.Add(500 * ms), Reason: ReasonTimeout}
	tests := []struct {
		name  string
		p     Policy
		h     History
		lim   Limit
		share float64
		want  Limit
	}{
		{"first of 3 attempts: half", Policy{}, History{}, dl, 0.5, half},
		{"second of 3: half of what is left", Policy{}, History{Attempts: 1}, dl, 0.5, half},
		{"last attempt: all", Policy{}, History{Attempts: 2}, dl, 0.5, dl},
		{"one attempt: all", Policy{Attempts: 1}, History{}, dl, 0.5, dl},
		{"unlimited attempts: half", Policy{Attempts: Unlimited}, History{Attempts: 7}, dl, 0.5, half},
		{"own timeout: untouched", Policy{AttemptTimeout: 2 * time.Second}, History{}, dl, 0.5, dl},
		{"upstream owns: all", Policy{}, History{UpstreamOwns: true}, dl, 0.5, dl},
		{"time budget: untouched", Policy{}, History{}, Limit{At: dl.At, Reason: ReasonTimeBudget}, 0.5, Limit{At: dl.At, Reason: ReasonTimeBudget}},
		{"share off", Policy{}, History{}, dl, 0, dl},
		{"share too small for MinAttempt", Policy{MinAttemptTime: 600 * ms}, History{}, dl, 0.5, dl},
	}
	for _, tt := range tests {
		c := Call{Policy: tt.p, History: tt.h}
		if got := c.ShareLimit(tt.lim, t0, tt.share); got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

// AdmitFirst admits a first attempt as a Call's Admit and ShareLimit do,
// or declines when only a Call can: the same Limit, the same request in
// the budget, and nothing counted when it declines.
func TestAdmitFirst(t *testing.T) {
	ms := time.Millisecond
	br, err := breaker.New(breaker.Config{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		p     Policy
		dl    time.Time
		share float64
		owns  bool
		ok    bool
	}{
		{"no deadline", Policy{}, time.Time{}, 0.5, false, true},
		{"deadline, no share", Policy{}, t0.Add(time.Second), 0, false, true},
		{"deadline, half", Policy{}, t0.Add(time.Second), 0.5, false, true},
		{"deadline, upstream owns: all", Policy{}, t0.Add(time.Second), 0.5, true, true},
		{"one attempt: all", Policy{Attempts: 1}, t0.Add(time.Second), 0.5, false, true},
		{"share below MinAttempt: all", Policy{MinAttemptTime: 600 * ms}, t0.Add(time.Second), 0.5, false, true},
		{"deadline passed", Policy{}, t0, 0.5, false, false},
		{"attempt timeout", Policy{AttemptTimeout: time.Second}, time.Time{}, 0, false, false},
		{"time budget", Policy{TimeBudget: time.Second}, time.Time{}, 0, false, false},
		{"breaker", Policy{Breaker: br}, time.Time{}, 0, false, false},
		{"clock", Policy{Clock: clock.Real{}}, time.Time{}, 0, false, false},
	}
	for _, tt := range tests {
		first, err := budget.New(budget.Config{})
		if err != nil {
			t.Fatal(err)
		}
		p := tt.p
		p.Budget = first
		lim, ok := p.AdmitFirst(t0, tt.dl, tt.share, tt.owns)
		if ok != tt.ok {
			t.Errorf("%s: admitted %v, want %v", tt.name, ok, tt.ok)
			continue
		}
		if !ok {
			if n := first.StatsAt(t0).Requests; n != 0 {
				t.Errorf("%s: declined, but counted %d requests", tt.name, n)
			}
			continue
		}
		viaCall, err := budget.New(budget.Config{})
		if err != nil {
			t.Fatal(err)
		}
		q := tt.p
		q.Budget = viaCall
		c := Call{Policy: q, History: History{Deadline: tt.dl, UpstreamOwns: tt.owns}}
		want, wok := c.Admit(t0)
		if !wok {
			t.Fatalf("%s: Admit refused what AdmitFirst admitted", tt.name)
		}
		want = c.ShareLimit(want, t0, tt.share)
		if lim != want {
			t.Errorf("%s: limit %+v, want %+v (Admit, ShareLimit)", tt.name, lim, want)
		}
		if a, b := first.StatsAt(t0).Requests, viaCall.StatsAt(t0).Requests; a != 1 || b != 1 {
			t.Errorf("%s: requests counted %d, want 1 as Admit counts (%d)", tt.name, a, b)
		}
	}
}
