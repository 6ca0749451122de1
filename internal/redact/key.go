package redact

import (
	"crypto/sha256"
	"encoding/hex"
)

// KeyHash returns the short hash under which an idempotency key appears in
// logs: the first 8 hex digits of its SHA-256 ("" for no key).
func KeyHash(key string) string {
	if key == "" {
		return ""
	}
	s := sha256.Sum256([]byte(key))
	return hex.EncodeToString(s[:4])
}
