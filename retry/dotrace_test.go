package retry_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/retry"
)

func TestDoTrace(t *testing.T) {
	fast := retry.Policy{Attempts: 3, Backoff: backoff.Schedule{Base: time.Microsecond}}
	boom := retry.Transient(errors.New("boom"))
	for _, tt := range []struct {
		name    string
		fails   int // attempts that fail before one succeeds
		actions []retry.Action
		reasons []retry.Reason
	}{
		{"first attempt", 0, []retry.Action{retry.Done}, []retry.Reason{retry.ReasonSuccess}},
		{"after a retry", 1, []retry.Action{retry.Retry, retry.Done}, []retry.Reason{retry.ReasonTransient, retry.ReasonSuccess}},
		{"gives up", 5, []retry.Action{retry.Retry, retry.Retry, retry.GiveUp}, []retry.Reason{retry.ReasonTransient, retry.ReasonTransient, retry.ReasonAttempts}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n := 0
			trace, err := retry.DoTrace(context.Background(), fast, func(context.Context) error {
				n++
				if n <= tt.fails {
					return boom
				}
				return nil
			})
			if len(trace) != len(tt.actions) {
				t.Fatalf("trace %v, err %v; want %d decisions", trace, err, len(tt.actions))
			}
			for i, d := range trace {
				if d.Action != tt.actions[i] || d.Reason != tt.reasons[i] || d.Attempt != i+1 || d.At.IsZero() {
					t.Errorf("decision %d: %+v, want %v %v at attempt %d with its time", i, d, tt.actions[i], tt.reasons[i], i+1)
				}
			}
			var ex *retry.ExhaustedError
			if errors.As(err, &ex) && len(ex.Trace) != len(trace) {
				t.Errorf("the error's trace %v, DoTrace's %v", ex.Trace, trace)
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	trace, err := retry.DoTrace(ctx, fast, func(context.Context) error { cancel(); return boom })
	if err != context.Canceled || len(trace) != 0 {
		t.Errorf("cancelled: %v, %v", trace, err)
	}
}
