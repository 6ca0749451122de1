package breaker_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/heed-go/heed/breaker"
	"github.com/heed-go/heed/clock/clocktest"
)

// t0 is a bucket boundary for the default window (625ms buckets), so that
// offsets from it fall into predictable buckets.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

const ms = time.Millisecond

// A step of a scripted scenario. Permits are kept by name so that a step
// can record a permit taken by an earlier one.
type step struct {
	at   time.Duration
	kind string // "allow", "refused", "record", "calls", "state", "counts"
	id   string // permit name, for allow and record
	o    breaker.Outcome
	n    int    // calls: how many allow+record pairs
	want string // state: State.String(); counts: "successes/failures"
}

func allow(d time.Duration, id string) step { return step{at: d, kind: "allow", id: id} }
func refused(d time.Duration) step          { return step{at: d, kind: "refused"} }
func record(d time.Duration, id string, o breaker.Outcome) step {
	return step{at: d, kind: "record", id: id, o: o}
}
func calls(d time.Duration, n int, o breaker.Outcome) step {
	return step{at: d, kind: "calls", n: n, o: o}
}
func state(d time.Duration, want breaker.State) step {
	return step{at: d, kind: "state", want: want.String()}
}
func counts(d time.Duration, s, f int) step {
	return step{at: d, kind: "counts", want: fmt.Sprintf("%d/%d", s, f)}
}

func run(t *testing.T, b *breaker.Breaker, steps []step) {
	t.Helper()
	permits := map[string]breaker.Permit{}
	for i, s := range steps {
		now := at(s.at)
		switch s.kind {
		case "allow":
			p, err := b.AllowAt(now)
			if err != nil {
				t.Fatalf("step %d: AllowAt(+%v) = %v, want a permit", i, s.at, err)
			}
			permits[s.id] = p
		case "refused":
			if _, err := b.AllowAt(now); !errors.Is(err, breaker.ErrOpen) {
				t.Fatalf("step %d: AllowAt(+%v) = %v, want ErrOpen", i, s.at, err)
			}
		case "record":
			p, ok := permits[s.id]
			if !ok {
				t.Fatalf("step %d: no permit %q", i, s.id)
			}
			p.RecordAt(now, s.o)
		case "calls":
			for j := range s.n {
				p, err := b.AllowAt(now)
				if err != nil {
					t.Fatalf("step %d, call %d: AllowAt(+%v) = %v, want a permit", i, j, s.at, err)
				}
				p.RecordAt(now, s.o)
			}
		case "state":
			if got := b.StateAt(now).String(); got != s.want {
				t.Fatalf("step %d: StateAt(+%v) = %s, want %s", i, s.at, got, s.want)
			}
		case "counts":
			c := breaker.CountsAt(b, now)
			if got := fmt.Sprintf("%d/%d", c.Successes, c.Failures); got != s.want {
				t.Fatalf("step %d: CountsAt(+%v) = %s, want %s", i, s.at, got, s.want)
			}
		default:
			t.Fatalf("step %d: unknown kind %q", i, s.kind)
		}
	}
}

func TestScenarios(t *testing.T) {
	const (
		S = breaker.Success
		F = breaker.Failure
		I = breaker.Ignored
	)
	tests := []struct {
		name  string
		cfg   breaker.Config
		steps []step
	}{
		{
			name: "opens at the ratio once MinCalls is reached",
			steps: []step{
				calls(0, 10, S),
				calls(ms, 9, F),
				state(ms, breaker.Closed), // 9/19: below MinCalls
				counts(ms, 10, 9),
				calls(2*ms, 1, F), // 10/20: at the ratio, with MinCalls
				state(2*ms, breaker.Open),
				refused(3 * ms),
			},
		},
		{
			name: "failures alone do not open below MinCalls",
			steps: []step{
				calls(0, 19, F),
				state(0, breaker.Closed),
				counts(0, 0, 19),
				calls(0, 1, F),
				state(0, breaker.Open),
			},
		},
		{
			name: "stays closed below the ratio",
			steps: []step{
				calls(0, 11, S),
				calls(0, 10, F), // 10/21 < 0.5
				state(0, breaker.Closed),
				calls(0, 1, F), // 11/22 = 0.5
				state(0, breaker.Open),
			},
		},
		{
			name: "ratio 1 opens only when every call failed",
			cfg:  breaker.Config{FailureRatio: 1, MinCalls: 3},
			steps: []step{
				calls(0, 1, S),
				calls(0, 5, F),
				state(0, breaker.Closed),
				calls(10*time.Second, 3, F), // the success has aged out
				state(10*time.Second, breaker.Open),
			},
		},
		{
			name: "ratio 2/3 opens at exactly two failures in three",
			cfg:  breaker.Config{FailureRatio: 2.0 / 3, MinCalls: 3},
			steps: []step{
				calls(0, 1, S),
				calls(0, 1, F),
				state(0, breaker.Closed),
				calls(0, 1, F),
				state(0, breaker.Open),
			},
		},
		{
			name: "ignored outcomes are not counted",
			steps: []step{
				calls(0, 100, I),
				counts(0, 0, 0),
				calls(0, 19, F),
				calls(0, 100, I),
				state(0, breaker.Closed),
			},
		},
		{
			name: "the window slides: old failures age out",
			steps: []step{
				calls(0, 10, F),
				calls(5*time.Second, 9, S),
				counts(10*time.Second-1, 9, 10), // bucket of 0 is still the oldest
				counts(10*time.Second, 9, 0),    // and now it is gone
				calls(10*time.Second, 10, F),    // 10 failures + 9 successes: 19 < MinCalls
				state(10*time.Second, breaker.Closed),
				counts(15*time.Second, 0, 10),
				counts(20*time.Second, 0, 0),
			},
		},
		{
			name: "the window moves in steps of Window/16",
			steps: []step{
				calls(624*ms, 1, F), // last instant of bucket 0
				calls(625*ms, 1, F), // first instant of bucket 1
				counts(10*time.Second-1, 0, 2),
				counts(10*time.Second, 0, 1),
				counts(10*time.Second+625*ms-1, 0, 1),
				counts(10*time.Second+625*ms, 0, 0),
			},
		},
		{
			name: "failures spread over the window add up",
			cfg:  breaker.Config{MinCalls: 10},
			steps: []step{
				calls(0, 3, F),
				calls(3*time.Second, 3, F),
				calls(6*time.Second, 3, F),
				state(6*time.Second, breaker.Closed),
				calls(9*time.Second, 1, F),
				state(9*time.Second, breaker.Open),
			},
		},
		{
			name: "cooldown: open until it has passed, then half-open",
			steps: []step{
				calls(time.Second, 20, F),
				state(time.Second, breaker.Open),
				refused(6*time.Second - 1),
				state(6*time.Second-1, breaker.Open),
				state(6*time.Second, breaker.HalfOpen), // a peek takes no slot
				allow(6*time.Second, "probe"),
				state(6*time.Second, breaker.HalfOpen),
			},
		},
		{
			name: "probe limit: at most Probes at a time",
			cfg:  breaker.Config{Probes: 2},
			steps: []step{
				calls(0, 20, F),
				allow(5*time.Second, "a"),
				allow(5*time.Second, "b"),
				refused(5 * time.Second),
				record(5*time.Second, "a", I), // frees a slot, counts nothing
				allow(5*time.Second, "c"),
				refused(5 * time.Second),
				record(5*time.Second, "b", S), // frees a slot, 1 of 2 successes
				state(5*time.Second, breaker.HalfOpen),
				allow(5*time.Second, "d"),
				refused(5 * time.Second),
			},
		},
		{
			name: "probe failure reopens with a fresh cooldown",
			cfg:  breaker.Config{Probes: 2},
			steps: []step{
				calls(0, 20, F),
				allow(5*time.Second, "a"),
				allow(5*time.Second, "b"),
				record(5*time.Second, "a", S),
				record(7*time.Second, "b", F),
				state(7*time.Second, breaker.Open),
				refused(12*time.Second - 1),
				allow(12*time.Second, "c"),
				state(12*time.Second, breaker.HalfOpen),
			},
		},
		{
			name: "probe successes close with an empty window",
			cfg:  breaker.Config{Probes: 2},
			steps: []step{
				calls(0, 20, F),
				allow(5*time.Second, "a"),
				record(5*time.Second, "a", S),
				state(5*time.Second, breaker.HalfOpen),
				allow(5*time.Second, "b"),
				record(6*time.Second, "b", S),
				state(6*time.Second, breaker.Closed),
				counts(6*time.Second, 0, 0), // the failures that opened it are forgotten
				calls(6*time.Second, 19, F),
				state(6*time.Second, breaker.Closed),
			},
		},
		{
			name: "a closed-state call finishing late is not a probe result",
			cfg:  breaker.Config{Probes: 1},
			steps: []step{
				allow(0, "slow"),
				calls(0, 20, F),
				allow(5*time.Second, "probe"),
				record(5*time.Second, "slow", S), // would close if it counted
				state(5*time.Second, breaker.HalfOpen),
				record(5*time.Second, "slow", F), // would reopen if it counted
				state(5*time.Second, breaker.HalfOpen),
				refused(5 * time.Second), // and it did not free the probe slot
				record(5*time.Second, "probe", S),
				state(5*time.Second, breaker.Closed),
			},
		},
		{
			name: "a probe from an earlier half-open period is ignored",
			cfg:  breaker.Config{Probes: 2},
			steps: []step{
				calls(0, 20, F),
				allow(5*time.Second, "old1"),
				allow(5*time.Second, "old2"),
				record(5*time.Second, "old1", F), // reopens
				allow(10*time.Second, "new"),
				record(10*time.Second, "old2", S), // earlier generation
				allow(10*time.Second, "new2"),     // so two slots were still free
				refused(10 * time.Second),
				record(10*time.Second, "old2", F),
				state(10*time.Second, breaker.HalfOpen),
			},
		},
		{
			name: "a probe recorded twice does not free a slot it no longer holds",
			cfg:  breaker.Config{Probes: 1},
			steps: []step{
				calls(0, 20, F),
				allow(5*time.Second, "a"),
				record(5*time.Second, "a", I),
				record(5*time.Second, "a", I), // a no-op, not a negative count
				allow(5*time.Second, "b"),
				refused(5 * time.Second),
				record(5*time.Second, "b", S),
				state(5*time.Second, breaker.Closed),
			},
		},
		{
			name: "outcomes recorded while open are ignored",
			steps: []step{
				allow(0, "late"),
				calls(0, 20, F),
				record(time.Second, "late", F),
				counts(time.Second, 0, 20),
			},
		},
		{
			name: "probes out for a whole window without a result reopen",
			cfg:  breaker.Config{Probes: 1},
			steps: []step{
				calls(0, 20, F),
				allow(5*time.Second, "lost"), // never recorded
				refused(15*time.Second - 1),
				state(15*time.Second-1, breaker.HalfOpen),
				refused(15 * time.Second),
				state(15*time.Second, breaker.Open),
				allow(20*time.Second, "next"),
				record(20*time.Second, "lost", S), // earlier generation
				state(20*time.Second, breaker.HalfOpen),
				record(20*time.Second, "next", S),
				state(20*time.Second, breaker.Closed),
			},
		},
		{
			name: "a probe result restarts the wait for lost probes",
			cfg:  breaker.Config{Probes: 2},
			steps: []step{
				calls(0, 20, F),
				allow(5*time.Second, "a"),
				allow(5*time.Second, "lost"),
				record(14*time.Second, "a", S),
				allow(14*time.Second, "b"),
				refused(15 * time.Second), // a whole window since half-open, but not since a's result
				state(15*time.Second, breaker.HalfOpen),
				refused(24*time.Second - 1),
				refused(24 * time.Second), // nothing from "lost" and "b" for a window
				state(24*time.Second, breaker.Open),
			},
		},
		{
			name: "time going backwards: counted in the newest bucket",
			steps: []step{
				calls(time.Minute, 5, F),
				calls(0, 5, S), // a minute earlier
				counts(time.Minute, 5, 5),
				counts(0, 5, 5), // the window does not move back either
				calls(0, 9, F),
				state(time.Minute, breaker.Closed), // 14/19
				calls(0, 1, F),
				state(0, breaker.Open), // 15/20
			},
		},
		{
			name: "time going backwards while open restarts the cooldown",
			steps: []step{
				calls(time.Hour, 20, F),
				refused(0),                 // an hour earlier
				refused(5*time.Second - 1), // cooldown counted from 0
				allow(5*time.Second, "probe"),
			},
		},
		{
			name: "a small window and cooldown",
			cfg:  breaker.Config{Window: 16 * ms, Cooldown: ms, MinCalls: 2, Probes: 1},
			steps: []step{
				calls(0, 1, F),
				calls(16*ms, 1, F), // the first has aged out
				state(16*ms, breaker.Closed),
				calls(17*ms, 1, F),
				state(17*ms, breaker.Open),
				allow(18*ms, "p"),
				record(18*ms, "p", S),
				state(18*ms, breaker.Closed),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := breaker.New(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			run(t, b, tt.steps)
		})
	}
}

type change struct {
	from, to breaker.State
	at       time.Duration
}

func TestOnStateChange(t *testing.T) {
	var got []change
	b, err := breaker.New(breaker.Config{
		Probes: 1,
		OnStateChange: func(from, to breaker.State, when time.Time) {
			got = append(got, change{from, to, when.Sub(t0)})
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	run(t, b, []step{
		calls(0, 20, breaker.Failure),                 // closed -> open at 0
		refused(time.Second),                          // no change
		state(5*time.Second, breaker.HalfOpen),        // a peek is no change
		allow(5*time.Second, "p1"),                    // open -> half-open at 5s
		refused(5 * time.Second),                      // no change
		record(6*time.Second, "p1", breaker.Failure),  // half-open -> open at 6s
		allow(11*time.Second, "p2"),                   // open -> half-open at 11s
		record(12*time.Second, "p2", breaker.Success), // half-open -> closed at 12s
		calls(12*time.Second, 19, breaker.Failure),
		calls(13*time.Second, 1, breaker.Failure), // closed -> open at 13s
		allow(18*time.Second, "lost"),             // open -> half-open at 18s
		refused(28*time.Second - 1),
		refused(28 * time.Second), // half-open -> open at 28s: no result for a window
	})
	want := []change{
		{breaker.Closed, breaker.Open, 0},
		{breaker.Open, breaker.HalfOpen, 5 * time.Second},
		{breaker.HalfOpen, breaker.Open, 6 * time.Second},
		{breaker.Open, breaker.HalfOpen, 11 * time.Second},
		{breaker.HalfOpen, breaker.Closed, 12 * time.Second},
		{breaker.Closed, breaker.Open, 13 * time.Second},
		{breaker.Open, breaker.HalfOpen, 18 * time.Second},
		{breaker.HalfOpen, breaker.Open, 28 * time.Second},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got  %v\nwant %v", got, want)
	}
}

func TestOnStateChangeMayCallTheBreaker(t *testing.T) {
	var b *breaker.Breaker
	var seen []string
	b, err := breaker.New(breaker.Config{
		Probes: 1,
		OnStateChange: func(from, to breaker.State, when time.Time) {
			// No lock is held: reading and even changing the breaker
			// from the hook must not deadlock.
			seen = append(seen, fmt.Sprintf("%v->%v (now %v)", from, to, b.StateAt(when)))
			if to == breaker.Open {
				if _, err := b.AllowAt(when.Add(5 * time.Second)); err != nil {
					t.Errorf("AllowAt from the hook: %v", err)
				}
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	run(t, b, []step{calls(0, 20, breaker.Failure)})
	want := "[closed->open (now open) open->half-open (now half-open)]"
	if got := fmt.Sprint(seen); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestOnStateChangePanicDoesNotWedge(t *testing.T) {
	var got []string
	b, err := breaker.New(breaker.Config{
		Probes: 1,
		OnStateChange: func(from, to breaker.State, _ time.Time) {
			got = append(got, from.String()+"->"+to.String())
			if to == breaker.Open && len(got) == 1 {
				panic("hook")
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the hook's panic was swallowed")
			}
		}()
		run(t, b, []step{calls(0, 20, breaker.Failure)})
	}()
	// The change happened, and later changes are still reported.
	run(t, b, []step{state(0, breaker.Open), allow(5*time.Second, "p")})
	want := "[closed->open open->half-open]"
	if fmt.Sprint(got) != want {
		t.Fatalf("got %v, want %s", got, want)
	}
}

func TestValidation(t *testing.T) {
	tests := []struct {
		cfg  breaker.Config
		want string
	}{
		{breaker.Config{FailureRatio: 1.5}, "breaker: FailureRatio is 1.5, must be in (0, 1]"},
		{breaker.Config{FailureRatio: -0.1}, "breaker: FailureRatio is -0.1, must be in (0, 1]"},
		{breaker.Config{FailureRatio: math.NaN()}, "breaker: FailureRatio is NaN, must be in (0, 1]"},
		{breaker.Config{FailureRatio: math.Inf(1)}, "breaker: FailureRatio is +Inf, must be in (0, 1]"},
		{breaker.Config{MinCalls: -1}, "breaker: MinCalls is -1, must be in [1, 1073741824] (0 means 20)"},
		{breaker.Config{MinCalls: 1 << 31}, "breaker: MinCalls is 2147483648, must be in [1, 1073741824] (0 means 20)"},
		{breaker.Config{Window: -time.Second}, "breaker: Window is -1s, must be at least 1ms (0 means 10s)"},
		{breaker.Config{Window: 999 * time.Microsecond}, "breaker: Window is 999µs, must be at least 1ms (0 means 10s)"},
		{breaker.Config{Cooldown: -1}, "breaker: Cooldown is -1ns, must be positive (0 means 5s)"},
		{breaker.Config{Probes: -3}, "breaker: Probes is -3, must be in [1, 16384] (0 means 3)"},
		{breaker.Config{Probes: 16385}, "breaker: Probes is 16385, must be in [1, 16384] (0 means 3)"},
	}
	for _, tt := range tests {
		b, err := breaker.New(tt.cfg)
		if err == nil || b != nil {
			t.Errorf("New(%+v) = %v, %v; want nil and an error", tt.cfg, b, err)
			continue
		}
		if !errors.Is(err, breaker.ErrInvalid) {
			t.Errorf("New(%+v): %v does not match ErrInvalid", tt.cfg, err)
		}
		if err.Error() != tt.want {
			t.Errorf("New(%+v) error\n got  %q\n want %q", tt.cfg, err, tt.want)
		}
	}

	valid := []breaker.Config{
		{},
		{FailureRatio: 1, MinCalls: 1, Window: time.Millisecond, Cooldown: 1, Probes: 1},
		{FailureRatio: 1e-9, MinCalls: 1 << 30, Window: 1000 * time.Hour, Cooldown: math.MaxInt64, Probes: 16384},
	}
	for _, cfg := range valid {
		if _, err := breaker.New(cfg); err != nil {
			t.Errorf("New(%+v) = %v, want no error", cfg, err)
		}
	}
}

func TestNilBreakerAlwaysAdmits(t *testing.T) {
	var b *breaker.Breaker
	for range 100 {
		p, err := b.Allow()
		if err != nil {
			t.Fatal(err)
		}
		p.Record(breaker.Failure)
	}
	if s := b.State(); s != breaker.Closed {
		t.Fatalf("State() = %v", s)
	}
	if c := b.Counts(); c != (breaker.Counts{}) {
		t.Fatalf("Counts() = %+v", c)
	}
	var p breaker.Permit // the zero Permit records nothing
	p.Record(breaker.Failure)
}

func TestZeroBreakerPanics(t *testing.T) {
	for name, f := range map[string]func(b *breaker.Breaker){
		"AllowAt":  func(b *breaker.Breaker) { b.AllowAt(t0) },
		"StateAt":  func(b *breaker.Breaker) { b.StateAt(t0) },
		"CountsAt": func(b *breaker.Breaker) { breaker.CountsAt(b, t0) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				r := recover()
				if s, _ := r.(string); !strings.Contains(s, "without New") {
					t.Fatalf("recovered %v, want a panic mentioning New", r)
				}
			}()
			f(new(breaker.Breaker))
		})
	}
}

func TestExtremeInstants(t *testing.T) {
	b, err := breaker.New(breaker.Config{MinCalls: 4})
	if err != nil {
		t.Fatal(err)
	}
	instants := []time.Time{
		{},
		time.Unix(0, math.MinInt64),
		time.Unix(0, math.MaxInt64),
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC),
		time.Now(),
		t0,
	}
	for _, now := range instants {
		for _, o := range []breaker.Outcome{breaker.Success, breaker.Failure, breaker.Ignored} {
			if p, err := b.AllowAt(now); err == nil {
				p.RecordAt(now, o)
			}
		}
		c := breaker.CountsAt(b, now)
		if c.Successes < 0 || c.Failures < 0 || c.Successes+c.Failures > 3*len(instants) {
			t.Fatalf("CountsAt(%v) = %+v", now, c)
		}
		_ = b.StateAt(now)
	}
}

func TestStringers(t *testing.T) {
	for _, tt := range []struct{ got, want string }{
		{breaker.Closed.String(), "closed"},
		{breaker.Open.String(), "open"},
		{breaker.HalfOpen.String(), "half-open"},
		{breaker.State(7).String(), "State(7)"},
		{breaker.Success.String(), "success"},
		{breaker.Failure.String(), "failure"},
		{breaker.Ignored.String(), "ignored"},
		{breaker.Outcome(9).String(), "Outcome(9)"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

func TestWrappersReadTheConfiguredClock(t *testing.T) {
	c := clocktest.New(t0)
	b, err := breaker.New(breaker.Config{MinCalls: 2, Clock: c})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		p, err := b.Allow()
		if err != nil {
			t.Fatal(err)
		}
		p.Record(breaker.Failure)
	}
	if s := b.State(); s != breaker.Open {
		t.Fatalf("State() = %v, want open", s)
	}
	if got := breaker.CountsAt(b, t0); got != b.Counts() || got.Failures != 2 {
		t.Fatalf("Counts() = %+v, CountsAt(t0) = %+v", b.Counts(), got)
	}
	c.Advance(5 * time.Second)
	if s := b.State(); s != breaker.HalfOpen {
		t.Fatalf("State() after the cooldown = %v, want half-open", s)
	}
	p, err := b.Allow()
	if err != nil {
		t.Fatal(err)
	}
	p.Record(breaker.Success)
	if _, err := b.Allow(); err != nil { // 1 of 3 probe successes; a slot is free
		t.Fatal(err)
	}
}

func TestMonotonicInstants(t *testing.T) {
	// time.Now values are measured on the monotonic clock: they agree with
	// the same instants stripped of it while the wall clock does not step.
	b, err := breaker.New(breaker.Config{MinCalls: 3})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, at := range []time.Time{now, now.Round(0), now.Add(time.Second)} {
		p, err := b.AllowAt(at)
		if err != nil {
			t.Fatal(err)
		}
		p.RecordAt(at, breaker.Failure)
	}
	if s := b.StateAt(now.Add(time.Second).Round(0)); s != breaker.Open {
		t.Fatalf("StateAt = %v, want open", s)
	}
	if c := breaker.CountsAt(b, now.Add(9*time.Second)); c.Failures != 3 {
		t.Fatalf("CountsAt 9s later = %+v, want 3 failures", c)
	}
	if c := breaker.CountsAt(b, now.Add(12*time.Second)); c.Failures != 0 {
		t.Fatalf("CountsAt 12s later = %+v, want none", c)
	}
}
