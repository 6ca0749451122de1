package uniform

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// fixed is a source that returns x.
type fixed uint64

func (f fixed) Uint64() uint64 { return uint64(f) }

func TestDuration(t *testing.T) {
	for _, tc := range []struct {
		r    rand.Source
		d    time.Duration
		want time.Duration
	}{
		{fixed(math.MaxUint64), 0, 0},
		{fixed(math.MaxUint64), -time.Second, 0},
		{fixed(0), time.Second, 0},
		{fixed(math.MaxUint64), time.Second, time.Second},             // the top of the range is reachable
		{fixed(1 << 63), time.Second, time.Second / 2},                // the middle
		{fixed(math.MaxUint64), math.MaxInt64, math.MaxInt64},         // no overflow
		{fixed(math.MaxUint64 / 2), math.MaxInt64, math.MaxInt64 / 2}, // nor here
	} {
		if got := Duration(tc.r, tc.d); got != tc.want {
			t.Errorf("Duration(%#x, %v) = %v, want %v", uint64(tc.r.(fixed)), tc.d, got, tc.want)
		}
	}
	for range 1000 {
		if got := Duration(nil, time.Millisecond); got < 0 || got > time.Millisecond {
			t.Fatalf("Duration(nil, 1ms) = %v, outside [0, 1ms]", got)
		}
	}
}
