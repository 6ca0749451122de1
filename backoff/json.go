package backoff

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// scheduleJSON is the stored and exchanged form of a Schedule. Kind and
// Jitter are always written, by name, so that the form never depends on
// the constants' order or on which of them is the zero value; zero
// durations and multiplier (the defaults) are left out.
type scheduleJSON struct {
	Kind       Kind     `json:"kind"`
	Base       Duration `json:"base,omitzero"`
	Cap        Duration `json:"cap,omitzero"`
	Multiplier float64  `json:"multiplier,omitzero"`
	Jitter     Jitter   `json:"jitter"`
}

// MarshalJSON encodes s as
//
//	{"kind":"exponential","base":"1s","cap":"5m0s","multiplier":3,"jitter":"full"}
//
// kind and jitter by name, always present; base, cap and multiplier left
// out when zero (their defaults); durations as [time.Duration.String]
// writes them. It is the one JSON form of a schedule: the queue stores
// it, and policy files use it. An invalid Kind or Jitter is an error.
func (s Schedule) MarshalJSON() ([]byte, error) {
	return json.Marshal(scheduleJSON{s.Kind, Duration(s.Base), Duration(s.Cap), s.Multiplier, s.Jitter})
}

// UnmarshalJSON decodes the form [Schedule.MarshalJSON] writes. Absent
// fields take their zero values (so the defaults; an absent kind is
// Exponential and an absent jitter FullJitter). An unknown field, an
// unknown kind or jitter name, or a duration [time.ParseDuration] cannot
// read is an error naming it, and leaves s unchanged. It does not
// validate the values (see [Schedule.Validate]).
func (s *Schedule) UnmarshalJSON(data []byte) error {
	var w scheduleJSON
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(&w); err != nil {
		return fmt.Errorf("backoff: schedule: %w", err)
	}
	*s = Schedule{Kind: w.Kind, Base: time.Duration(w.Base), Cap: time.Duration(w.Cap), Multiplier: w.Multiplier, Jitter: w.Jitter}
	return nil
}

// Duration is a time.Duration that is written as text, such as "1.5s"
// ([time.Duration.String]), and read with [time.ParseDuration]: the form
// of every duration in heed's stored and exchanged JSON (schedules,
// policies, job policies). The zero value is 0s.
type Duration time.Duration

// MarshalText writes d as time.Duration's String does ("1m30s").
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText reads text with time.ParseDuration; text it cannot read is
// an error naming it, and leaves d unchanged.
func (d *Duration) UnmarshalText(text []byte) error {
	v, err := time.ParseDuration(string(text))
	if err != nil {
		return fmt.Errorf("backoff: duration %q: want a number with a unit, such as 1.5s or 200ms", text)
	}
	*d = Duration(v)
	return nil
}
