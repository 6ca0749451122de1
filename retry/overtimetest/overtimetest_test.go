package overtimetest

import (
	"math"
	"math/rand/v2"
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

// A deck fails exactly its share of every deck of draws, in a shuffled
// order; a share no deck of 100 holds is drawn independently.
func TestDeck(t *testing.T) {
	for _, tt := range []struct {
		share float64
		size  int
	}{
		{0, 0}, {0.5, 2}, {0.1, 10}, {0.25, 4}, {0.37, 100}, {1, 1}, {1.0 / 3, 3}, {0.123456, 0},
	} {
		rnd := rand.New(rand.NewPCG(1, 2))
		d := newDeck(tt.share, rnd)
		if d.size != tt.size {
			t.Errorf("share %v: deck of %d, want %d", tt.share, d.size, tt.size)
			continue
		}
		n := 100 * max(tt.size, 1)
		fails, firsts := 0, 0
		for i := range n {
			if d.draw() {
				fails++
				if tt.size > 0 && i%tt.size == 0 {
					firsts++
				}
			}
			if tt.size > 0 && (i+1)%tt.size == 0 && fails != int(math.Round(tt.share*float64(i+1))) {
				t.Fatalf("share %v: %d failures in %d draws", tt.share, fails, i+1)
			}
		}
		if tt.size > 1 && (firsts == 0 || firsts == 100) {
			t.Errorf("share %v: the first card of a deck failed in %d of 100 decks: not shuffled", tt.share, firsts)
		}
		if tt.size == 0 && tt.share > 0 && (fails < n/20 || fails > n/4) {
			t.Errorf("share %v: %d failures in %d independent draws", tt.share, fails, n)
		}
	}
}

// The outage bound comes from the budget's defaults, and those defaults
// keep issue 26's promise: a total outage at 100 users a second, from 5 s
// on (the suite's is 10 s), stays at most 1.10 attempts per user.
func TestOutageMean(t *testing.T) {
	for _, tt := range []struct {
		rate   float64
		length time.Duration
		want   float64
	}{
		{100, 5 * time.Second, 1.10},
		{100, 10 * time.Second, 1.095},
		{100, time.Minute, 1 + 0.09 + 5.0/6000},
		{1000, time.Hour, 1.09 + 5.0/3.6e6},
	} {
		if got := OutageMean(tt.rate, tt.length); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("OutageMean(%v, %v) = %.6f, want %.6f", tt.rate, tt.length, got, tt.want)
		}
	}
	for _, s := range Scenarios() {
		if s.Bounds.FaultMean > 1.10 {
			t.Errorf("%s: FaultMean bound %.4f, want at most 1.10", s.Name, s.Bounds.FaultMean)
		}
	}
}

// Users arrive at the scenario's rate, one in each interval of 1/Rate, at
// offsets into it that no two share, the same for every run of a
// scenario: an executor and the plain loop meet the same arrivals.
func TestArrivals(t *testing.T) {
	for _, s := range Scenarios() {
		if s.Rate == 0 {
			continue
		}
		at := arrivals(&s)
		gap := time.Duration(float64(time.Second) / s.Rate)
		if want := int((s.Length + gap - 1) / gap); len(at) != want { // as many as evenly spaced users from 0
			t.Fatalf("%s: %d users, want %d", s.Name, len(at), want)
		}
		offs := map[time.Duration]int{}
		for i, a := range at {
			off := a - time.Duration(i)*gap
			if off < 0 || off >= gap {
				t.Fatalf("%s: user %d at %v, outside [%v, %v)", s.Name, i, a, time.Duration(i)*gap, time.Duration(i+1)*gap)
			}
			if j, ok := offs[off]; ok {
				t.Fatalf("%s: users %d and %d both %v into their interval", s.Name, j, i, off)
			}
			offs[off] = i
		}
		for w := time.Duration(0); w+time.Second <= s.Length; w += step {
			if n := within(at, w, w+time.Second); math.Abs(float64(n)-s.Rate) > 1 {
				t.Fatalf("%s: %d users in the 1 s from %v, want %v ± 1", s.Name, n, w, s.Rate)
			}
		}
		if !slices.Equal(at, arrivals(&s)) {
			t.Fatalf("%s: two schedules for one scenario", s.Name)
		}
	}
}
