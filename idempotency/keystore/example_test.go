package keystore_test

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/heed-go/heed/idempotency/keystore"
)

// What a store keeps in place of a client's key: a digest of scope and
// key, so that the table hands out no key.
func ExampleStoredKey() {
	k := keystore.StoredKey("user:ann POST /orders", `"8e03978e-40d5-43e8-bc93-6894a57f9324"`)
	fmt.Println(len(k), k == keystore.StoredKey("user:bob POST /orders", `"8e03978e-40d5-43e8-bc93-6894a57f9324"`))
	// Output: 64 false
}

// A store checks its input before it writes: the error names the first bad
// field and matches ErrInvalid.
func ExampleClaim_Validate() {
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	c := keystore.Claim{
		Scope: `"acct_42" POST /payments`, Key: strings.Repeat("k", keystore.MaxKeyLen+1),
		Fingerprint: "sha256:...", Token: "t1",
		Now: now, LeaseUntil: now.Add(30 * time.Second), ExpiresAt: now.Add(24 * time.Hour),
	}
	err := c.Validate()
	fmt.Println(err, errors.Is(err, keystore.ErrInvalid))
	// Output: idempotency: invalid Key: want 1 to 255 bytes true
}
