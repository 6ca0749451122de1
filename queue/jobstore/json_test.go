package jobstore

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/heed-go/heed/backoff"
)

var storedT0 = time.Date(2026, 5, 4, 3, 2, 1, 123456000, time.UTC)

// The stored JSON of a job's policy and history is pinned byte for byte.
// The values are built from the named constants and the JSON holds names,
// so the test (and every stored job) reads the same whatever order the
// constants are declared in; see TestStoredJSONLegacy for the old form.
func TestStoredJSONPinned(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string
	}{
		{JobPolicy{}, `{}`},
		{JobPolicy{Backoff: &backoff.Schedule{Kind: backoff.Constant, Base: 150 * time.Millisecond, Jitter: backoff.NoJitter},
			TimeBudget: 400 * time.Millisecond, AttemptTimeout: time.Second},
			`{"backoff":{"kind":"constant","base":"150ms","jitter":"none"},"time_budget":"400ms","attempt_timeout":"1s"}`},
		{JobPolicy{Backoff: &backoff.Schedule{}}, `{"backoff":{"kind":"exponential","jitter":"full"}}`},
		{JobPolicy{Backoff: &backoff.Schedule{Kind: backoff.Linear, Cap: time.Minute, Multiplier: 3, Jitter: backoff.DecorrelatedJitter}, TimeBudget: 36 * time.Hour},
			`{"backoff":{"kind":"linear","cap":"1m0s","multiplier":3,"jitter":"decorrelated"},"time_budget":"36h0m0s"}`},
		{Attempt{Attempt: 2, Worker: "w1", StartedAt: storedT0, FinishedAt: storedT0.Add(time.Second), Outcome: "transient",
			Error: "connection reset", Action: "retry", Reason: "transient", Delay: 4*time.Second + time.Microsecond},
			`{"attempt":2,"worker":"w1","started_at":"2026-05-04T03:02:01.123456Z","finished_at":"2026-05-04T03:02:02.123456Z","outcome":"transient","error":"connection reset","action":"retry","reason":"transient","delay":"4.000001s"}`},
		{Attempt{Attempt: 3, StartedAt: storedT0, FinishedAt: storedT0, Outcome: "permanent", Action: "give_up", Reason: "permanent"},
			`{"attempt":3,"started_at":"2026-05-04T03:02:01.123456Z","finished_at":"2026-05-04T03:02:01.123456Z","outcome":"permanent","action":"give_up","reason":"permanent"}`},
		{Attempt{Outcome: OutcomeCut, Action: "", Cut: 7, StartedAt: storedT0, FinishedAt: storedT0},
			`{"attempt":0,"started_at":"2026-05-04T03:02:01.123456Z","finished_at":"2026-05-04T03:02:01.123456Z","outcome":"cut","action":"","cut":7}`},
	} {
		b, err := json.Marshal(tc.v)
		if err != nil || string(b) != tc.want {
			t.Errorf("Marshal(%+v) =\n %s, %v; want\n %s", tc.v, b, err, tc.want)
			continue
		}
		back := reflect.New(reflect.TypeOf(tc.v))
		if err := json.Unmarshal(b, back.Interface()); err != nil || !reflect.DeepEqual(back.Elem().Interface(), tc.v) {
			t.Errorf("Unmarshal(%s) = %+v, %v; want %+v", b, back.Elem().Interface(), err, tc.v)
		}
	}
}

// Rows written before the stored forms had names still read, with the old
// numbers mapped through a fixed table (not through the constants' order).
func TestStoredJSONLegacy(t *testing.T) {
	var p JobPolicy
	old := `{"backoff":{"Kind":2,"Base":1000000000,"Cap":0,"Multiplier":0,"Jitter":2},"time_budget":5000000000,"attempt_timeout":1500000000}`
	if err := json.Unmarshal([]byte(old), &p); err != nil {
		t.Fatal(err)
	}
	want := JobPolicy{Backoff: &backoff.Schedule{Kind: backoff.Linear, Base: time.Second, Jitter: backoff.EqualJitter},
		TimeBudget: 5 * time.Second, AttemptTimeout: 1500 * time.Millisecond}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("legacy policy = %+v (backoff %+v), want %+v", p, *p.Backoff, want)
	}
	for n, k := range []backoff.Kind{backoff.Exponential, backoff.Constant, backoff.Linear, backoff.Immediate} {
		var p JobPolicy
		in := `{"backoff":{"Kind":` + string(rune('0'+n)) + `,"Base":0,"Cap":0,"Multiplier":0,"Jitter":` + string(rune('0'+n)) + `}}`
		if err := json.Unmarshal([]byte(in), &p); err != nil || p.Backoff.Kind != k || p.Backoff.Jitter != []backoff.Jitter{
			backoff.FullJitter, backoff.NoJitter, backoff.EqualJitter, backoff.DecorrelatedJitter}[n] {
			t.Errorf("legacy %s = %+v, %v", in, p.Backoff, err)
		}
	}
	var a Attempt
	if err := json.Unmarshal([]byte(`{"attempt":3,"started_at":"2026-05-04T03:02:01.123456Z","finished_at":"2026-05-04T03:02:01.123456Z","outcome":"transient","action":"give up","reason":"attempts","delay":4000000000}`), &a); err != nil {
		t.Fatal(err)
	}
	if a.Action != "give_up" || a.Delay != 4*time.Second || a.Reason != "attempts" || a.Attempt != 3 || !a.StartedAt.Equal(storedT0) {
		t.Errorf("legacy entry = %+v", a)
	}
}

func TestStoredJSONErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"backoff":{"kind":"wavy"}}`, `unknown kind "wavy"`},
		{`{"backoff":{"Kind":9,"Jitter":0}}`, `older form: kind 9`},
		{`{"time_budget":"soon"}`, `time_budget: backoff: duration "soon"`},
		{`{"time_budget":true}`, `time_budget: true is not a duration`},
		{`{"max_attempts":3}`, `unknown field "max_attempts"`},
	} {
		p := JobPolicy{TimeBudget: time.Hour}
		err := json.Unmarshal([]byte(tc.in), &p)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Unmarshal(%s) = %v, want an error containing %q", tc.in, err, tc.want)
		}
		if p != (JobPolicy{TimeBudget: time.Hour}) {
			t.Errorf("Unmarshal(%s) changed the policy to %+v", tc.in, p)
		}
	}
	var a Attempt
	if err := json.Unmarshal([]byte(`{"delay":"forever"}`), &a); err == nil || !strings.Contains(err.Error(), `delay: backoff: duration "forever"`) {
		t.Errorf("bad delay: %v", err)
	}
}
