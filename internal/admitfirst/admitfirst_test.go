package admitfirst

import (
	"reflect"
	"testing"
	"time"

	"github.com/heed-go/heed/breaker"
	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/clock"
	"github.com/heed-go/heed/clock/clocktest"
	"github.com/heed-go/heed/retry"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// Admit admits a first attempt as a Call's Admit and ShareLimit do, or
// declines when only a Call can: the same Limit, the same request in the
// budget, and nothing counted when it declines. The Call an executor
// starts after it (History.Start now, Deadline dl, UpstreamOwns) is the
// one Admit leaves: whatever it does next (End after a failure, or Race,
// for a hedged call) goes as through Admit.
func TestAdmit(t *testing.T) {
	ms := time.Millisecond
	br, err := breaker.New(breaker.Config{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		p     retry.Policy
		dl    time.Time
		share float64
		owns  bool
		ok    bool
	}{
		{"no deadline", retry.Policy{}, time.Time{}, 0.5, false, true},
		{"deadline, no share", retry.Policy{}, t0.Add(time.Second), 0, false, true},
		{"deadline, half", retry.Policy{}, t0.Add(time.Second), 0.5, false, true},
		{"deadline, share 1: all", retry.Policy{}, t0.Add(time.Second), 1, false, true},
		{"deadline, upstream owns: all", retry.Policy{}, t0.Add(time.Second), 0.5, true, true},
		{"one attempt: all", retry.Policy{Attempts: 1}, t0.Add(time.Second), 0.5, false, true},
		{"unlimited attempts: half", retry.Policy{Attempts: retry.Unlimited}, t0.Add(time.Second), 0.5, false, true},
		{"share below MinAttempt: all", retry.Policy{MinAttemptTime: 600 * ms}, t0.Add(time.Second), 0.5, false, true},
		{"deadline passed", retry.Policy{}, t0, 0.5, false, false},
		{"attempt timeout", retry.Policy{AttemptTimeout: time.Second}, time.Time{}, 0, false, false},
		{"time budget", retry.Policy{TimeBudget: time.Second}, time.Time{}, 0, false, false},
		{"breaker", retry.Policy{Breaker: br}, time.Time{}, 0, false, false},
		{"clock", retry.Policy{Clock: clock.Real{}}, time.Time{}, 0, false, false},
		{"hedge", retry.Policy{Hedge: &retry.Hedge{Delay: ms}}, t0.Add(time.Second), 0, false, true},
		{"adaptive hedge, half", retry.Policy{Hedge: &retry.Hedge{}}, t0.Add(time.Second), 0.5, false, true},
	}
	for _, tt := range tests {
		first, err := budget.New(budget.Config{Clock: clocktest.New(t0)})
		if err != nil {
			t.Fatal(err)
		}
		p := tt.p
		p.Budget = first
		lim, ok := Admit(&p, t0, tt.dl, tt.share, tt.owns)
		if ok != tt.ok {
			t.Errorf("%s: admitted %v, want %v", tt.name, ok, tt.ok)
			continue
		}
		if !ok {
			if n := first.Stats().Requests; n != 0 {
				t.Errorf("%s: declined, but counted %d requests", tt.name, n)
			}
			continue
		}
		viaCall, err := budget.New(budget.Config{Clock: clocktest.New(t0)})
		if err != nil {
			t.Fatal(err)
		}
		q := tt.p
		q.Budget = viaCall
		c := retry.Call{Policy: q, History: retry.History{Deadline: tt.dl, UpstreamOwns: tt.owns}}
		want, wok := c.Admit(t0)
		if !wok {
			t.Fatalf("%s: Admit refused what admitfirst.Admit admitted", tt.name)
		}
		want = c.ShareLimit(want, t0, tt.share)
		if lim != want {
			t.Errorf("%s: limit %+v, want %+v (Admit, ShareLimit)", tt.name, lim, want)
		}
		if a, b := first.Stats().Requests, viaCall.Stats().Requests; a != 1 || b != 1 {
			t.Errorf("%s: requests counted %d, want 1 as Admit counts (%d)", tt.name, a, b)
		}
		started := retry.Call{Policy: q, History: retry.History{Start: t0, Deadline: tt.dl, UpstreamOwns: tt.owns}}
		if !reflect.DeepEqual(started, c) {
			t.Errorf("%s: the Call started after Admit is\n%+v, Admit leaves\n%+v", tt.name, started, c)
		}
	}
}
