package idempotency

import (
	"errors"
	"strconv"
	"unicode/utf8"

	"github.com/heed-go/heed/idempotency/keystore"
)

// keyHeader is the request header that carries the idempotency key (IETF
// httpapi draft "The Idempotency-Key HTTP Header Field").
const keyHeader = "Idempotency-Key"

// ReplayedHeader marks a replayed response: "Idempotent-Replayed: true".
const ReplayedHeader = "Idempotent-Replayed"

// ErrBadKey is matched by every error from [ParseKey]: an Idempotency-Key header that
// is empty, too long, repeated or malformed.
var ErrBadKey = errors.New("idempotency: bad Idempotency-Key")

// keyError reports a malformed Idempotency-Key value. It matches [ErrBadKey].
// Its message quotes at most the first 16 bytes of the value: keys are
// secrets of a sort and are never logged whole.
type keyError struct {
	Value  string // the value as received
	Reason string // what is wrong, in lower case
}

// Error returns a message such as
// `idempotency: Idempotency-Key "abc": unterminated string`.
func (e *keyError) Error() string {
	v := e.Value
	if len(v) > 16 {
		n := 16
		for n > 12 && !utf8.RuneStart(v[n]) {
			n--
		}
		v = v[:n] + "..."
	}
	return "idempotency: " + keyHeader + " " + strconv.Quote(v) + ": " + e.Reason
}

// Is reports whether target is [ErrBadKey].
func (e *keyError) Is(target error) bool { return target == ErrBadKey }

// ParseKey parses one Idempotency-Key field value and returns the key.
//
// Two forms are accepted, so that clients following the draft and clients
// following Stripe's examples both work, and both name the same key:
//
//   - the draft's structured-field string (RFC 8941 sf-string): a quoted
//     string of printable ASCII (space included) where only \" and \\ are
//     escapes: "8e03978e-40d5-43e8-bc93-6894a57f9324";
//   - a bare token of visible ASCII other than DQUOTE, backslash, comma and
//     semicolon: KG5LxwFBepaKHyUD.
//
// Surrounding spaces and tabs are ignored. Structured-field parameters
// (`"k";a=1`) are refused. The key (unquoted) must be 1 to 255 bytes
// ([keystore.MaxKeyLen], as Stripe allows).
// Errors match [ErrBadKey].
func ParseKey(v string) (string, error) {
	s := trimOWS(v)
	if s == "" {
		return "", &keyError{Value: v, Reason: "empty"}
	}
	if s[0] != '"' {
		if len(s) > keystore.MaxKeyLen {
			return "", &keyError{Value: v, Reason: "longer than " + strconv.Itoa(keystore.MaxKeyLen) + " bytes"}
		}
		for i := 0; i < len(s); i++ {
			c := s[i]
			if c <= ' ' || c >= 0x7f || c == '"' || c == '\\' || c == ',' || c == ';' {
				return "", &keyError{Value: v, Reason: describe(c) + " not allowed in a bare key (quote it as a structured-field string)"}
			}
		}
		return s, nil
	}
	// sf-string.
	var buf []byte // allocated only when an escape is met
	start := 1
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\':
			if i+1 >= len(s) || (s[i+1] != '"' && s[i+1] != '\\') {
				return "", &keyError{Value: v, Reason: "bad escape in string (only \\\" and \\\\ are allowed)"}
			}
			if buf == nil {
				buf = make([]byte, 0, len(s))
			}
			buf = append(buf, s[start:i]...)
			i++
			start = i
		case c == '"':
			if i != len(s)-1 {
				if s[i+1] == ';' {
					return "", &keyError{Value: v, Reason: "parameters are not supported"}
				}
				return "", &keyError{Value: v, Reason: "text after the closing quote"}
			}
			var key string
			if buf != nil {
				key = string(append(buf, s[start:i]...))
			} else {
				key = s[start:i]
			}
			if key == "" {
				return "", &keyError{Value: v, Reason: "empty"}
			}
			if len(key) > keystore.MaxKeyLen {
				return "", &keyError{Value: v, Reason: "longer than " + strconv.Itoa(keystore.MaxKeyLen) + " bytes"}
			}
			return key, nil
		case c < ' ' || c >= 0x7f:
			return "", &keyError{Value: v, Reason: describe(c) + " not allowed in a string"}
		}
	}
	return "", &keyError{Value: v, Reason: "unterminated string"}
}

// formatKey returns the Idempotency-Key field value for key: an sf-string,
// as the draft says. It is the inverse of [ParseKey] for valid keys.
func formatKey(key string) string {
	b := make([]byte, 0, len(key)+2)
	b = append(b, '"')
	for i := 0; i < len(key); i++ {
		if key[i] == '"' || key[i] == '\\' {
			b = append(b, '\\')
		}
		b = append(b, key[i])
	}
	return string(append(b, '"'))
}

// describe names a byte for an error message.
func describe(c byte) string {
	if c >= 0x80 {
		return "non-ASCII byte 0x" + strconv.FormatUint(uint64(c), 16)
	}
	return "character " + strconv.QuoteRune(rune(c))
}

func trimOWS(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}
