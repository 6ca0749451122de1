package redact

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
)

// JSON returns the JSON document raw with its secrets redacted: the value
// of every member whose name looks secret ([SecretName]), whatever its
// type, becomes "REDACTED", as does, in an object that is the value of a
// member named "headers", every member that is a secret header
// ([SecretHeader]: Cookie, Idempotency-Key, ...); every string is redacted as [Text] redacts
// it (URLs lose their secrets, credential-like words go). Members keep
// their order. When nothing is redacted, raw itself is returned, byte for
// byte; otherwise the result is compact. raw that is not valid JSON is
// returned as a JSON string of its [Text].
func JSON(raw []byte) []byte {
	var b bytes.Buffer
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	changed, err := jsonValue(dec, &b, false, false)
	if err == nil {
		if _, err2 := dec.Token(); err2 != io.EOF {
			err = errTrailing
		}
	}
	if err != nil {
		s, _ := json.Marshal(Text(string(raw)))
		return s
	}
	if !changed {
		return raw
	}
	return b.Bytes()
}

type jsonError string

func (e jsonError) Error() string { return string(e) }

const errTrailing = jsonError("redact: trailing data after JSON")

// jsonValue copies one value from dec to b, redacting it all when secret;
// headers says it is the value of a member named "headers".
func jsonValue(dec *json.Decoder, b *bytes.Buffer, secret, headers bool) (changed bool, err error) {
	tok, err := dec.Token()
	if err != nil {
		return false, err
	}
	switch t := tok.(type) {
	case json.Delim:
		if secret {
			// Skip the whole object or array: it is replaced.
			for depth := 1; depth > 0; {
				tok, err := dec.Token()
				if err != nil {
					return false, err
				}
				if d, ok := tok.(json.Delim); ok {
					if d == '{' || d == '[' {
						depth++
					} else {
						depth--
					}
				}
			}
			writeString(b, Mark)
			return true, nil
		}
		open, close := byte('{'), byte('}')
		if t == '[' {
			open, close = '[', ']'
		}
		b.WriteByte(open)
		first := true
		for dec.More() {
			if !first {
				b.WriteByte(',')
			}
			first = false
			sec, hdrs := false, false
			if open == '{' {
				kt, err := dec.Token()
				if err != nil {
					return false, err
				}
				k, _ := kt.(string)
				writeString(b, k)
				b.WriteByte(':')
				sec = SecretName(k) || headers && SecretHeader(k)
				hdrs = strings.EqualFold(k, "headers")
			}
			c, err := jsonValue(dec, b, sec, hdrs)
			if err != nil {
				return false, err
			}
			changed = changed || c
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return false, err
		}
		b.WriteByte(close)
		return changed, nil
	case string:
		if secret {
			writeString(b, Mark)
			return true, nil
		}
		s := Text(t)
		writeString(b, s)
		return s != t, nil
	case json.Number:
		if secret {
			writeString(b, Mark)
			return true, nil
		}
		b.WriteString(t.String())
	case bool:
		if secret {
			writeString(b, Mark)
			return true, nil
		}
		if t {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case nil:
		b.WriteString("null") // nothing to hide
	}
	return false, nil
}

func writeString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	b.Truncate(b.Len() - 1) // Encode's newline
}
