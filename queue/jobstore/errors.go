package jobstore

import "github.com/heed-go/heed/queue/internal/check"

// InputError reports bad input, naming the field. It matches [ErrInvalid].
type InputError struct {
	Field  string // such as "kind", "args" or "EnqueueOptions.In"
	Reason string // what is wrong with it
}

// Error reads like "queue: kind is empty".
func (e *InputError) Error() string { return "queue: " + e.Field + " " + e.Reason }

// Is reports whether target is ErrInvalid.
func (e *InputError) Is(target error) bool { return target == ErrInvalid }

// validate checks the per-job overrides, naming field.
func (p JobPolicy) validate(field string) error {
	if why := check.Backoff(p.Backoff); why != "" {
		return &InputError{field + ".Backoff", why}
	}
	return nil
}
