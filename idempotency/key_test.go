package idempotency_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/heed-go/heed/idempotency"
	"github.com/heed-go/heed/idempotency/keystore"
	"github.com/heed-go/heed/internal/redact"
)

func TestParseKey(t *testing.T) {
	long := strings.Repeat("k", keystore.MaxKeyLen)
	tests := []struct {
		in, want string
		err      string // substring of the error, "" for none
	}{
		{`"8e03978e-40d5-43e8-bc93-6894a57f9324"`, "8e03978e-40d5-43e8-bc93-6894a57f9324", ""},
		{`KG5LxwFBepaKHyUD`, "KG5LxwFBepaKHyUD", ""},
		{`  "abc"	`, "abc", ""},
		{` abc `, "abc", ""},
		{`"with space"`, "with space", ""},
		{`"a\"b\\c"`, `a"b\c`, ""},
		{`base64/+=:key`, "base64/+=:key", ""},
		{`"` + long + `"`, long, ""},
		{long, long, ""},
		{``, "", "empty"},
		{`   `, "", "empty"},
		{`""`, "", "empty"},
		{`"` + long + `k"`, "", "longer than 255"},
		{long + "k", "", "longer than 255"},
		{`"abc`, "", "unterminated"},
		{`"abc\"`, "", "unterminated"},
		{`"a\nb"`, "", "bad escape"},
		{`"a\`, "", "bad escape"},
		{`"abc";x=1`, "", "parameters"},
		{`"abc" "def"`, "", "after the closing quote"},
		{`"abc",def`, "", "after the closing quote"},
		{"\"a\x01b\"", "", "not allowed"},
		{"\"ä\"", "", "not allowed"},
		{`a b`, "", "not allowed in a bare key"},
		{`a,b`, "", "not allowed in a bare key"},
		{`a;b`, "", "not allowed in a bare key"},
		{`a"b`, "", "not allowed in a bare key"},
		{"a\x7fb", "", "not allowed in a bare key"},
	}
	for _, tt := range tests {
		got, err := idempotency.ParseKey(tt.in)
		if tt.err == "" {
			if err != nil || got != tt.want {
				t.Errorf("ParseKey(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.err) || !errors.Is(err, idempotency.ErrBadKey) {
			t.Errorf("ParseKey(%q) = %q, %v; want an error about %q matching ErrBadKey", tt.in, got, err, tt.err)
		}
	}
}

func TestKeyErrorDoesNotQuoteWholeKey(t *testing.T) {
	secret := "0123456789abcdef-SECRET-TAIL"
	_, err := idempotency.ParseKey(secret + " x")
	if err == nil || strings.Contains(err.Error(), "SECRET-TAIL") {
		t.Errorf("error %v quotes the whole key", err)
	}
}

// TestKeyHash: the middleware and retryhttp log keys as redact.KeyHash.
func TestKeyHash(t *testing.T) {
	for _, k := range []string{`"k-123"`, "bare", `"8e03978e-40d5-43e8-bc93-6894a57f9324"`} {
		if got := redact.KeyHash(k); len(got) != 8 {
			t.Errorf("KeyHash(%q) = %q, want 8 hex digits", k, got)
		}
	}
	if redact.KeyHash("") != "" {
		t.Error("KeyHash of empty is not empty")
	}
	// Logs already written hold these hashes: they never change.
	for k, want := range map[string]string{`"order-42"`: "90140eb1", "key-42": "a0334cf4"} {
		if got := redact.KeyHash(k); got != want {
			t.Errorf("KeyHash(%q) = %q, want %q", k, got, want)
		}
	}
}

func FuzzParseKey(f *testing.F) {
	for _, s := range []string{`"abc"`, `abc`, `"a\"b"`, `""`, `"abc";x=1`, " \t\"x\" ", `"\\"`, strings.Repeat("a", 256)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		key, err := idempotency.ParseKey(in)
		if err != nil {
			if !errors.Is(err, idempotency.ErrBadKey) {
				t.Fatalf("error %v does not match ErrBadKey", err)
			}
			if len(in) > 16 && strings.Contains(err.Error(), strconv.Quote(in)) {
				t.Fatalf("error quotes the whole value")
			}
			return
		}
		if key == "" || len(key) > keystore.MaxKeyLen {
			t.Fatalf("ParseKey(%q) = %q: bad length", in, key)
		}
		for i := 0; i < len(key); i++ {
			if key[i] < ' ' || key[i] > '~' {
				t.Fatalf("ParseKey(%q) = %q: byte %#x", in, key, key[i])
			}
		}
		// The canonical form parses back to the same key.
		again, err := idempotency.ParseKey(idempotency.FormatKey(key))
		if err != nil || again != key {
			t.Fatalf("ParseKey(FormatKey(%q)) = %q, %v", key, again, err)
		}
		// A valid key is acceptable to every store.
		c := keystore.Claim{Scope: "s", Key: key, Fingerprint: "f", Token: "t"}
		if err := c.Validate(); err != nil && strings.Contains(err.Error(), "Key") {
			t.Fatalf("parsed key %q refused by stores: %v", key, err)
		}
	})
}
