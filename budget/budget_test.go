package budget

import (
	"errors"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heed-go/heed/clock/clocktest"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

func mustNew(t testing.TB, cfg Config) *Budget {
	t.Helper()
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// grant asks for n retries at now and returns how many were allowed.
func grant(b *Budget, now time.Time, n int) int {
	g := 0
	for range n {
		if b.AllowRetryAt(now) {
			g++
		}
	}
	return g
}

func TestValidate(t *testing.T) {
	tests := []struct {
		cfg   Config
		field string
		msg   string
	}{
		{Config{Ratio: -0.5}, "Ratio", "budget: Ratio is -0.5, must not be negative"},
		{Config{Ratio: math.NaN()}, "Ratio", "budget: Ratio is NaN, must be a number"},
		{Config{Ratio: 1001}, "Ratio", "budget: Ratio is 1001, must be at most 1000"},
		{Config{Ratio: math.Inf(1)}, "Ratio", "budget: Ratio is +Inf, must be at most 1000"},
		{Config{Window: -time.Second}, "Window", "budget: Window is -1s, must not be negative"},
		{Config{Window: time.Millisecond}, "Window", "budget: Window is 1ms, must be at least 10ms"},
		{Config{Window: 2 * time.Hour}, "Window", "budget: Window is 2h0m0s, must be at most 1h0m0s"},
		{Config{MinPerSecond: -1}, "MinPerSecond", "budget: MinPerSecond is -1, must not be negative"},
		{Config{MinPerSecond: math.NaN()}, "MinPerSecond", "budget: MinPerSecond is NaN, must be a number"},
		{Config{MinPerSecond: math.Inf(1)}, "MinPerSecond", "budget: MinPerSecond is +Inf, must be finite"},
		{Config{}, "", ""},
		{Config{Ratio: None, MinPerSecond: None}, "", ""},
		{Config{Ratio: MaxRatio, Window: MinWindow, MinPerSecond: 1e6}, "", ""},
		{Config{Window: MaxWindow}, "", ""},
	}
	for _, tt := range tests {
		b, err := New(tt.cfg)
		if tt.field == "" {
			if err != nil || b == nil {
				t.Errorf("New(%+v) = %v, %v; want a budget", tt.cfg, b, err)
			}
			continue
		}
		if b != nil || err == nil {
			t.Fatalf("New(%+v) = %v, %v; want an error", tt.cfg, b, err)
		}
		if err.Error() != tt.msg {
			t.Errorf("New(%+v) error %q, want %q", tt.cfg, err, tt.msg)
		}
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("error %v does not match ErrInvalid", err)
		}
		var ie *InvalidError
		if !errors.As(err, &ie) || ie.Field != tt.field {
			t.Errorf("error %v: want *InvalidError for field %s", err, tt.field)
		}
		if !strings.Contains(err.Error(), tt.field) {
			t.Errorf("error %q does not name %s", err, tt.field)
		}
	}
	if errors.Is(ErrExhausted, ErrInvalid) {
		t.Error("ErrExhausted matches ErrInvalid")
	}
}

// TestRatioAndFloor checks the rule retries+1 <= Ratio×requests + floor,
// with the requests in one bucket and the retries in the next.
func TestRatioAndFloor(t *testing.T) {
	tests := []struct {
		name     string
		cfg      Config
		requests int
		want     int // retries granted when asking for many more
	}{
		{"defaults, no traffic: floor only", Config{}, 0, 10},
		{"defaults, 100 requests", Config{}, 100, 20},
		{"defaults, 1000 requests", Config{}, 1000, 110},
		{"defaults, 9 requests rounds down", Config{}, 9, 10},
		{"defaults, 15 requests", Config{}, 15, 11},
		{"no floor, 9 requests", Config{MinPerSecond: None}, 9, 0},
		{"no floor, 10 requests", Config{MinPerSecond: None}, 10, 1},
		{"no floor, 1000 requests", Config{MinPerSecond: None}, 1000, 100},
		{"float rounding 0.29x100", Config{Ratio: 0.29, MinPerSecond: None}, 100, 29},
		{"float rounding 0.1x30", Config{Ratio: 0.1, MinPerSecond: None}, 30, 3},
		{"floor only", Config{Ratio: None, MinPerSecond: 3}, 1000, 30},
		{"nothing", Config{Ratio: None, MinPerSecond: None}, 1000, 0},
		{"ratio 1, short window", Config{Ratio: 1, Window: time.Second, MinPerSecond: 2}, 50, 52},
		{"fractional floor", Config{Ratio: None, Window: time.Second, MinPerSecond: 2.5}, 0, 2},
		{"ratio above 1", Config{Ratio: 2.5, MinPerSecond: None}, 4, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Burst = 1 // the window's rule alone; TestBurst checks the step's
			b := mustNew(t, tt.cfg)
			for range tt.requests {
				b.RequestAt(t0)
			}
			next := t0.Add(time.Duration(b.width)) // the next bucket
			ask := tt.want + 50
			if got := grant(b, next, ask); got != tt.want {
				t.Fatalf("granted %d, want %d", got, tt.want)
			}
			want := Stats{Requests: int64(tt.requests), Retries: int64(tt.want), Denied: int64(ask - tt.want)}
			if s := b.StatsAt(next); s != want {
				t.Fatalf("stats %+v, want %+v", s, want)
			}
		})
	}
}

// TestBurst: in an outage of a steady load, where every failed call asks
// for a retry, no second sees more retries than the Burst share of the
// window's allowance, and over the outage retries stay near Ratio of the
// requests (a plain sliding window spends a whole window's allowance in
// the first second of every window: 2.1× at 100 requests/s).
func TestBurst(t *testing.T) {
	b := mustNew(t, Config{})
	const rate = 100 // requests per second, in steps of 10 ms
	var perSecond [60]int
	wanting := 0 // failed calls waiting for a retry
	for ms := 0; ms < 60_000; ms += 10 {
		now := at(time.Duration(ms) * time.Millisecond)
		b.RequestAt(now)
		if ms < 20_000 {
			continue // healthy: no retries wanted
		}
		wanting++
		for wanting > 0 && b.AllowRetryAt(now) {
			wanting-- // the retry fails too, and is not retried again here
			perSecond[ms/1000]++
		}
	}
	total := 0
	for sec, n := range perSecond[20:] {
		total += n
		// The limit: 15% of (0.1 × 1000 requests + 10), so 16 a second.
		if n > 16 {
			t.Errorf("second %d: %d retries granted, want at most 16 (%.2f× the requests)", sec+20, n, 1+float64(n)/rate)
		}
	}
	// 40 s of outage at 10% of 100 requests/s plus the floor of 1/s: 440.
	if mean := float64(total) / 40; mean < 10 || mean > 11.5 {
		t.Errorf("%.1f retries a second over the outage, want about 11", mean)
	}
}

// TestRefillAt: a denied retry may be granted again at the next step.
func TestRefillAt(t *testing.T) {
	b := mustNew(t, Config{Ratio: 1, MinPerSecond: None, Burst: 0.1}) // 10 of 100 per step
	for range 100 {
		b.RequestAt(t0)
	}
	now := t0.Add(1500 * time.Millisecond)
	if g := grant(b, now, 20); g != 10 {
		t.Fatalf("granted %d in one step, want 10", g)
	}
	next := b.RefillAt(now)
	if want := t0.Add(2 * time.Second); !next.Equal(want) {
		t.Fatalf("RefillAt = %v, want %v", next, want)
	}
	if b.AllowRetryAt(next.Add(-time.Nanosecond)) || !b.AllowRetryAt(next) {
		t.Fatal("want a retry denied just before RefillAt and granted at it")
	}
}

// TestSliding walks one budget through time: requests count towards the
// limit once their bucket is complete, and requests and retries expire
// after the window, in steps of a bucket.
func TestSliding(t *testing.T) {
	b := mustNew(t, Config{Ratio: 0.5, Window: 10 * time.Second, MinPerSecond: None, Burst: 1})
	type step struct {
		at       time.Duration
		requests int
		ask      int
		granted  int
		stats    Stats // at the same instant, after the step
	}
	steps := []step{
		{0, 10, 0, 0, Stats{10, 0, 0}},
		// 0.5 s: the requests' bucket is not complete yet.
		{500 * time.Millisecond, 0, 1, 0, Stats{10, 0, 1}},
		// 1 s: it is; limit 0.5 × 10.
		{time.Second, 0, 10, 5, Stats{10, 5, 6}},
		// Requests at 3 s raise the limit from 4 s.
		{3 * time.Second, 4, 3, 0, Stats{14, 5, 9}},
		{4 * time.Second, 0, 3, 2, Stats{14, 7, 10}},
		{9*time.Second + 999*time.Millisecond, 0, 1, 0, Stats{14, 7, 11}},
		// 10 s: the window [1 s, 11 s) has lost bucket 0's requests and
		// its denial; the limit, from the requests of [0 s, 10 s), is 7.
		{10 * time.Second, 0, 1, 0, Stats{4, 7, 11}},
		// 11 s: limit 0.5 × 4; the retries at 1 s expired, 2 are left.
		{11 * time.Second, 0, 1, 0, Stats{4, 2, 7}},
		{11 * time.Second, 2, 2, 0, Stats{6, 2, 9}},
		// 12 s: the requests at 11 s count: limit 3.
		{12 * time.Second, 0, 2, 1, Stats{6, 3, 10}},
		{14 * time.Second, 0, 0, 0, Stats{2, 1, 6}},
		// A long gap: everything expired.
		{time.Hour, 0, 0, 0, Stats{}},
		{time.Hour, 2, 2, 0, Stats{2, 0, 2}},
		{time.Hour + time.Second, 0, 2, 1, Stats{2, 1, 3}},
	}
	for i, s := range steps {
		now := at(s.at)
		for range s.requests {
			b.RequestAt(now)
		}
		if g := grant(b, now, s.ask); g != s.granted {
			t.Fatalf("step %d at %v: granted %d, want %d", i, s.at, g, s.granted)
		}
		if got := b.StatsAt(now); got != s.stats {
			t.Fatalf("step %d at %v: stats %+v, want %+v", i, s.at, got, s.stats)
		}
	}
}

// TestFloorRenews: the floor is per window, not per call: it renews as the
// window slides.
func TestFloorRenews(t *testing.T) {
	b := mustNew(t, Config{}) // 10 per 10 s window
	total := 0
	for sec := range 30 {
		total += grant(b, at(time.Duration(sec)*time.Second), 5)
	}
	// Each 10 s window grants at most 10; 30 s hold three windows.
	if total != 30 {
		t.Fatalf("granted %d over 30 s, want 30", total)
	}
}

func TestZeroValue(t *testing.T) {
	var z Budget
	d := mustNew(t, Config{})
	for i := range 200 {
		now := at(time.Duration(i) * 100 * time.Millisecond)
		z.RequestAt(now)
		d.RequestAt(now)
		if i%3 == 0 {
			if a, b := z.AllowRetryAt(now), d.AllowRetryAt(now); a != b {
				t.Fatalf("step %d: zero value %v, New(Config{}) %v", i, a, b)
			}
		}
	}
	if a, b := z.StatsAt(at(20*time.Second)), d.StatsAt(at(20*time.Second)); a != b {
		t.Fatalf("zero value %+v, New(Config{}) %+v", a, b)
	}
	// The wrappers of a zero Budget read real time.
	var r Budget
	r.Request()
	if !r.AllowRetry() {
		t.Fatal("zero Budget denied its first retry")
	}
	if s := r.Stats(); s != (Stats{1, 1, 0}) {
		t.Fatalf("real-time stats %+v", s)
	}
}

// TestClock: the wrappers read Config.Clock.
func TestClock(t *testing.T) {
	c := clocktest.New(t0)
	b := mustNew(t, Config{Ratio: None, MinPerSecond: 1, Window: time.Second, Clock: c})
	b.Request()
	if !b.AllowRetry() || b.AllowRetry() {
		t.Fatal("want one retry per second")
	}
	c.Advance(time.Second)
	if !b.AllowRetry() {
		t.Fatal("floor did not renew after the window")
	}
	if s, want := b.Stats(), (Stats{0, 1, 0}); s != want {
		t.Fatalf("stats %+v, want %+v", s, want)
	}
	// An earlier time reports the window as it stands, ending at the
	// newest bucket: t0's bucket has left it.
	if s, want := b.StatsAt(t0), (Stats{0, 1, 0}); s != want {
		t.Fatalf("stats at t0 %+v, want %+v", s, want)
	}
}

// TestClockBackwards: times before the newest bucket never corrupt state.
func TestClockBackwards(t *testing.T) {
	b := mustNew(t, Config{Ratio: 0.5, MinPerSecond: None, Burst: 1})
	for range 10 {
		b.RequestAt(at(20 * time.Second))
	}
	// A little earlier (a caller that read the clock before another):
	// counted in the newest bucket, so it expires with it.
	for range 2 {
		b.RequestAt(at(15 * time.Second))
	}
	if s := b.StatsAt(at(20 * time.Second)); s.Requests != 12 {
		t.Fatalf("stats %+v, want 12 requests", s)
	}
	if s := b.StatsAt(at(29 * time.Second)); s.Requests != 12 {
		t.Fatalf("at 29s: stats %+v, want 12 requests", s)
	}
	// Before the whole window, and the zero time: the same, never
	// resetting a live bucket.
	b.RequestAt(at(5 * time.Second))
	b.RequestAt(time.Time{})
	b.RequestAt(time.Unix(-1<<40, 0))
	if s := b.StatsAt(at(20 * time.Second)); s.Requests != 15 {
		t.Fatalf("stats %+v, want 15 requests", s)
	}
	// A retry a second later completes the bucket: limit 0.5 × 15. Then
	// retries at an old time count in the newest bucket too.
	if g := grant(b, at(21*time.Second), 1); g != 1 {
		t.Fatalf("granted %d at 21s, want 1", g)
	}
	if g := grant(b, at(0), 10); g != 6 {
		t.Fatalf("granted %d at an old time, want 6", g)
	}
	// StatsAt with an old time reports the window as it stands.
	if s := b.StatsAt(time.Time{}); s != (Stats{15, 7, 4}) {
		t.Fatalf("stats at zero time %+v", s)
	}
	// The window still slides when time moves on.
	if s := b.StatsAt(at(30 * time.Second)); s != (Stats{0, 7, 4}) {
		t.Fatalf("at 30s: stats %+v, want only the retries at 21s", s)
	}
	if s := b.StatsAt(at(31 * time.Second)); s != (Stats{}) {
		t.Fatalf("at 31s: stats %+v, want empty", s)
	}
}

// TestFarFuture: a time far ahead (here beyond the clamped range) moves the
// window there; later real times count in that bucket, which never
// completes, so only the floor is left (none here) and nothing is lost.
func TestFarFuture(t *testing.T) {
	b := mustNew(t, Config{Ratio: 0.1, MinPerSecond: None})
	for range 100 {
		b.RequestAt(t0)
	}
	b.RequestAt(time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC))
	for range 99 {
		b.RequestAt(t0.Add(time.Second))
	}
	if g := grant(b, t0.Add(time.Second), 20); g != 0 {
		t.Fatalf("granted %d, want 0", g)
	}
	if s := b.StatsAt(t0); s != (Stats{100, 0, 20}) {
		t.Fatalf("stats %+v", s)
	}
}

func TestEpochOf(t *testing.T) {
	w := int64(time.Second)
	tests := []struct {
		t    time.Time
		want int64
	}{
		{time.Unix(0, 0), 0},
		{time.Unix(0, 999_999_999), 0},
		{time.Unix(1, 0), 1},
		{time.Unix(-1, 0), -1},
		{time.Unix(0, -1), -1},
		{time.Unix(-1, -1), -2},
		{t0, t0.Unix()},
		{t0.Add(-time.Nanosecond), t0.Unix() - 1},
	}
	for _, tt := range tests {
		if got := epochOf(unixNano(tt.t), w); got != tt.want {
			t.Errorf("epochOf(%v) = %d, want %d", tt.t, got, tt.want)
		}
	}
	// Times out of range clamp, in order, without overflow.
	lo, hi := unixNano(time.Time{}), unixNano(time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC))
	if lo != minSec*1e9 || hi != maxSec*1e9 {
		t.Errorf("clamped epochs %d, %d", lo, hi)
	}
	// A time from time.Now is placed by its monotonic reading, which
	// agrees with its wall clock while the wall clock has not stepped.
	now := time.Now()
	if d := unixNano(now) - now.UnixNano(); d < -int64(time.Second) || d > int64(time.Second) {
		t.Errorf("time.Now placed %v away from its wall clock", time.Duration(d))
	}
}

// TestAcross1970: buckets map to slots consistently across epoch 0, where
// a naive modulo would collide.
func TestAcross1970(t *testing.T) {
	b := mustNew(t, Config{Window: 10 * time.Second})
	for s := -5; s <= 4; s++ {
		b.RequestAt(time.Unix(int64(s), 0))
	}
	if st := b.StatsAt(time.Unix(4, 0)); st.Requests != 10 {
		t.Fatalf("stats %+v, want 10 requests", st)
	}
	if st := b.StatsAt(time.Unix(5, 0)); st.Requests != 9 {
		t.Fatalf("stats %+v, want 9 requests", st)
	}
}

// TestOutage is the measured property: a total outage, 1,000 requests/s
// for 60 virtual seconds, 3 attempts per request. The retries granted stay
// within 10% of the requests plus the floor, and most of that is used.
func TestOutage(t *testing.T) {
	b := mustNew(t, Config{}) // 10%, 10 s window, 1/s floor
	const (
		perSecond = 1000
		seconds   = 60
		retries   = 2 // 3 attempts
	)
	var requests, granted, denied int
	for s := range seconds {
		for i := range perSecond {
			// Spread over the second; each retry a little later.
			start := at(time.Duration(s)*time.Second + time.Duration(i)*time.Second/perSecond)
			b.RequestAt(start)
			requests++
			for r := 1; r <= retries; r++ {
				if !b.AllowRetryAt(start.Add(time.Duration(r) * 300 * time.Microsecond)) {
					denied++
					break // a refused retry ends the call
				}
				granted++
			}
		}
	}
	floor := DefaultMinPerSecond * seconds
	limit := DefaultRatio*float64(requests) + floor
	t.Logf("requests %d, retries granted %d (%.2f%%), denied %d, limit %.0f, amplification %.3fx",
		requests, granted, 100*float64(granted)/float64(requests), denied, limit,
		float64(requests+granted)/float64(requests))
	if float64(granted) > limit {
		t.Errorf("granted %d retries, more than 0.1 × %d + %.0f = %.0f", granted, requests, floor, limit)
	}
	if float64(granted) < 0.09*float64(requests) {
		t.Errorf("granted %d retries, fewer than 9%% of %d requests", granted, requests)
	}
	// Any one window holds at most its share.
	for s := 10; s <= seconds; s++ {
		st := b.StatsAt(at(time.Duration(s)*time.Second - time.Nanosecond))
		if float64(st.Retries) > DefaultRatio*float64(st.Requests)*(1+eps)+10 {
			t.Errorf("window ending at %ds: %+v over budget", s, st)
		}
	}
}

// TestConcurrentExact: many goroutines record requests in one bucket,
// then race for retries in the next. Every call is counted exactly once,
// and racing retries get exactly the limit, never more.
func TestConcurrentExact(t *testing.T) {
	b := mustNew(t, Config{Burst: 1})
	const goroutines, perG = 16, 2000
	var granted, denied atomic.Int64
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range perG {
				b.RequestAt(at(time.Duration(g*perG+i) % time.Second))
			}
		})
	}
	wg.Wait()
	for g := range goroutines {
		wg.Go(func() {
			for i := range perG / 5 {
				if b.AllowRetryAt(at(time.Second + time.Duration(g*perG+i)%time.Second)) {
					granted.Add(1)
				} else {
					denied.Add(1)
				}
			}
		})
	}
	wg.Wait()
	s := b.StatsAt(at(time.Second))
	want := Stats{goroutines * perG, granted.Load(), denied.Load()}
	if s != want {
		t.Fatalf("stats %+v, want %+v", s, want)
	}
	if limit := int64(DefaultRatio*goroutines*perG) + 10; s.Retries != limit {
		t.Fatalf("granted %d, want the limit %d", s.Retries, limit)
	}
}

// TestConcurrentSliding: goroutines with skewed clocks across many
// buckets, run under -race. No count is ever negative or above what was
// recorded.
func TestConcurrentSliding(t *testing.T) {
	b := mustNew(t, Config{Window: time.Second, MinPerSecond: 5})
	const goroutines, perG = 8, 5000
	var wg sync.WaitGroup
	var stop atomic.Bool
	wg.Go(func() {
		for !stop.Load() {
			s := b.StatsAt(at(2 * time.Second))
			if s.Requests < 0 || s.Retries < 0 || s.Denied < 0 || s.Requests > goroutines*perG {
				t.Errorf("bad stats %+v", s)
				return
			}
		}
	})
	var total atomic.Int64
	for g := range goroutines {
		wg.Go(func() {
			skew := time.Duration(g) * 37 * time.Millisecond // some callers lag
			for i := range perG {
				now := at(time.Duration(i)*time.Millisecond - skew)
				b.RequestAt(now)
				if i%4 == 0 {
					b.AllowRetryAt(now)
				}
				if i%97 == 0 {
					b.RequestAt(time.Time{})
				}
				total.Add(1)
			}
		})
	}
	for total.Load() < goroutines*perG {
		_ = b.StatsAt(at(time.Second))
	}
	stop.Store(true)
	wg.Wait()
	s := b.StatsAt(at(5 * time.Second))
	if s.Requests <= 0 || s.Requests > goroutines*perG || s.Retries < 0 || s.Denied < 0 {
		t.Fatalf("final stats %+v", s)
	}
	if float64(s.Retries) > 1.0*float64(s.Requests)+5+goroutines {
		t.Fatalf("final stats %+v over budget", s)
	}
}

func TestNoAllocs(t *testing.T) {
	b := mustNew(t, Config{})
	now := t0
	n := testing.AllocsPerRun(1000, func() {
		now = now.Add(time.Millisecond)
		b.RequestAt(now)
		b.AllowRetryAt(now)
		_ = b.StatsAt(now)
	})
	if n != 0 {
		t.Fatalf("%v allocs per run, want 0", n)
	}
}

// Benchmarks pass instants 1 µs apart, computed with time.Add (no clock
// read): a new bucket every 10^6 calls, so rollover is part of the cost.
// Times come from time.Date and carry no monotonic reading, the slower of
// the two paths of unixNano.

func BenchmarkRequest(b *testing.B) {
	b.Run("serial", func(b *testing.B) {
		bu := mustNew(b, Config{})
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			bu.RequestAt(t0.Add(time.Duration(i) * time.Microsecond))
			i++
		}
	})
	b.Run("parallel", func(b *testing.B) {
		bu := mustNew(b, Config{})
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				bu.RequestAt(t0.Add(time.Duration(i) * time.Microsecond))
				i++
			}
		})
	})
}

// BenchmarkAllowRetry asks for retries only. The floor is soon spent, so
// this is mostly the denial path, the hot one during an outage.
func BenchmarkAllowRetry(b *testing.B) {
	b.Run("serial", func(b *testing.B) {
		bu := mustNew(b, Config{})
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			bu.AllowRetryAt(t0.Add(time.Duration(i) * time.Microsecond))
			i++
		}
	})
	b.Run("parallel", func(b *testing.B) {
		bu := mustNew(b, Config{})
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				bu.AllowRetryAt(t0.Add(time.Duration(i) * time.Microsecond))
				i++
			}
		})
	})
}

// BenchmarkOutage is the call pattern of a total outage: each op is one
// request and up to two retries, as in TestOutage, so both the grant path
// (CAS) and the denial path run, and requests keep raising the limit. One op
// is two or three calls to the budget.
func BenchmarkOutage(b *testing.B) {
	op := func(bu *Budget, now time.Time) {
		bu.RequestAt(now)
		if bu.AllowRetryAt(now) {
			bu.AllowRetryAt(now)
		}
	}
	b.Run("serial", func(b *testing.B) {
		bu := mustNew(b, Config{})
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			op(bu, t0.Add(time.Duration(i)*time.Microsecond))
			i++
		}
	})
	b.Run("parallel", func(b *testing.B) {
		bu := mustNew(b, Config{})
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				op(bu, t0.Add(time.Duration(i)*time.Microsecond))
				i++
			}
		})
	})
}

// BenchmarkStats is the metrics read.
func BenchmarkStats(b *testing.B) {
	bu := mustNew(b, Config{})
	for i := range 100 {
		bu.RequestAt(t0.Add(time.Duration(i) * 100 * time.Millisecond))
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = bu.StatsAt(t0)
	}
}

// BenchmarkWithClock is BenchmarkOutage/parallel through the wrappers,
// reading the real clock (time.Now, with its monotonic reading), to show
// what the clock reads add.
func BenchmarkWithClock(b *testing.B) {
	bu := mustNew(b, Config{})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			bu.Request()
			if bu.AllowRetry() {
				bu.AllowRetry()
			}
		}
	})
}
