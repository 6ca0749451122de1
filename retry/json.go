package retry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/heed-go/heed/backoff"
)

// policyJSON is the stored and exchanged form of a Policy's data fields.
type policyJSON struct {
	Attempts       int               `json:"attempts,omitzero"`
	Backoff        *backoff.Schedule `json:"backoff,omitempty"`
	AttemptTimeout backoff.Duration  `json:"attempt_timeout,omitzero"`
	TimeBudget     backoff.Duration  `json:"time_budget,omitzero"`
	MinAttemptTime backoff.Duration  `json:"min_attempt_time,omitzero"`
	MaxPushback    backoff.Duration  `json:"max_pushback,omitzero"`
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
	w := policyJSON{Attempts: p.Attempts, AttemptTimeout: backoff.Duration(p.AttemptTimeout),
		TimeBudget: backoff.Duration(p.TimeBudget), MinAttemptTime: backoff.Duration(p.MinAttemptTime),
		MaxPushback: backoff.Duration(p.MaxPushback)}
	if p.Backoff != (backoff.Schedule{}) {
		w.Backoff = &p.Backoff
	}
	return json.Marshal(w)
}

// UnmarshalJSON sets p's data fields from the form [Policy.MarshalJSON]
// writes; absent fields become zero (their defaults). The fields that are
// not data (Retryable, Budget, Breaker, Observe, Clock, Rand) are left as
// they were. An unknown field or a value that cannot be read is an error
// naming it, and leaves p unchanged. It does not validate the values (see
// [Policy.Validate]).
func (p *Policy) UnmarshalJSON(data []byte) error {
	var w policyJSON
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(&w); err != nil {
		return fmt.Errorf("retry: policy: %w", err)
	}
	p.Attempts, p.Backoff = w.Attempts, backoff.Schedule{}
	if w.Backoff != nil {
		p.Backoff = *w.Backoff
	}
	p.AttemptTimeout, p.TimeBudget = time.Duration(w.AttemptTimeout), time.Duration(w.TimeBudget)
	p.MinAttemptTime, p.MaxPushback = time.Duration(w.MinAttemptTime), time.Duration(w.MaxPushback)
	return nil
}
