package queue

import (
	"github.com/heed-go/heed/queue/internal/check"
	"github.com/heed-go/heed/queue/jobstore"
)

// The checks of what users pass in. They are queue/jobstore's checks
// (package check holds both), so a user's bad input and a store's are
// refused with the same words; here they name the user's fields.

// validName checks a kind, queue or worker name (see check.Name).
func validName(field, s string, max int) error {
	if why := check.Name(s, max); why != "" {
		return &InputError{Field: field, Reason: why}
	}
	return nil
}

// validOptionalName is validName for a field that may be empty.
func validOptionalName(field, s string, max int) error {
	if s == "" {
		return nil
	}
	return validName(field, s, max)
}

// validArgs checks the size of job arguments.
func validArgs(field string, n int) error {
	if why := check.Args(n, jobstore.MaxArgs); why != "" {
		return &InputError{Field: field, Reason: why}
	}
	return nil
}

// validPolicy checks a job's (or a kind's) overrides.
func validPolicy(field string, p JobPolicy) error {
	if why := check.Backoff(p.Backoff); why != "" {
		return &InputError{Field: field + ".Backoff", Reason: why}
	}
	return nil
}

// uniqueStates validates states (nil is the default) and returns them in
// the stored order, without duplicates.
func uniqueStates(field string, states []State) ([]State, error) {
	out, why := check.UniqueStates(states, State.Valid)
	if why != "" {
		return nil, &InputError{Field: field, Reason: why}
	}
	return out, nil
}
