package backoff_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/heed-go/heed/backoff"
)

// The stored form is pinned byte for byte: it must never change with the
// order of the constants or with Go's default encoding.
func TestScheduleJSONPinned(t *testing.T) {
	for _, tc := range []struct {
		s    backoff.Schedule
		want string
	}{
		{backoff.Schedule{}, `{"kind":"exponential","jitter":"full"}`},
		{backoff.Schedule{Kind: backoff.Linear, Base: time.Second, Cap: 5 * time.Minute, Multiplier: 3, Jitter: backoff.EqualJitter},
			`{"kind":"linear","base":"1s","cap":"5m0s","multiplier":3,"jitter":"equal"}`},
		{backoff.Schedule{Kind: backoff.Constant, Base: 150 * time.Millisecond, Jitter: backoff.NoJitter},
			`{"kind":"constant","base":"150ms","jitter":"none"}`},
		{backoff.Schedule{Kind: backoff.Immediate, Cap: 1500 * time.Microsecond, Multiplier: 1.5, Jitter: backoff.DecorrelatedJitter},
			`{"kind":"immediate","cap":"1.5ms","multiplier":1.5,"jitter":"decorrelated"}`},
	} {
		b, err := json.Marshal(tc.s)
		if err != nil || string(b) != tc.want {
			t.Errorf("Marshal(%+v) = %s, %v; want %s", tc.s, b, err, tc.want)
		}
		var got backoff.Schedule
		if err := json.Unmarshal([]byte(tc.want), &got); err != nil || got != tc.s {
			t.Errorf("Unmarshal(%s) = %+v, %v; want %+v", tc.want, got, err, tc.s)
		}
	}
}

// Decoding names the bad value and leaves the schedule as it was.
func TestScheduleJSONErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"kind":"geometric"}`, `unknown kind "geometric"`},
		{`{"jitter":"half"}`, `unknown jitter "half"`},
		{`{"base":"1 second"}`, `base: "1 second" is not a duration: write a Go duration, such as 250ms or 2s`},
		{`{"base":1000000000}`, `base: 1000000000 is not a duration`},
		{`{"kind":2}`, `kind: 2 is not a name`},
		{`{"Kind":"linear","Base":"1s","speed":1}`, `unknown field "speed"`},
		{`[]`, `cannot unmarshal array`},
	} {
		s := backoff.Schedule{Base: time.Hour}
		err := json.Unmarshal([]byte(tc.in), &s)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Unmarshal(%s) = %v, want an error containing %q", tc.in, err, tc.want)
		}
		if s != (backoff.Schedule{Base: time.Hour}) {
			t.Errorf("Unmarshal(%s) changed the schedule to %+v", tc.in, s)
		}
	}
}

func TestKindJitterText(t *testing.T) {
	for _, k := range []backoff.Kind{backoff.Exponential, backoff.Constant, backoff.Linear, backoff.Immediate} {
		b, err := k.MarshalText()
		var back backoff.Kind
		if err != nil || string(b) != k.String() || back.UnmarshalText(b) != nil || back != k {
			t.Errorf("Kind %v: MarshalText = %q, %v; back %v", k, b, err, back)
		}
	}
	for _, j := range []backoff.Jitter{backoff.FullJitter, backoff.NoJitter, backoff.EqualJitter, backoff.DecorrelatedJitter} {
		b, err := j.MarshalText()
		var back backoff.Jitter
		if err != nil || string(b) != j.String() || back.UnmarshalText(b) != nil || back != j {
			t.Errorf("Jitter %v: MarshalText = %q, %v; back %v", j, b, err, back)
		}
	}
	if _, err := backoff.Kind(9).MarshalText(); err == nil || !strings.Contains(err.Error(), "Kind(9)") {
		t.Errorf("Kind(9).MarshalText() error = %v, want one naming Kind(9)", err)
	}
	if _, err := backoff.Jitter(7).MarshalText(); err == nil || !strings.Contains(err.Error(), "Jitter(7)") {
		t.Errorf("Jitter(7).MarshalText() error = %v, want one naming Jitter(7)", err)
	}
	if _, err := json.Marshal(backoff.Schedule{Kind: 9}); err == nil {
		t.Error("Marshal of an invalid Kind succeeded")
	}
}
