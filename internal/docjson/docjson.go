// Package docjson reads heed's policy documents (a backoff.Schedule, a
// retry.Policy, and through them heed sim's scenario layers and heed plan's
// deadline steps) one field at a time, so that every error names the field
// and the value it is about, and reads every duration one way: a Go
// duration, as [time.ParseDuration] takes it. Every JSON form heed writes
// (schedules, policies, the queue's job policies and histories) writes its
// durations one way too: [DurationText].
package docjson

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Hint ends the error of a duration that cannot be read: every
// duration in a policy document (JSON, heed sim's scenarios, heed plan's
// plan files) is a Go duration, read by [time.ParseDuration].
const Hint = "write a Go duration, such as 250ms or 2s"

// Fields decodes the JSON object data into its fields, each under
// its name in known (matched without regard to case, as encoding/json
// matches struct fields). A field not in known is an error naming it and
// the known ones; so is data that is not an object. It is how heed's
// policy documents (a backoff.Schedule, a retry.Policy) read their fields one at
// a time, so that an error names the field it is about.
func Fields(data []byte, known []string) (map[string]json.RawMessage, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, err
	}
	if raw == nil {
		return nil, errors.New("null is not an object")
	}
	fields := make(map[string]json.RawMessage, len(raw))
	var unknown []string
	for name, v := range raw {
		i := slices.IndexFunc(known, func(k string) bool { return strings.EqualFold(k, name) })
		if i < 0 {
			unknown = append(unknown, strconv.Quote(name))
			continue
		}
		fields[known[i]] = v
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return nil, fmt.Errorf("unknown field %s (known: %s)", strings.Join(unknown, ", "), strings.Join(known, ", "))
	}
	return fields, nil
}

// Duration decodes a duration of a policy document: a JSON string
// holding a Go duration ("250ms", "1m30s"). Anything else is an error
// quoting it and ending with [Hint].
func Duration(raw json.RawMessage) (time.Duration, error) {
	var text string
	if err := json.Unmarshal(raw, &text); err != nil {
		return 0, fmt.Errorf("%s is not a duration: %s", raw, Hint)
	}
	return ParseDuration(text)
}

// DurationText is a time.Duration that is written as text, such as "1.5s"
// ([time.Duration.String]), and read with [time.ParseDuration]: the form
// of every duration in heed's stored and exchanged JSON (schedules,
// policies, job policies, history entries). The zero value is 0s. It was
// backoff.Duration; its texts and its error are unchanged.
type DurationText time.Duration

// MarshalText writes d as time.Duration's String does ("1m30s").
func (d DurationText) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText reads text with time.ParseDuration; text it cannot read is
// an error naming it, and leaves d unchanged. The error says "backoff:
// duration", as it did when the type was backoff.Duration.
func (d *DurationText) UnmarshalText(text []byte) error {
	v, err := time.ParseDuration(string(text))
	if err != nil {
		return fmt.Errorf("backoff: duration %q: %s", text, Hint)
	}
	*d = DurationText(v)
	return nil
}

// ParseDuration reads a duration of a policy document held as text (a
// YAML scalar): a Go duration. Anything else is an error quoting s and
// ending with [Hint].
func ParseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration: %s", s, Hint)
	}
	return d, nil
}

// Policy is a retry policy's fields as a YAML file holds them: heed sim's
// scenario layers and heed plan's deadline steps embed it (`yaml:",inline"`)
// under the names of retry.Policy's JSON form. Its JSON encoding is that
// form, for retry.Policy.UnmarshalJSON, the one decoder of a policy: the
// readers hand it over instead of reading the fields themselves.
type Policy struct {
	Attempts       *int     `yaml:"attempts" json:"attempts,omitempty"`
	Backoff        *Backoff `yaml:"backoff" json:"backoff,omitempty"`
	AttemptTimeout string   `yaml:"attempt_timeout" json:"attempt_timeout,omitempty"`
	TimeBudget     string   `yaml:"time_budget" json:"time_budget,omitempty"`
	MinAttemptTime string   `yaml:"min_attempt_time" json:"min_attempt_time,omitempty"`
	MaxPushback    string   `yaml:"max_pushback" json:"max_pushback,omitempty"`
}

// Backoff is a backoff schedule's fields as a YAML file holds them, under
// the names of backoff.Schedule's JSON form.
type Backoff struct {
	Kind       string   `yaml:"kind" json:"kind,omitempty"`
	Base       string   `yaml:"base" json:"base,omitempty"`
	Cap        string   `yaml:"cap" json:"cap,omitempty"`
	Multiplier *float64 `yaml:"multiplier" json:"multiplier,omitempty"`
	Jitter     string   `yaml:"jitter" json:"jitter,omitempty"`
}

// JSON returns p in retry.Policy's JSON form. Its one error is a
// multiplier JSON cannot hold (YAML's .nan or .inf), named as the decoder
// names fields.
func (p Policy) JSON() ([]byte, error) {
	if b := p.Backoff; b != nil && b.Multiplier != nil && (math.IsNaN(*b.Multiplier) || math.IsInf(*b.Multiplier, 0)) {
		return nil, fmt.Errorf("backoff.multiplier: %v is not a number", *b.Multiplier)
	}
	return json.Marshal(p)
}
