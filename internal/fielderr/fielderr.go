// Package fielderr is the error of one bad field of a configuration, as
// backoff, budget and breaker return it: its message names the field and
// what is wrong with it ("backoff: Cap is 1s, below Base 2s"), and it
// matches the package's ErrInvalid. Users match ErrInvalid with errors.Is
// and read the message; heed's own packages read Field and Reason to say
// the same in their users' words (a scenario file's keys, a plan's fields,
// the command's flags).
package fielderr

import (
	"errors"
	"fmt"
)

// Error is one bad field. It is not changed after it is made, so it is
// safe to share.
type Error struct {
	// Pkg is the package that refused the field ("backoff"); it prefixes
	// the message.
	Pkg string
	// Field is the field's name as in the Go struct, such as "Base".
	Field string
	// Reason says what is wrong with it, such as "is -1s, must not be
	// negative".
	Reason string
	// Sentinel is what the error matches with errors.Is: the package's
	// ErrInvalid.
	Sentinel error
}

// New returns the error for field of package pkg, matching sentinel, with
// the reason formatted from format and args.
func New(pkg string, sentinel error, field, format string, args ...any) *Error {
	return &Error{Pkg: pkg, Field: field, Reason: fmt.Sprintf(format, args...), Sentinel: sentinel}
}

// Error returns "pkg: Field Reason".
func (e *Error) Error() string { return e.Pkg + ": " + e.Field + " " + e.Reason }

// Is reports whether target is the error's Sentinel.
func (e *Error) Is(target error) bool { return target == e.Sentinel }

// As returns the *Error in err's tree, if there is one.
func As(err error) (*Error, bool) { return errors.AsType[*Error](err) }
