package attemptlog

import (
	"log/slog"
	"testing"
	"time"
)

func TestLevel(t *testing.T) {
	for _, tc := range []struct {
		retrying, givingUp bool
		want               slog.Level
	}{
		{false, false, slog.LevelDebug},
		{true, false, slog.LevelInfo},
		{false, true, slog.LevelWarn},
	} {
		if got := Level(tc.retrying, tc.givingUp); got != tc.want {
			t.Errorf("Level(%v, %v) = %v, want %v", tc.retrying, tc.givingUp, got, tc.want)
		}
	}
}

func TestDecisionAppend(t *testing.T) {
	d := Decision{Elapsed: 3 * time.Second, Duration: time.Second, Action: "Retry", Reason: "transient", Delay: 2 * time.Second}
	got := d.Append([]slog.Attr{slog.String("op", "x")})
	want := "[op=x elapsed=3s duration=1s decision=Retry reason=transient delay=2s]"
	if s := slog.GroupValue(got...).String(); s != want {
		t.Errorf("Append = %s, want %s", s, want)
	}
}
