package budget

import (
	"errors"
	"math"
	"math/rand/v2"
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
	if err != nil || b == nil {
		t.Fatal(b, err)
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
		{Config{Ratio: math.NaN()}, "Ratio", "budget: Ratio is NaN, must be a number"},
		{Config{Ratio: 1001}, "Ratio", "budget: Ratio is 1001, must be at most 1000"},
		{Config{Ratio: math.Inf(1)}, "Ratio", "budget: Ratio is +Inf, must be at most 1000"},
		{Config{Window: -time.Second}, "Window", "budget: Window is -1s, must not be negative"},
		{Config{Window: time.Millisecond}, "Window", "budget: Window is 1ms, must be at least 10ms"},
		{Config{Window: 2 * time.Hour}, "Window", "budget: Window is 2h0m0s, must be at most 1h0m0s"},
		{Config{MinPerSecond: math.NaN()}, "MinPerSecond", "budget: MinPerSecond is NaN, must be a number"},
		{Config{MinPerSecond: math.Inf(1)}, "MinPerSecond", "budget: MinPerSecond is +Inf, must be finite"},
		{Config{Burst: 1.5}, "Burst", "budget: Burst is 1.5, must be from 0 to 1"},
		{Config{Earn: math.NaN()}, "Earn", "budget: Earn is NaN, must be a number"},
		{Config{Earn: math.Inf(1)}, "Earn", "budget: Earn is +Inf, must be finite"},
		{Config{Ceiling: 2000}, "Ceiling", "budget: Ceiling is 2000, must be at most 1000"},
		{Config{}, "", ""},
		{Config{MinPerSecond: -1, Earn: -1, Ceiling: -1}, "", ""},
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

// TestOff: a negative Ratio is no budget.
func TestOff(t *testing.T) {
	b, err := New(Config{Ratio: -1})
	if b != nil || err != nil {
		t.Fatalf("New(Ratio -1) = %v, %v; want nil, nil", b, err)
	}
	var r Registry
	if b, err := r.For("h:1", Config{Ratio: -1}); b != nil || err != nil || r.Len() != 0 {
		t.Fatalf("For(Ratio -1) = %v, %v (len %d); want nil, nil", b, err, r.Len())
	}
}

// TestRatioAndFloor checks the rule retries+1 <= max(Ratio×requests, floor),
// with nothing earned.
func TestRatioAndFloor(t *testing.T) {
	tests := []struct {
		name     string
		cfg      Config
		requests int
		want     int // retries granted when asking for many more
	}{
		{"defaults, no traffic: floor only", Config{}, 0, 1},
		{"defaults, 5 requests: floor", Config{}, 5, 1},
		{"defaults, 20 requests: the ratio, not more", Config{}, 20, 2},
		{"defaults, 100 requests", Config{}, 100, 10},
		{"defaults, 1000 requests", Config{}, 1000, 100},
		{"defaults, 15 requests rounds down", Config{}, 15, 1},
		{"no floor, 9 requests", Config{MinPerSecond: -1}, 9, 0},
		{"no floor, 10 requests", Config{MinPerSecond: -1}, 10, 1},
		{"float rounding 0.29x100", Config{Ratio: 0.29, MinPerSecond: -1}, 100, 29},
		{"float rounding 0.1x30", Config{Ratio: 0.1, MinPerSecond: -1}, 30, 3},
		{"floor above the ratio", Config{MinPerSecond: 3}, 100, 30},
		{"ratio 1, short window", Config{Ratio: 1, Window: time.Second, MinPerSecond: 2}, 50, 50},
		{"fractional floor", Config{Window: time.Second, MinPerSecond: 2.5}, 0, 2},
		{"ratio above 1", Config{Ratio: 2.5, MinPerSecond: -1}, 4, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Burst = 1 // the window's rule alone; TestBurst checks the step's
			b := mustNew(t, tt.cfg)
			for range tt.requests {
				b.RequestAt(t0)
			}
			ask := tt.want + 50
			if got := grant(b, t0, ask); got != tt.want {
				t.Fatalf("granted %d, want %d", got, tt.want)
			}
			want := Stats{Requests: int64(tt.requests), Retries: int64(tt.want), Denied: int64(ask - tt.want)}
			if s := b.StatsAt(t0); s != want {
				t.Fatalf("stats %+v, want %+v", s, want)
			}
		})
	}
}

// outage runs a steady load of rate requests per second for seconds, each
// request failing and asking for up to retries retries, each of which
// succeeds with probability success (from a seeded source, so the test is
// reproducible). It returns the retries granted per second and the
// requests served.
func outage(b *Budget, rate, seconds, retries int, success float64) (perSecond []int, served int) {
	perSecond = make([]int, seconds)
	step := time.Second / time.Duration(rate)
	rnd := rand.New(rand.NewPCG(1, 2)) // seeded: the test is exact
	for i := range rate * seconds {
		now := at(time.Duration(i) * step)
		b.RequestAt(now)
		// The first attempt fails with the same probability.
		if rnd.Float64() < success {
			served++
			continue
		}
		for range retries {
			if !b.AllowRetryAt(now) {
				break
			}
			perSecond[i/rate]++
			if rnd.Float64() < success {
				b.RetrySucceededAt(now)
				served++
				break
			}
		}
	}
	return perSecond, served
}

// TestBurst: in a total outage of a steady load, where every failed call
// asks for its retries, no second sees more retries than the Burst share
// of the window's allowance, and over the outage retries stay at Ratio of
// the requests. (A plain sliding window spends a whole window's allowance
// in the first second of every window: 2.1× at 100 requests/s.)
func TestBurst(t *testing.T) {
	for _, rate := range []int{5, 20, 100, 1000} {
		b := mustNew(t, Config{})
		perSecond, _ := outage(b, rate, 60, 2, 0)
		total := 0
		for sec, n := range perSecond {
			total += n
			// 15% of 0.1 × 10 s × rate, and at least one retry.
			if limit := max(0.15*float64(rate), 1); float64(n) > limit+1e-9 {
				t.Errorf("rate %d: second %d: %d retries, want at most %.1f", rate, sec, n, limit)
			}
		}
		mean := float64(total) / 60 / float64(rate)
		t.Logf("rate %d/s: %.3f retries per request", rate, mean)
		if mean > 0.1+1e-9 || (rate >= 20 && mean < 0.09) {
			t.Errorf("rate %d/s: %.3f retries per request over the outage, want about 0.1", rate, mean)
		}
	}
}

// TestEarn: when retries succeed half of the time (a partial outage of 50%
// random failures), successes earn the budget up to what 3 attempts ask
// for, and users are served as if there were no budget; when none succeed
// the budget stays at its ratio; the ceiling bounds what is earned.
func TestEarn(t *testing.T) {
	tests := []struct {
		name          string
		cfg           Config
		success       float64
		minServed     float64
		maxRetryRatio float64
	}{
		{"half succeed: served as with 3 attempts", Config{}, 0.5, 0.86, 0.78},
		{"none succeed: the ratio", Config{}, 0, 0, 0.1},
		{"a fifth succeed: ratio / (1 - 2 × 0.2)", Config{}, 0.2, 0.2, 0.18},
		{"no earning", Config{Earn: -1}, 0.5, 0.5, 0.1},
		{"ceiling 0.3", Config{Ceiling: 0.3}, 0.5, 0.6, 0.3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := mustNew(t, tt.cfg)
			const rate, seconds = 100, 60
			perSecond, served := outage(b, rate, seconds, 2, tt.success)
			total := 0
			for _, n := range perSecond {
				total += n
			}
			ratio := float64(total) / (rate * seconds)
			share := float64(served) / (rate * seconds)
			t.Logf("%.3f retries per request, %.1f%% served", ratio, 100*share)
			if share < tt.minServed {
				t.Errorf("served %.3f, want at least %.3f", share, tt.minServed)
			}
			if ratio > tt.maxRetryRatio+1e-9 {
				t.Errorf("%.3f retries per request, want at most %.3f", ratio, tt.maxRetryRatio)
			}
		})
	}
}

// TestEarnFades: what was earned leaves with the window, so a partial
// outage that becomes total is back at the ratio a window later.
func TestEarnFades(t *testing.T) {
	b := mustNew(t, Config{})
	outage(b, 100, 30, 2, 0.5)
	for range 100 { // 100 successes at 29 s
		b.AllowRetryAt(at(29 * time.Second))
		b.RetrySucceededAt(at(29 * time.Second))
	}
	for range 100 {
		b.RequestAt(at(40 * time.Second))
	}
	if s := b.StatsAt(at(40 * time.Second)); s.Succeeded != 0 {
		t.Fatalf("stats %+v: successes older than the window still count", s)
	}
}

// TestRefillAt: a denied retry may be granted again at the next step.
func TestRefillAt(t *testing.T) {
	b := mustNew(t, Config{Ratio: 1, MinPerSecond: -1, Burst: 0.1}) // 10 of 100 per step
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

// TestSliding walks one budget through time: requests and retries expire
// after the window, in steps of a bucket.
func TestSliding(t *testing.T) {
	b := mustNew(t, Config{Ratio: 0.5, Window: 10 * time.Second, MinPerSecond: -1, Burst: 1})
	type step struct {
		at       time.Duration
		requests int
		ask      int
		granted  int
		stats    Stats // at the same instant, after the step
	}
	steps := []step{
		{0, 10, 0, 0, Stats{10, 0, 0, 0}},
		{500 * time.Millisecond, 0, 10, 5, Stats{10, 5, 5, 0}},
		{3 * time.Second, 4, 3, 2, Stats{14, 7, 6, 0}},
		{9*time.Second + 999*time.Millisecond, 0, 1, 0, Stats{14, 7, 7, 0}},
		// 10 s: the window [1 s, 11 s) has lost bucket 0's requests,
		// retries and denials.
		{10 * time.Second, 0, 1, 0, Stats{4, 2, 3, 0}},
		// 11 s: limit 0.5 × 6 = 3, 2 retries left in the window.
		{11 * time.Second, 2, 2, 1, Stats{6, 3, 4, 0}},
		// 13 s: the requests and retries at 3 s are gone.
		{13 * time.Second, 0, 0, 0, Stats{2, 1, 3, 0}},
		// A long gap: everything expired.
		{time.Hour, 0, 0, 0, Stats{}},
		{time.Hour, 2, 2, 1, Stats{2, 1, 1, 0}},
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
	b := mustNew(t, Config{}) // 1 per 10 s window
	total := 0
	for sec := range 30 {
		total += grant(b, at(time.Duration(sec)*time.Second), 5)
	}
	if total != 3 {
		t.Fatalf("granted %d over 30 s, want 3", total)
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
	r.RetrySucceeded()
	if s := r.Stats(); s != (Stats{1, 1, 0, 1}) {
		t.Fatalf("real-time stats %+v", s)
	}
}

// TestClock: the wrappers read Config.Clock.
func TestClock(t *testing.T) {
	c := clocktest.New(t0)
	b := mustNew(t, Config{MinPerSecond: 1, Window: time.Second, Clock: c})
	b.Request()
	if !b.AllowRetry() || b.AllowRetry() {
		t.Fatal("want one retry per second")
	}
	c.Advance(time.Second)
	if !b.AllowRetry() {
		t.Fatal("floor did not renew after the window")
	}
	if s, want := b.Stats(), (Stats{0, 1, 0, 0}); s != want {
		t.Fatalf("stats %+v, want %+v", s, want)
	}
	// An earlier time reports the window as it stands, ending at the
	// newest bucket: t0's bucket has left it.
	if s, want := b.StatsAt(t0), (Stats{0, 1, 0, 0}); s != want {
		t.Fatalf("stats at t0 %+v, want %+v", s, want)
	}
}

// TestClockBackwards: times before the newest bucket never corrupt state.
func TestClockBackwards(t *testing.T) {
	b := mustNew(t, Config{Ratio: 0.5, MinPerSecond: -1, Burst: 1})
	for range 10 {
		b.RequestAt(at(20 * time.Second))
	}
	// A little earlier (a caller that read the clock before another):
	// counted in the newest bucket, so it expires with it.
	for range 2 {
		b.RequestAt(at(15 * time.Second))
	}
	if s := b.StatsAt(at(29 * time.Second)); s.Requests != 12 {
		t.Fatalf("at 29s: stats %+v, want 12 requests", s)
	}
	b.RequestAt(at(5 * time.Second))
	b.RequestAt(time.Time{})
	b.RequestAt(time.Unix(-1<<40, 0))
	if s := b.StatsAt(at(20 * time.Second)); s.Requests != 15 {
		t.Fatalf("stats %+v, want 15 requests", s)
	}
	if g := grant(b, at(0), 10); g != 7 {
		t.Fatalf("granted %d at an old time, want 7", g)
	}
	if s := b.StatsAt(time.Time{}); s != (Stats{15, 7, 3, 0}) {
		t.Fatalf("stats at zero time %+v", s)
	}
	if s := b.StatsAt(at(30 * time.Second)); s != (Stats{}) {
		t.Fatalf("at 30s: stats %+v, want empty", s)
	}
}

// TestFarFuture: a time far ahead (here beyond the clamped range) moves the
// window there and later real times count in that bucket.
func TestFarFuture(t *testing.T) {
	b := mustNew(t, Config{Ratio: 0.1, MinPerSecond: -1})
	b.RequestAt(time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC))
	for range 99 {
		b.RequestAt(t0)
	}
	if g := grant(b, t0, 20); g != 1 {
		t.Fatalf("granted %d, want 1 (the 100 requests of the far bucket, 1 per step)", g)
	}
	if s := b.StatsAt(t0); s != (Stats{100, 1, 19, 0}) {
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
	lo, hi := unixNano(time.Time{}), unixNano(time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC))
	if lo != minSec*1e9 || hi != maxSec*1e9 {
		t.Errorf("clamped epochs %d, %d", lo, hi)
	}
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

// TestRegistry: one Budget per destination and equivalent config.
func TestRegistry(t *testing.T) {
	var r Registry
	a, _ := r.For("a:80", Config{})
	a2, _ := r.For("a:80", Config{Ratio: DefaultRatio}) // the same after defaults
	b, _ := r.For("b:80", Config{})
	c, _ := r.For("a:80", Config{Ratio: 0.2})
	if a == nil || a != a2 || a == b || a == c || r.Len() != 3 {
		t.Fatalf("For: %p %p %p %p, len %d", a, a2, b, c, r.Len())
	}
	if _, err := r.For("a:80", Config{Window: time.Millisecond}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("For with a bad config: %v", err)
	}
	p1, _ := For("registry-test:1", Config{})
	p2, _ := For("registry-test:1", Config{})
	if p1 != p2 {
		t.Fatal("the process registry made two budgets for one destination")
	}
	var wg sync.WaitGroup
	got := make([]*Budget, 8)
	for i := range got {
		wg.Go(func() { got[i], _ = r.For("c:80", Config{}) })
	}
	wg.Wait()
	for _, g := range got {
		if g != got[0] {
			t.Fatal("concurrent For made two budgets for one destination")
		}
	}
}

// TestConcurrentExact: many goroutines record requests, then race for
// retries. Every call is counted exactly once, and racing retries get
// exactly the limit, never more.
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
	want := Stats{goroutines * perG, granted.Load(), denied.Load(), 0}
	if s != want {
		t.Fatalf("stats %+v, want %+v", s, want)
	}
	if limit := int64(DefaultRatio * goroutines * perG); s.Retries != limit {
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
	for g := range goroutines {
		wg.Go(func() {
			skew := time.Duration(g) * 37 * time.Millisecond // some callers lag
			for i := range perG {
				now := at(time.Duration(i)*time.Millisecond - skew)
				b.RequestAt(now)
				if i%4 == 0 && b.AllowRetryAt(now) && i%8 == 0 {
					b.RetrySucceededAt(now)
				}
				if i%97 == 0 {
					b.RequestAt(time.Time{})
				}
				if s := b.StatsAt(now); s.Requests < 0 || s.Retries < 0 || s.Requests > goroutines*perG {
					t.Errorf("bad stats %+v", s)
					return
				}
			}
		})
	}
	wg.Wait()
	s := b.StatsAt(at(5 * time.Second))
	if s.Requests <= 0 || s.Requests > goroutines*perG || s.Retries < 0 || s.Denied < 0 {
		t.Fatalf("final stats %+v", s)
	}
	if float64(s.Retries) > DefaultCeiling*float64(s.Requests)+5 {
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
		b.RetrySucceededAt(now)
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
