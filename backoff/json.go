package backoff

import (
	"encoding"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/heed-go/heed/internal/docjson"
)

// scheduleJSON is the stored and exchanged form of a Schedule. Kind and
// Jitter are always written, by name, so that the form never depends on
// the constants' order or on which of them is the zero value; zero
// durations and multiplier (the defaults) are left out.
type scheduleJSON struct {
	Kind       Kind                 `json:"kind"`
	Base       docjson.DurationText `json:"base,omitzero"`
	Cap        docjson.DurationText `json:"cap,omitzero"`
	Multiplier float64              `json:"multiplier,omitzero"`
	Jitter     Jitter               `json:"jitter"`
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
	return json.Marshal(scheduleJSON{s.Kind, docjson.DurationText(s.Base), docjson.DurationText(s.Cap), s.Multiplier, s.Jitter})
}

// UnmarshalJSON decodes the form [Schedule.MarshalJSON] writes. Absent
// fields take their zero values (so the defaults; an absent kind is
// Exponential and an absent jitter FullJitter). An unknown field, an
// unknown kind or jitter name, or a duration that is not a Go duration is
// an error naming the field and the value, such as
//
//	backoff: schedule: base: "1 second" is not a duration: write a Go duration, such as 250ms or 2s
//
// and leaves s unchanged. It does not validate the values (see
// [Schedule.Validate]).
func (s *Schedule) UnmarshalJSON(data []byte) error {
	fields, err := docjson.Fields(data, scheduleFields[:])
	if err != nil {
		return fmt.Errorf("backoff: schedule: %w", err)
	}
	var w Schedule
	for i, name := range scheduleFields {
		raw, ok := fields[name]
		if !ok {
			continue
		}
		var err error
		switch i {
		case 0:
			err = decodeName(raw, &w.Kind)
		case 1, 2:
			d := &w.Base
			if i == 2 {
				d = &w.Cap
			}
			*d, err = docjson.Duration(raw)
		case 3:
			if err = json.Unmarshal(raw, &w.Multiplier); err != nil {
				err = fmt.Errorf("%s is not a number", raw)
			}
		case 4:
			err = decodeName(raw, &w.Jitter)
		}
		if err != nil {
			return fmt.Errorf("backoff: schedule: %s: %s", name, strings.TrimPrefix(err.Error(), "backoff: "))
		}
	}
	*s = w
	return nil
}

// scheduleFields are the fields of a schedule's JSON form, in the order
// MarshalJSON writes them.
var scheduleFields = [...]string{"kind", "base", "cap", "multiplier", "jitter"}

// decodeName decodes a kind's or a jitter's name into v.
func decodeName(raw json.RawMessage, v encoding.TextUnmarshaler) error {
	var name string
	if err := json.Unmarshal(raw, &name); err != nil {
		return fmt.Errorf("%s is not a name", raw)
	}
	return v.UnmarshalText([]byte(name))
}
