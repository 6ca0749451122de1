package retry

import (
	"context"
	"errors"
	"reflect"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/breaker"
	"github.com/heed-go/heed/budget"
)

func TestHedgeValidate(t *testing.T) {
	for _, tt := range []struct {
		h  *Hedge
		ok bool
	}{
		{&Hedge{}, true},
		{&Hedge{Delay: time.Millisecond, Max: 4}, true},
		{&Hedge{Quantile: 0.99, MinDelay: time.Millisecond, MaxDelay: time.Second}, true},
		{&Hedge{Delay: -1}, false},
		{&Hedge{Quantile: 1}, false},
		{&Hedge{Quantile: -0.5}, false},
		{&Hedge{MinDelay: time.Second, MaxDelay: time.Millisecond}, false},
		{&Hedge{Max: 5}, false},
		{&Hedge{Max: -1}, false},
	} {
		p := Policy{Hedge: tt.h}
		if err := p.Validate(); (err == nil) != tt.ok {
			t.Errorf("%+v: Validate() = %v, want ok %v", tt.h, err, tt.ok)
		}
	}
}

func TestLatencyBuckets(t *testing.T) {
	prev := -1
	for d := time.Duration(0); d < time.Hour; d = d*9/8 + time.Microsecond {
		i := bucketOf(d)
		if i < prev {
			t.Fatalf("bucketOf(%v) = %d, below %d", d, i, prev)
		}
		if top := bucketTop(i); top < d || top > d*9/8+2*time.Microsecond {
			t.Fatalf("bucketTop(bucketOf(%v)) = %v", d, top)
		}
		prev = i
	}
}

// The adaptive delay is the quantile of the latencies seen, within its
// bounds, and unknown before the warm-up.
func TestHedgeAdaptiveDelay(t *testing.T) {
	for _, tt := range []struct {
		name       string
		h          *Hedge
		fast, slow int // latencies of 10 ms and of 2 s recorded
		want       time.Duration
		known      bool
	}{
		{"warm-up", &Hedge{}, hedgeWarmup - 1, 0, 0, false},
		{"p95 of 10 ms", &Hedge{}, 100, 0, 10 * time.Millisecond, true},
		{"5% slow: p95 is fast", &Hedge{}, 95, 5, 10 * time.Millisecond, true},
		{"10% slow: p95 is slow", &Hedge{}, 90, 10, 2 * time.Second, true},
		{"max bound", &Hedge{MaxDelay: 50 * time.Millisecond}, 90, 10, 50 * time.Millisecond, true},
		{"min bound", &Hedge{MinDelay: 30 * time.Millisecond}, 100, 0, 30 * time.Millisecond, true},
		{"p50", &Hedge{Quantile: 0.5}, 60, 40, 10 * time.Millisecond, true},
		{"fixed", &Hedge{Delay: 7 * time.Millisecond}, 0, 0, 7 * time.Millisecond, true},
	} {
		h := tt.h
		for i := range tt.fast + tt.slow {
			d := 10 * time.Millisecond
			if i%10 >= 10-tt.slow*10/max(tt.fast+tt.slow, 1) {
				d = 2 * time.Second
			}
			h.record(d)
		}
		got, ok := h.delay()
		if ok != tt.known || ok && (got < tt.want || got > tt.want*9/8) {
			t.Errorf("%s: delay %v %v, want %v %v", tt.name, got, ok, tt.want, tt.known)
		}
	}
}

// raceCall makes one call of a hedged policy through the protocol, its
// attempt n lasting takes[n-1] (then succeeding, or failing with fail),
// and returns its decision and the attempts made.
func raceCall(t *testing.T, p Policy, takes []time.Duration, fail map[int]error) (Decision, int) {
	c := Call{Policy: p}
	now := time.Now()
	lim, ok := c.Admit(now)
	if !ok {
		t.Fatalf("admit: %v", c.Last())
	}
	var made atomic.Int32
	res, _, cancel := c.Race(context.Background(), now, lim, func(ctx context.Context, n int, lim Limit) Result {
		made.Add(1)
		d := time.Hour
		if n <= len(takes) {
			d = takes[n-1]
		}
		select {
		case <-time.After(d):
			return Result{Err: fail[n]}
		case <-ctx.Done():
			return Result{Err: ctx.Err()}
		}
	})
	if cancel != nil {
		cancel()
	}
	return c.End(time.Now(), res), int(made.Load())
}

var errSlowDown = Transient(errors.New("slow down"))

func TestRace(t *testing.T) {
	ms := time.Millisecond
	openBreaker := func(now time.Time) *breaker.Breaker {
		b, _ := breaker.New(breaker.Config{MinCalls: 1, Cooldown: time.Minute})
		return b
	}
	for _, tt := range []struct {
		name    string
		p       func(now time.Time) Policy
		takes   []time.Duration
		fail    map[int]error
		hedges  int
		won     bool
		made    int
		elapsed time.Duration
		action  Action
	}{
		{name: "fast: no hedge", takes: []time.Duration{5 * ms}, made: 1, elapsed: 5 * ms},
		{name: "slow: the hedge wins", takes: []time.Duration{time.Second, 5 * ms}, hedges: 1, won: true, made: 2, elapsed: 25 * ms},
		{name: "three hedges", p: func(time.Time) Policy {
			return Policy{Attempts: 5, Hedge: &Hedge{Delay: 20 * ms, Max: 3}}
		}, takes: []time.Duration{time.Second, time.Second, time.Second, 5 * ms}, hedges: 3, won: true, made: 4, elapsed: 65 * ms},
		{name: "a failure sends the next hedge at once", p: func(time.Time) Policy {
			return Policy{Attempts: 5, Hedge: &Hedge{Delay: 20 * ms, Max: 2}}
		}, takes: []time.Duration{time.Second, 5 * ms, 5 * ms}, fail: map[int]error{2: errSlowDown},
			hedges: 2, won: true, made: 3, elapsed: 30 * ms},
		{name: "the attempt limit", p: func(time.Time) Policy {
			return Policy{Attempts: 2, Hedge: &Hedge{Delay: 20 * ms, Max: 3}}
		}, takes: []time.Duration{time.Second, time.Second}, hedges: 1, made: 2, elapsed: time.Second},
		{name: "the breaker refuses the hedge", p: func(now time.Time) Policy {
			b := openBreaker(now)
			return Policy{Breaker: b, Hedge: &Hedge{Delay: 20 * ms}}
		}, takes: []time.Duration{100 * ms}, made: 1, elapsed: 100 * ms},
		{name: "the budget refuses the hedge", p: func(now time.Time) Policy {
			b, _ := budget.New(budget.Config{Burst: 1, MinPerSecond: 1})
			b.AllowRetryAt(now)
			return Policy{Budget: b, Hedge: &Hedge{Delay: 20 * ms}}
		}, takes: []time.Duration{100 * ms}, made: 1, elapsed: 100 * ms},
		{name: "an adaptive delay before its warm-up", p: func(time.Time) Policy {
			return Policy{Hedge: &Hedge{}}
		}, takes: []time.Duration{100 * ms}, made: 1, elapsed: 100 * ms},
		{name: "both fail: retry", takes: []time.Duration{30 * ms, 5 * ms}, fail: map[int]error{1: errSlowDown, 2: errSlowDown},
			hedges: 1, made: 2, elapsed: 30 * ms, action: Retry},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				p := Policy{Hedge: &Hedge{Delay: 20 * ms}}
				if tt.p != nil {
					p = tt.p(start)
				}
				if tt.name == "the breaker refuses the hedge" {
					// Another caller's failure opens the breaker while the
					// first attempt runs.
					go func() {
						time.Sleep(10 * ms)
						permit, _ := p.Breaker.AllowAt(time.Now())
						permit.RecordAt(time.Now(), breaker.Failure)
					}()
				}
				d, made := raceCall(t, p, tt.takes, tt.fail)
				if d.Action != tt.action || d.Hedges != tt.hedges || d.HedgeWon != tt.won || made != tt.made {
					t.Errorf("decision %v hedges %d won %v after %d attempts, want %v %d %v %d", d.Action, d.Hedges, d.HedgeWon, made, tt.action, tt.hedges, tt.won, tt.made)
				}
				if el := time.Since(start); el != tt.elapsed {
					t.Errorf("took %v, want %v", el, tt.elapsed)
				}
				if d.Attempt != tt.made {
					t.Errorf("decision's attempt %d, want %d", d.Attempt, tt.made)
				}
			})
		})
	}
}

// A winning hedge does not earn the budget back as a successful retry
// does.
func TestHedgeDoesNotEarn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := budget.New(budget.Config{})
		p := Policy{Budget: b, Hedge: &Hedge{Delay: 20 * time.Millisecond}}
		raceCall(t, p, []time.Duration{time.Second, time.Millisecond}, nil)
		if s := b.Stats(); s.Retries != 1 || s.Succeeded != 0 {
			t.Errorf("budget %+v after a won hedge, want one retry granted and none succeeded", s)
		}
	})
}

// TestSameSchedule: sameSchedule compares every field of a
// backoff.Schedule (a field added to it must be added there too).
func TestSameSchedule(t *testing.T) {
	if n := reflect.TypeFor[backoff.Schedule]().NumField(); n != 5 {
		t.Fatalf("backoff.Schedule has %d fields; sameSchedule compares 5", n)
	}
	base := backoff.Schedule{Kind: backoff.Immediate, Base: 1, Cap: 2, Multiplier: 1.5, Jitter: 1}
	if !sameSchedule(&base, &base) {
		t.Fatal("a schedule differs from itself")
	}
	for i, change := range []func(*backoff.Schedule){
		func(s *backoff.Schedule) { s.Kind++ },
		func(s *backoff.Schedule) { s.Base++ },
		func(s *backoff.Schedule) { s.Cap++ },
		func(s *backoff.Schedule) { s.Multiplier++ },
		func(s *backoff.Schedule) { s.Jitter++ },
	} {
		o := base
		change(&o)
		if sameSchedule(&base, &o) {
			t.Errorf("field %d: a changed schedule is the same", i)
		}
	}
}
