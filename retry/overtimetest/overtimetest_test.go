package overtimetest

import (
	"slices"
	"testing"
	"time"
)

// The load accounting: attempts per user in a span, and the worst 1 s
// window, on traces made by hand.
func TestLoad(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	// 10 users a second for 3 s; 2 extra attempts at 1.5 s, 3 at 2.95 s.
	var users []time.Duration
	for i := range 30 {
		users = append(users, time.Duration(i)*100*time.Millisecond)
	}
	attempts := append(append(append([]time.Duration(nil), users...), ms(1500, 1500)...), ms(2950, 2950, 2950)...)
	slices.Sort(attempts)
	tr := Trace{Users: users, Attempts: attempts}
	for _, tt := range []struct {
		a, b time.Duration
		want float64
	}{
		{0, 3 * time.Second, 35.0 / 30},
		{0, time.Second, 1},
		{time.Second, 2 * time.Second, 1.2},
		{2 * time.Second, 3 * time.Second, 1.3},
		{5 * time.Second, 6 * time.Second, 0}, // no users
	} {
		if got := load(tr, tt.a, tt.b); got != tt.want {
			t.Errorf("load [%v, %v) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
	// The worst window is the first to hold the 3 attempts at 2.95 s:
	// from 1.96 s, with the 10 users from 2.0 s to 2.9 s.
	worst, at := worstWindow(tr, 0, 2*time.Second)
	if worst != 1.3 || at != 1960*time.Millisecond {
		t.Errorf("worst window %v from %v, want 1.3 from 1.96s", worst, at)
	}
}
