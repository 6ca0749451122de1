package retry

import (
	"errors"
	"strconv"
	"strings"

	"github.com/heed-go/heed/breaker"
	"github.com/heed-go/heed/budget"
)

// ErrExhausted is matched (with errors.Is) by every error a call returns
// when it gives up: see [ExhaustedError].
var ErrExhausted = errors.New("retry: gave up")

// ExhaustedError is the error [Do] returns when it gives up. It wraps the
// last attempt's error, so errors.Is and errors.As see through it, and it
// matches [ErrExhausted].
type ExhaustedError struct {
	// Reason is why the call gave up.
	Reason Reason
	// Attempts is the number of attempts made (0 when the breaker refused
	// the first).
	Attempts int
	// Err is the last attempt's error, or breaker.ErrOpen when the breaker
	// refused the first attempt.
	Err error
	// Trace is every decision of the call, in order; the last one is the
	// give-up.
	Trace []Decision
}

// Error reads like "retry: gave up after 3 attempts (attempts exhausted):
// connection refused".
func (e *ExhaustedError) Error() string {
	var b strings.Builder
	b.WriteString("retry: gave up after ")
	b.WriteString(strconv.Itoa(e.Attempts))
	if e.Attempts == 1 {
		b.WriteString(" attempt (")
	} else {
		b.WriteString(" attempts (")
	}
	b.WriteString(e.Reason.String())
	b.WriteString(")")
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the last attempt's error.
func (e *ExhaustedError) Unwrap() error { return e.Err }

// Is reports whether target is ErrExhausted, or the sentinel of the
// mechanism that ended the call: budget.ErrExhausted when the retry budget
// refused a retry, breaker.ErrOpen when the breaker refused an attempt.
func (e *ExhaustedError) Is(target error) bool {
	switch target {
	case ErrExhausted:
		return true
	case budget.ErrExhausted:
		return e.Reason == ReasonBudget
	case breaker.ErrOpen:
		return e.Reason == ReasonBreakerOpen
	}
	return false
}

// TraceString renders the trace one decision per line, such as
// "attempt 1: i/o timeout, retry in 180ms".
func (e *ExhaustedError) TraceString() string {
	var b strings.Builder
	for i, d := range e.Trace {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(d.String())
	}
	return b.String()
}
