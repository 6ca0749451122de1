package jobstore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/internal/docjson"
	"github.com/heed-go/heed/retry"
)

// The stored forms of a job's policy and history entries. Stores keep the
// JSON that encoding/json makes of JobPolicy and Attempt with the methods
// below: names for enums (never their numbers), keys for actions and
// reasons (never their words), and durations as text ("1.5s"). The
// readers also accept the form heed wrote before these methods existed
// (numbers for kinds, jitters and durations, "give up" for the action),
// which the stores' migrations rewrite, so that a row written by an older
// binary during an upgrade still reads.

// jobPolicyJSON is JobPolicy's stored form: the names and forms of
// retry.Policy's JSON, for the fields a job overrides.
type jobPolicyJSON struct {
	Backoff        *backoff.Schedule    `json:"backoff,omitempty"`
	TimeBudget     docjson.DurationText `json:"time_budget,omitzero"`
	AttemptTimeout docjson.DurationText `json:"attempt_timeout,omitzero"`
}

// MarshalJSON encodes p in its stored form, such as
//
//	{"backoff":{"kind":"constant","base":"150ms","jitter":"none"},"time_budget":"400ms","attempt_timeout":"1s"}
//
// with the field names and forms of [retry.Policy.MarshalJSON]; zero
// fields are left out.
func (p JobPolicy) MarshalJSON() ([]byte, error) {
	return json.Marshal(jobPolicyJSON{p.Backoff, docjson.DurationText(p.TimeBudget), docjson.DurationText(p.AttemptTimeout)})
}

// UnmarshalJSON decodes the form [JobPolicy.MarshalJSON] writes (and the
// older form with numbers). An unknown field or value is an error naming
// it, and leaves p unchanged.
func (p *JobPolicy) UnmarshalJSON(data []byte) error {
	var w struct {
		Backoff        json.RawMessage `json:"backoff"`
		TimeBudget     json.RawMessage `json:"time_budget"`
		AttemptTimeout json.RawMessage `json:"attempt_timeout"`
	}
	if err := strictDecode(data, &w); err != nil {
		return fmt.Errorf("queue: job policy: %w", err)
	}
	var out JobPolicy
	var err error
	if out.Backoff, err = decodeSchedule(w.Backoff); err != nil {
		return fmt.Errorf("queue: job policy: backoff: %w", err)
	}
	if out.TimeBudget, err = decodeDuration(w.TimeBudget); err != nil {
		return fmt.Errorf("queue: job policy: time_budget: %w", err)
	}
	if out.AttemptTimeout, err = decodeDuration(w.AttemptTimeout); err != nil {
		return fmt.Errorf("queue: job policy: attempt_timeout: %w", err)
	}
	*p = out
	return nil
}

// attemptFields is Attempt without its methods (so that encoding it does
// not recurse).
type attemptFields Attempt

// MarshalJSON encodes the entry in its stored form: the field names of
// Attempt's tags, with Delay as text ("4s") and Action a key.
func (a Attempt) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		attemptFields
		Delay docjson.DurationText `json:"delay,omitzero"`
	}{attemptFields(a), docjson.DurationText(a.Delay)})
}

// UnmarshalJSON decodes the form [Attempt.MarshalJSON] writes (and the
// older ones: Delay in nanoseconds, the action "give up", the outcome "ok").
func (a *Attempt) UnmarshalJSON(data []byte) error {
	var w struct {
		*attemptFields
		Delay json.RawMessage `json:"delay"`
	}
	var out Attempt
	w.attemptFields = (*attemptFields)(&out)
	if err := json.Unmarshal(data, &w); err != nil {
		return fmt.Errorf("queue: history entry: %w", err)
	}
	d, err := decodeDuration(w.Delay)
	if err != nil {
		return fmt.Errorf("queue: history entry: delay: %w", err)
	}
	out.Delay = d
	if out.Action == legacyGiveUp {
		out.Action = retry.GiveUp.Key()
	}
	if out.Outcome == legacyOK {
		out.Outcome = retry.OutcomeSuccess.Key()
	}
	*a = out
	return nil
}

const (
	// legacyGiveUp is how heed stored retry.GiveUp before actions had
	// keys (migration 5 rewrites it).
	legacyGiveUp = "give up"
	// legacyOK is how heed stored retry.OutcomeSuccess before the
	// outcome took the word of the reason, "success" (migration 8
	// rewrites it).
	legacyOK = "ok"
)

func strictDecode(data []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	return d.Decode(v)
}

// decodeDuration reads a duration as text ("1.5s") or, in the older form,
// as a number of nanoseconds; absent or null is 0.
func decodeDuration(raw json.RawMessage) (time.Duration, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	if raw[0] != '"' {
		var ns int64
		if err := json.Unmarshal(raw, &ns); err != nil {
			return 0, fmt.Errorf("%s is not a duration", raw)
		}
		return time.Duration(ns), nil
	}
	var d docjson.DurationText
	err := json.Unmarshal(raw, &d)
	return time.Duration(d), err
}

// legacyKinds and legacyJitters are the numbers heed stored for
// backoff.Kind and backoff.Jitter before they had names: fixed here, so
// that old rows read the same whatever order the constants have now.
var (
	legacyKinds   = [...]backoff.Kind{0: backoff.Exponential, 1: backoff.Constant, 2: backoff.Linear, 3: backoff.Immediate}
	legacyJitters = [...]backoff.Jitter{0: backoff.FullJitter, 1: backoff.NoJitter, 2: backoff.EqualJitter, 3: backoff.DecorrelatedJitter}
)

// decodeSchedule reads a backoff schedule in its JSON form or, when that
// fails, in the older one (Go's default encoding:
// {"Kind":2,"Base":1000000000,...}).
func decodeSchedule(raw json.RawMessage) (*backoff.Schedule, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	s := new(backoff.Schedule)
	err := json.Unmarshal(raw, s)
	if err == nil {
		return s, nil
	}
	var old struct {
		Kind, Jitter uint8
		Base, Cap    time.Duration
		Multiplier   float64
	}
	if strictDecode(raw, &old) != nil {
		return nil, err // not the older form either: the current form's error
	}
	if int(old.Kind) >= len(legacyKinds) || int(old.Jitter) >= len(legacyJitters) {
		return nil, fmt.Errorf("older form: kind %d or jitter %d is not a known one", old.Kind, old.Jitter)
	}
	return &backoff.Schedule{Kind: legacyKinds[old.Kind], Base: old.Base, Cap: old.Cap,
		Multiplier: old.Multiplier, Jitter: legacyJitters[old.Jitter]}, nil
}
