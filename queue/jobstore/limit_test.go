package jobstore

import (
	"errors"
	"testing"
	"time"
)

// t0 is the fixed instant the tests count from.
var t0 = time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)

func TestLimitClaimable(t *testing.T) {
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	for _, tt := range []struct {
		name    string
		l       Limit
		want    int
		running int
		b       RateBucket
		now     time.Time
		n       int     // Claimable
		tokens  float64 // Took's tokens after n starts
	}{
		{"no limit", Limit{}, 7, 100, RateBucket{}, t0, 7, 0},
		{"concurrency room", Limit{Concurrency: 10}, 7, 5, RateBucket{}, t0, 5, 0},
		{"concurrency full", Limit{Concurrency: 10}, 7, 10, RateBucket{}, t0, 0, 0},
		{"concurrency over (lowered)", Limit{Concurrency: 10}, 7, 12, RateBucket{}, t0, 0, 0},
		{"rate full bucket", Limit{Rate: 4}, 10, 0, RateBucket{Tokens: 4, At: t0}, t0, 4, 0},
		{"rate partial", Limit{Rate: 4}, 10, 0, RateBucket{Tokens: 0, At: t0}, at(300), 1, 0.2},
		{"rate fractions add up", Limit{Rate: 3}, 10, 0, RateBucket{Tokens: 0, At: t0}, at(1000), 3, 0},
		{"rate capped at Rate", Limit{Rate: 4}, 10, 0, RateBucket{Tokens: 1, At: t0}, at(3_600_000), 4, 0},
		{"rate period", Limit{Rate: 2, RatePeriod: time.Minute}, 10, 0, RateBucket{Tokens: 0, At: t0}, at(30_000), 1, 0},
		{"clock behind the bucket", Limit{Rate: 4}, 10, 0, RateBucket{Tokens: 2.5, At: at(500)}, t0, 2, 0.5},
		{"never bucket (zero At)", Limit{Rate: 4}, 10, 0, RateBucket{}, t0, 4, 0},
		{"both: concurrency tighter", Limit{Concurrency: 3, Rate: 100}, 10, 1, RateBucket{Tokens: 100, At: t0}, t0, 2, 98},
		{"both: rate tighter", Limit{Concurrency: 30, Rate: 5}, 10, 1, RateBucket{Tokens: 5, At: t0}, t0, 5, 0},
		{"want fewer", Limit{Concurrency: 30, Rate: 5}, 1, 1, RateBucket{Tokens: 5, At: t0}, t0, 1, 4},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n := tt.l.Claimable(tt.want, tt.running, tt.b, tt.now)
			if n != tt.n {
				t.Errorf("Claimable = %d, want %d", n, tt.n)
			}
			if tt.l.Rate == 0 {
				return
			}
			b := tt.l.Took(tt.b, tt.now, n)
			if d := b.Tokens - tt.tokens; d > 1e-9 || d < -1e-9 {
				t.Errorf("Took: %v tokens, want %v", b.Tokens, tt.tokens)
			}
			if want := tt.b.At; tt.now.After(want) {
				if !b.At.Equal(tt.now) {
					t.Errorf("Took: at %v, want %v", b.At, tt.now)
				}
			} else if !b.At.Equal(want) {
				t.Errorf("Took: at %v, want the bucket's %v", b.At, want)
			}
		})
	}
}

func TestLimitValidate(t *testing.T) {
	for _, tt := range []struct {
		l    Limit
		want string // "" for valid
	}{
		{Limit{}, ""},
		{Limit{Concurrency: 10, Rate: 50, RatePeriod: time.Minute}, ""},
		{Limit{Rate: 1, RatePeriod: time.Millisecond}, ""},
		{Limit{Rate: 1, RatePeriod: 24 * time.Hour}, ""},
		{Limit{Concurrency: -1}, "queue: Limit.Concurrency is -1, must be 0 (no limit) or more"},
		{Limit{Rate: -2}, "queue: Limit.Rate is -2, must be 0 (no limit) or more"},
		{Limit{Rate: 1, RatePeriod: time.Microsecond}, "queue: Limit.RatePeriod is 1µs, must be 0 (one second) or from 1ms to 24h"},
		{Limit{Rate: 1, RatePeriod: 25 * time.Hour}, "queue: Limit.RatePeriod is 25h0m0s, must be 0 (one second) or from 1ms to 24h"},
		{Limit{Rate: 1, RatePeriod: -time.Second}, "queue: Limit.RatePeriod is -1s, must be 0 (one second) or from 1ms to 24h"},
	} {
		err := tt.l.Validate()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%+v: %v", tt.l, err)
		case tt.want != "" && (!errors.Is(err, ErrInvalid) || err.Error() != tt.want):
			t.Errorf("%+v: %v, want %s", tt.l, err, tt.want)
		}
	}
}

func TestLimitString(t *testing.T) {
	for l, want := range map[Limit]string{
		{}:                                 "no limit",
		{Concurrency: 10}:                  "at most 10 running",
		{Rate: 50}:                         "at most 50 starts per 1s",
		{Rate: 100, RatePeriod: time.Hour}: "at most 100 starts per 1h0m0s",
		{Concurrency: 3, Rate: 5}:          "at most 3 running, 5 starts per 1s",
	} {
		if got := l.String(); got != want {
			t.Errorf("%+v: %q, want %q", l, got, want)
		}
	}
}
