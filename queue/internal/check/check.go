// Package check holds the input checks that queue (for what users pass
// it) and queue/jobstore (for what stores are given) share, so that both
// refuse the same input with the same words. Each returns an *InputError
// naming the field in the caller's terms, or nil. InputError itself lives
// here so that the checks can build it; jobstore.InputError and
// queue.InputError name it by alias.
package check

import (
	"errors"
	"fmt"
	"slices"
	"unicode"
	"unicode/utf8"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/internal/redact"
)

// ErrInvalid is jobstore.ErrInvalid (and queue.ErrInvalid): every
// InputError matches it.
var ErrInvalid = errors.New("queue: invalid input")

// InputError is jobstore.InputError: bad input, naming the field.
type InputError struct {
	Field  string // such as "kind", "args" or "EnqueueOptions.In"
	Reason string // what is wrong with it
}

// Error reads like "queue: kind is empty".
func (e *InputError) Error() string { return "queue: " + e.Field + " " + e.Reason }

// Is reports whether target is ErrInvalid.
func (e *InputError) Is(target error) bool { return target == ErrInvalid }

// Name checks a kind, queue or worker name: not empty, at most max bytes
// of UTF-8, no control characters (NUL, newlines, tabs, DEL, C1), so that
// every store accepts it and every terminal prints it as it is.
func Name(field, s string, max int) error {
	if why := nameReason(s, max); why != "" {
		return &InputError{Field: field, Reason: why}
	}
	return nil
}

// OptionalName is Name for a field that may be empty.
func OptionalName(field, s string, max int) error {
	if s == "" {
		return nil
	}
	return Name(field, s, max)
}

// nameReason is why s is not a valid name, or "".
func nameReason(s string, max int) string {
	switch {
	case s == "":
		return "is empty"
	case len(s) > max:
		return fmt.Sprintf("is %d bytes long, at most %d", len(s), max)
	case !utf8.ValidString(s):
		return fmt.Sprintf("is not valid UTF-8: %.40q", s)
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return fmt.Sprintf("has the control character %U: %.40q", r, s)
		}
	}
	return ""
}

// Args checks the size n of job arguments against max.
func Args(field string, n, max int) error {
	if n > max {
		return &InputError{Field: field, Reason: fmt.Sprintf("is %s (%d bytes), at most 1 MiB (%d bytes): store large payloads elsewhere and pass a reference", redact.Size(n), n, max)}
	}
	return nil
}

// UniqueStates validates the states in which a job holds its unique key
// (nil is the default: available and running) and returns them in the
// order stores keep them (available, running, succeeded, dead, then any
// other valid state), without duplicates; nil when they are the default.
func UniqueStates[S ~string](field string, states []S, valid func(S) bool) ([]S, error) {
	if states == nil {
		return nil, nil
	}
	for _, s := range states {
		if !valid(s) {
			return nil, &InputError{Field: field, Reason: fmt.Sprintf("has %q, not a state", s)}
		}
	}
	if !slices.Contains(states, "available") || !slices.Contains(states, "running") {
		return nil, &InputError{Field: field, Reason: "must include available and running (a live job always holds its key)"}
	}
	out := make([]S, 0, len(states))
	for _, s := range []S{"available", "running", "succeeded", "dead"} {
		if slices.Contains(states, s) {
			out = append(out, s)
		}
	}
	for _, s := range states { // states added later keep their place at the end
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	if slices.Equal(out, []S{"available", "running"}) {
		return nil, nil
	}
	return out, nil
}

// Policy checks a job's (or a kind's) own backoff schedule (nil: none),
// the one override a job policy holds that can be invalid; field names
// the policy, as in "EnqueueOptions.Policy".
func Policy(field string, s *backoff.Schedule) error {
	if s == nil {
		return nil
	}
	if err := s.Validate(); err != nil {
		return &InputError{Field: field + ".Backoff", Reason: err.Error()}
	}
	return nil
}
