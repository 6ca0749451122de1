package retry

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/internal/docjson"
)

// policyJSON is the stored and exchanged form of a Policy's data fields.
type policyJSON struct {
	Attempts       int                  `json:"attempts,omitzero"`
	Backoff        *backoff.Schedule    `json:"backoff,omitempty"`
	AttemptTimeout docjson.DurationText `json:"attempt_timeout,omitzero"`
	TimeBudget     docjson.DurationText `json:"time_budget,omitzero"`
	MinAttemptTime docjson.DurationText `json:"min_attempt_time,omitzero"`
	MaxPushback    docjson.DurationText `json:"max_pushback,omitzero"`
}

// MarshalJSON encodes the policy's data fields, the one JSON form of a
// policy (the queue's job policies and policy files use the same names
// and forms):
//
//	{"attempts":5,"backoff":{"kind":"exponential","base":"200ms","jitter":"full"},
//	 "attempt_timeout":"2s","time_budget":"30s","min_attempt_time":"50ms","max_pushback":"1m0s"}
//
// Zero fields (their defaults) are left out, the zero Backoff included;
// Attempts is a number (-1 for Unlimited), durations are text as
// [time.Duration.String] writes them, and the backoff is
// [backoff.Schedule.MarshalJSON]'s form. Retryable, Budget, Breaker,
// Observe, Clock and Rand are not data and are not encoded.
func (p Policy) MarshalJSON() ([]byte, error) {
	w := policyJSON{Attempts: p.Attempts, AttemptTimeout: docjson.DurationText(p.AttemptTimeout),
		TimeBudget: docjson.DurationText(p.TimeBudget), MinAttemptTime: docjson.DurationText(p.MinAttemptTime),
		MaxPushback: docjson.DurationText(p.MaxPushback)}
	if p.Backoff != (backoff.Schedule{}) {
		w.Backoff = &p.Backoff
	}
	return json.Marshal(w)
}

// UnmarshalJSON sets p's data fields from the form [Policy.MarshalJSON]
// writes; absent fields become zero (their defaults). It is heed's one
// decoder of a policy document: heed sim's scenario layers and heed plan's
// deadline steps, read from YAML, hand their policy fields to it, so a
// policy has the same field names and duration syntax everywhere (Go
// durations such as "250ms" or "1m30s"). The fields that are not data
// (Retryable, Budget, Breaker, Observe, Clock, Rand) are left as they were.
// An unknown field or a value that cannot be read is an error naming the
// field and the value, such as
//
//	retry: policy: attempt_timeout: "2 seconds" is not a duration: write a Go duration, such as 250ms or 2s
//
// and leaves p unchanged. It does not validate the values (see
// [Policy.Validate]).
func (p *Policy) UnmarshalJSON(data []byte) error {
	fields, err := docjson.Fields(data, policyFields[:])
	if err != nil {
		return fmt.Errorf("retry: policy: %w", err)
	}
	var w Policy
	durs := [...]*time.Duration{&w.AttemptTimeout, &w.TimeBudget, &w.MinAttemptTime, &w.MaxPushback}
	for i, name := range policyFields {
		raw, ok := fields[name]
		if !ok {
			continue
		}
		var err error
		switch i {
		case 0:
			if err = json.Unmarshal(raw, &w.Attempts); err != nil {
				err = fmt.Errorf("%s is not a number of attempts", raw)
			}
		case 1:
			if err = json.Unmarshal(raw, &w.Backoff); err != nil {
				// The schedule's error names its field: backoff.base.
				return fmt.Errorf("retry: policy: backoff.%s", strings.TrimPrefix(err.Error(), "backoff: schedule: "))
			}
		default:
			*durs[i-2], err = docjson.Duration(raw)
		}
		if err != nil {
			return fmt.Errorf("retry: policy: %s: %w", name, err)
		}
	}
	p.Attempts, p.Backoff = w.Attempts, w.Backoff
	p.AttemptTimeout, p.TimeBudget = w.AttemptTimeout, w.TimeBudget
	p.MinAttemptTime, p.MaxPushback = w.MinAttemptTime, w.MaxPushback
	return nil
}

// policyFields are the fields of a policy document, in the order
// UnmarshalJSON reads them (and [Policy.MarshalJSON] writes them).
var policyFields = [...]string{"attempts", "backoff", "attempt_timeout", "time_budget", "min_attempt_time", "max_pushback"}
