package duration

import (
	"testing"
	"time"
)

func TestRound(t *testing.T) {
	for in, want := range map[time.Duration]string{
		19349822217 * time.Nanosecond:         "19.3s",
		1576 * time.Microsecond:               "1.58ms",
		89*time.Second + 600*time.Millisecond: "1m29.6s",
		999 * time.Nanosecond:                 "999ns",
		26 * time.Hour:                        "26h0m0s",
	} {
		if got := Round(in).String(); got != want {
			t.Errorf("Round(%v) = %s, want %s", in, got, want)
		}
	}
}
