package backoff

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/heed-go/heed/internal/fielderr"
)

func TestDelay(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name string
		s    Schedule
		n    int
		want time.Duration
	}{
		{"default first", Schedule{}, 1, 100 * ms},
		{"default second", Schedule{}, 2, 200 * ms},
		{"default capped", Schedule{}, 7, 5 * time.Second},
		{"n below 1 counts as 1", Schedule{}, -5, 100 * ms},
		{"zero n", Schedule{}, 0, 100 * ms},
		{"huge n", Schedule{}, math.MaxInt, 5 * time.Second},
		{"shift edge 63", Schedule{Base: 1, Cap: math.MaxInt64}, 64, math.MaxInt64},
		{"shift 62", Schedule{Base: 1, Cap: math.MaxInt64}, 63, 1 << 62},
		{"multiplier 3", Schedule{Base: ms, Multiplier: 3, Cap: time.Hour}, 3, 9 * ms},
		{"multiplier 1.5 huge n", Schedule{Base: ms, Multiplier: 1.5, Cap: time.Hour}, math.MaxInt, time.Hour},
		{"multiplier 1 stays", Schedule{Base: ms, Multiplier: 1}, 1000, ms},
		{"constant", Schedule{Kind: Constant, Base: 3 * ms}, 50, 3 * ms},
		{"linear", Schedule{Kind: Linear, Base: 10 * ms, Cap: time.Second}, 4, 40 * ms},
		{"linear capped", Schedule{Kind: Linear, Base: 10 * ms, Cap: time.Second}, 1000, time.Second},
		{"linear huge n", Schedule{Kind: Linear, Base: 10 * ms, Cap: time.Second}, math.MaxInt, time.Second},
		{"immediate", Schedule{Kind: Immediate}, 3, 0},
		{"base above default cap", Schedule{Base: time.Minute}, 1, time.Minute},
		{"max base max cap", Schedule{Base: math.MaxInt64, Cap: math.MaxInt64}, math.MaxInt, math.MaxInt64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.s.Delay(tt.n); got != tt.want {
				t.Errorf("Delay(%d) = %v, want %v", tt.n, got, tt.want)
			}
		})
	}
}

func TestRange(t *testing.T) {
	s := Schedule{Base: 100 * time.Millisecond, Cap: time.Second}
	tests := []struct {
		name   string
		j      Jitter
		n      int
		prev   time.Duration
		lo, hi time.Duration
	}{
		{"full", FullJitter, 2, 0, 0, 200 * time.Millisecond},
		{"none", NoJitter, 2, 0, 200 * time.Millisecond, 200 * time.Millisecond},
		{"equal", EqualJitter, 2, 0, 100 * time.Millisecond, 200 * time.Millisecond},
		{"decorrelated first", DecorrelatedJitter, 1, 0, 100 * time.Millisecond, 300 * time.Millisecond},
		{"decorrelated grows", DecorrelatedJitter, 5, 200 * time.Millisecond, 100 * time.Millisecond, 600 * time.Millisecond},
		{"decorrelated capped", DecorrelatedJitter, 5, 900 * time.Millisecond, 100 * time.Millisecond, time.Second},
		{"decorrelated huge prev", DecorrelatedJitter, 5, math.MaxInt64, 100 * time.Millisecond, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := s
			s.Jitter = tt.j
			lo, hi := s.Range(tt.n, tt.prev)
			if lo != tt.lo || hi != tt.hi {
				t.Errorf("Range = [%v, %v], want [%v, %v]", lo, hi, tt.lo, tt.hi)
			}
		})
	}
}

func TestNextSeededReproducible(t *testing.T) {
	for _, j := range []Jitter{FullJitter, NoJitter, EqualJitter, DecorrelatedJitter} {
		s := Schedule{Jitter: j}
		a, b := rand.NewPCG(7, 9), rand.NewPCG(7, 9)
		var pa, pb time.Duration
		for n := 1; n < 50; n++ {
			pa, pb = s.Next(n, pa, a), s.Next(n, pb, b)
			if pa != pb {
				t.Fatalf("%v: attempt %d: %v != %v", j, n, pa, pb)
			}
		}
	}
}

// Full jitter must spread over its whole range, not cluster.
func TestFullJitterSpread(t *testing.T) {
	s := Schedule{Base: time.Second, Kind: Constant}
	r := rand.NewPCG(1, 1)
	var below, above int
	for range 10000 {
		d := s.Next(1, 0, r)
		if d < 0 || d > time.Second {
			t.Fatalf("out of range: %v", d)
		}
		if d < 250*time.Millisecond {
			below++
		}
		if d > 750*time.Millisecond {
			above++
		}
	}
	if below < 2200 || below > 2800 || above < 2200 || above > 2800 {
		t.Errorf("not uniform: %d below 25%%, %d above 75%%", below, above)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		s     Schedule
		field string
	}{
		{Schedule{}, ""},
		{Schedule{Kind: Constant, Base: time.Second, Jitter: NoJitter}, ""},
		{Schedule{Base: -1}, "Base"},
		{Schedule{Cap: -1}, "Cap"},
		{Schedule{Base: time.Second, Cap: time.Millisecond}, "Cap"},
		{Schedule{Cap: time.Millisecond}, "Cap"}, // below the default base
		{Schedule{Multiplier: 0.5}, "Multiplier"},
		{Schedule{Multiplier: -2}, "Multiplier"},
		{Schedule{Multiplier: math.NaN()}, "Multiplier"},
		{Schedule{Kind: 9}, "Kind"},
		{Schedule{Jitter: 9}, "Jitter"},
	}
	for _, tt := range tests {
		err := tt.s.Validate()
		if tt.field == "" {
			if err != nil {
				t.Errorf("%+v: unexpected %v", tt.s, err)
			}
			continue
		}
		fe, ok := fielderr.As(err)
		if !ok || fe.Field != tt.field || !errors.Is(err, ErrInvalid) || err.Error() != "backoff: "+fe.Field+" "+fe.Reason {
			t.Errorf("%+v: got %v, want an error naming %s", tt.s, err, tt.field)
		}
	}
}

func TestParse(t *testing.T) {
	for _, k := range []Kind{Exponential, Constant, Linear, Immediate} {
		if got, err := parseKind(k.String()); err != nil || got != k {
			t.Errorf("parseKind(%q) = %v, %v", k, got, err)
		}
	}
	for _, j := range []Jitter{FullJitter, NoJitter, EqualJitter, DecorrelatedJitter} {
		if got, err := parseJitter(j.String()); err != nil || got != j {
			t.Errorf("parseJitter(%q) = %v, %v", j, got, err)
		}
	}
	if _, err := parseKind("fibonacci"); err == nil {
		t.Error("parseKind accepted fibonacci")
	}
	if _, err := parseJitter("Full"); err == nil {
		t.Error("parseJitter accepted Full")
	}
}

// FuzzSchedule checks the invariants for any configuration and attempt
// number: never negative, never above the cap, never a panic.
func FuzzSchedule(f *testing.F) {
	f.Add(uint8(0), int64(100e6), int64(5e9), 2.0, uint8(0), math.MaxInt, int64(0), uint64(1))
	f.Add(uint8(2), int64(1), int64(math.MaxInt64), 1.0, uint8(3), 1, int64(math.MaxInt64), uint64(2))
	f.Add(uint8(0), int64(math.MaxInt64), int64(0), 1e300, uint8(2), 62, int64(-5), uint64(3))
	f.Fuzz(func(t *testing.T, kind uint8, base, cp int64, mult float64, jit uint8, n int, prev int64, seed uint64) {
		s := Schedule{Kind: Kind(kind % 4), Base: time.Duration(base), Cap: time.Duration(cp), Multiplier: mult, Jitter: Jitter(jit % 4)}
		if s.Validate() != nil {
			return
		}
		limit := s.cap()
		r := rand.NewPCG(seed, seed)
		d := s.Delay(n)
		if d < 0 || d > limit {
			t.Fatalf("Delay(%d) = %v outside [0, %v] for %+v", n, d, limit, s)
		}
		lo, hi := s.Range(n, time.Duration(prev))
		if lo < 0 || hi > limit || lo > hi {
			t.Fatalf("Range = [%v, %v] for %+v", lo, hi, s)
		}
		x := s.Next(n, time.Duration(prev), r)
		if x < lo || x > hi {
			t.Fatalf("Next = %v outside [%v, %v]", x, lo, hi)
		}
	})
}

func BenchmarkNext(b *testing.B) {
	s := Schedule{}
	r := rand.NewPCG(1, 2)
	for i := 0; b.Loop(); i++ {
		_ = s.Next(i%10+1, 0, r)
	}
}
