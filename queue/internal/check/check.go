// Package check holds the input checks that queue (for what users pass
// it) and queue/jobstore (for what stores are given) share, so that both
// refuse the same input with the same words. Each returns why its input
// is bad, or "": the callers wrap the reason in their InputError, naming
// the field in their own terms.
package check

import (
	"fmt"
	"slices"
	"unicode"
	"unicode/utf8"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/internal/redact"
)

// Name checks a kind, queue or worker name: not empty, at most max bytes
// of UTF-8, no control characters (NUL, newlines, tabs, DEL, C1), so that
// every store accepts it and every terminal prints it as it is.
func Name(s string, max int) string {
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
func Args(n, max int) string {
	if n > max {
		return fmt.Sprintf("is %s (%d bytes), at most 1 MiB (%d bytes): store large payloads elsewhere and pass a reference", redact.Size(n), n, max)
	}
	return ""
}

// UniqueStates validates the states in which a job holds its unique key
// (nil is the default: available and running) and returns them in the
// order stores keep them (available, running, succeeded, dead, then any
// other valid state), without duplicates; nil when they are the default.
func UniqueStates[S ~string](states []S, valid func(S) bool) ([]S, string) {
	if states == nil {
		return nil, ""
	}
	for _, s := range states {
		if !valid(s) {
			return nil, fmt.Sprintf("has %q, not a state", s)
		}
	}
	if !slices.Contains(states, "available") || !slices.Contains(states, "running") {
		return nil, "must include available and running (a live job always holds its key)"
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
		return nil, ""
	}
	return out, ""
}

// Backoff checks a job's own backoff schedule (nil: none).
func Backoff(s *backoff.Schedule) string {
	if s == nil {
		return ""
	}
	if err := s.Validate(); err != nil {
		return err.Error()
	}
	return ""
}
