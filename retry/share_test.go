package retry

import (
	"testing"
	"time"
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
