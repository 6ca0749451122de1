// Package wire is heed's HTTP wire format between a client and a server
// that both run heed: the headers (Timeout-Remaining, Retry-Attempt,
// Upstream-Breaker), their grammar, and what a request's context carries
// of them (deadline.Middleware puts it there; retryhttp and heedgrpc read
// it and send it on). Users see its effects through deadline.Middleware,
// deadline.WithUpstreamOwner and the executors, never its names; the
// headers themselves are documented in package deadline.
package wire

import (
	"errors"
	"math"
	"strconv"
	"time"
)

// Header is the name of the HTTP header that carries the time left before
// the caller's deadline, relative to when the request is sent, so clock skew
// between machines does not matter. Its value is written by [FormatHeader]
// and read by [ParseHeader]; examples: "3200ms", "2s", "2999873us".
const Header = "Timeout-Remaining"

// maxDigits is the most digits a header value may have, as in gRPC's
// grpc-timeout. 8 digits of minutes (99999999m, about 190 years) fit in a
// time.Duration; 8 digits of hours do not: the largest Duration is
// 2562047h47m16.854775807s, so ParseHeader rejects 2562048h and up.
const (
	maxDigits = 8
	maxValue  = 99_999_999
)

// ErrBadHeader is the sentinel matched (with [errors.Is]) by every error
// [ParseHeader] returns: the Timeout-Remaining value is malformed.
var ErrBadHeader = errors.New("deadline: bad " + Header + " value")

// HeaderError reports a malformed Timeout-Remaining value. [ParseHeader]
// returns it; it matches [ErrBadHeader] with [errors.Is].
//
// The zero value is a valid (if uninformative) error but is not produced by
// this package. A HeaderError is immutable once made and safe to share
// between goroutines.
type HeaderError struct {
	// Value is the header value as received, untruncated.
	Value string
	// Reason says what was wrong, in lower case, e.g. "fraction not allowed".
	Reason string
}

// Error returns a message such as
// `deadline: Timeout-Remaining "12.5s": fraction not allowed`. Long values
// are cut short and every value is quoted, so the message is safe to log.
func (e *HeaderError) Error() string {
	return "deadline: " + Header + " " + quoteShort(e.Value) + ": " + e.Reason
}

// Is reports whether target is [ErrBadHeader], so that
// errors.Is(err, ErrBadHeader) holds for every *HeaderError.
func (e *HeaderError) Is(target error) bool { return target == ErrBadHeader }

// quoteShort quotes s for an error message, keeping at most 32 bytes of it.
func quoteShort(s string) string {
	const keep = 32
	if len(s) <= keep {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:keep]) + "..."
}

func BadHeader(s, reason string) error {
	return &HeaderError{Value: s, Reason: reason}
}

// units from finest to coarsest; each divides the next.
var units = [...]struct {
	d    time.Duration
	name string
}{
	{time.Nanosecond, "ns"},
	{time.Microsecond, "us"},
	{time.Millisecond, "ms"},
	{time.Second, "s"},
	{time.Minute, "m"},
	{time.Hour, "h"},
}

// ParseHeader parses a Timeout-Remaining value strictly. The grammar is
//
//	value = 1*8DIGIT unit
//	unit  = "h" / "m" / "s" / "ms" / "us" / "ns"
//
// with nothing before, between or after: no sign, no fraction, no
// whitespace (net/http already trims the optional whitespace around a
// header field value), no empty string. Units are case-sensitive: "m" is
// minutes and "us" is microseconds (ASCII only, not "µs"); gRPC's upper-case
// units such as "S" are rejected. Leading zeros are allowed ("0ms", "007s")
// and count toward the 8 digits. Values from 2562048h up do not fit in a
// time.Duration and are rejected rather than clamped.
//
// An accepted value is always >= 0; a result of 0 means no time is left.
// Every error is a [*HeaderError] naming what was wrong and matches
// [ErrBadHeader]. ParseHeader never panics and does not allocate on valid
// input. It is the entry point for servers reading the header; remember to
// take min(value, own limit) and to trust the header only from known peers.
func ParseHeader(s string) (time.Duration, error) {
	if s == "" {
		return 0, BadHeader(s, "empty")
	}
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\n', '\r', '\v', '\f':
			return 0, BadHeader(s, "whitespace not allowed")
		}
	}
	if s[0] == '+' || s[0] == '-' {
		return 0, BadHeader(s, "sign not allowed")
	}
	n := 0
	var v int64
	for n < len(s) && '0' <= s[n] && s[n] <= '9' {
		if n < maxDigits {
			v = v*10 + int64(s[n]-'0')
		}
		n++
	}
	if n < len(s) && (s[n] == '.' || s[n] == ',') {
		return 0, BadHeader(s, "fraction not allowed")
	}
	if n == 0 {
		return 0, BadHeader(s, "missing digits before the unit")
	}
	if n > maxDigits {
		return 0, BadHeader(s, "more than 8 digits")
	}
	if n == len(s) {
		return 0, BadHeader(s, "missing unit (want h, m, s, ms, us or ns)")
	}
	unit := s[n:]
	var u time.Duration
	switch unit {
	case "ns":
		u = time.Nanosecond
	case "us":
		u = time.Microsecond
	case "ms":
		u = time.Millisecond
	case "s":
		u = time.Second
	case "m":
		u = time.Minute
	case "h":
		u = time.Hour
	default:
		return 0, BadHeader(s, "unknown unit "+quoteShort(unit)+
			" (want h, m, s, ms, us or ns; units are case-sensitive)")
	}
	if v > math.MaxInt64/int64(u) {
		return 0, BadHeader(s, "too large for a time.Duration")
	}
	return time.Duration(v) * u, nil
}

// FormatHeader encodes d, the time left, as a Timeout-Remaining value.
//
// It picks the finest unit in which d fits in 8 digits and rounds down in
// that unit, so the value never promises more time than d; then, without
// changing the value, it writes it in the coarsest unit that represents it
// exactly ("2s" rather than "2000000us", "3200ms" rather than "3200000us").
// Thus ParseHeader(FormatHeader(d)) <= d, and d minus it is less than one
// unit of the result and less than d/99999.
//
// A d <= 0 encodes as "0ms", which a server reads as "no time left"; a
// caller whose deadline has passed should not send the request at all
// (deadline.Check tells it so). Every time.Duration encodes, the largest as
// "2562047h".
func FormatHeader(d time.Duration) string {
	if d <= 0 {
		return "0ms"
	}
	i := 0
	for d/units[i].d > maxValue { // hours always fit: MaxInt64/Hour = 2562047
		i++
	}
	v := d - d%units[i].d // round down in the finest fitting unit
	for i+1 < len(units) && v%units[i+1].d == 0 {
		i++
	}
	var buf [12]byte // 8 digits + 2-byte unit
	b := strconv.AppendInt(buf[:0], int64(v/units[i].d), 10)
	b = append(b, units[i].name...)
	return string(b)
}
