package keystore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"time"
	"unicode/utf8"
)

// Errors returned by stores. Stores return errors that match them with
// errors.Is (they may wrap them with more context); ctx.Err() passes
// through unchanged.
var (
	// ErrInvalid is matched by every error about bad input to a store (an
	// empty scope, a key too long, a zero time, a body over MaxStoredBody).
	// Nothing was written.
	ErrInvalid = errors.New("idempotency: invalid input")
	// ErrLeaseLost: the key is no longer claimed under the token given
	// (its lease expired and another request took it over, or it expired
	// and was reaped, or it was completed or released already). Nothing
	// was changed.
	ErrLeaseLost = errors.New("idempotency: claim lost")
)

// Limits every store enforces on its input (with [ErrInvalid]).
const (
	// MaxKeyLen is the longest key, in bytes (255, as Stripe allows): the
	// longest idempotency.ParseKey accepts.
	MaxKeyLen = 255
	// MaxScopeLen is the longest scope, in bytes. The middleware hashes
	// scopes that would be longer.
	MaxScopeLen = 1024
	// MaxStoredBody is the largest response body a store keeps: 4 MiB.
	// idempotency.Middleware.MaxResponseBody may not exceed it.
	MaxStoredBody  = 4 << 20
	maxFingerprint = 128
	maxToken       = 64
)

// State is where a key is in its life.
type State string

// The states of a stored key.
const (
	StateRunning   State = "running"   // claimed; the handler has not finished
	StateCompleted State = "completed" // the response is stored for replay
)

// Store keeps idempotency keys: who claimed them, and the responses to
// replay. Implementations: idempotency.NewMemoryStore (tests, one
// process), sqlitestore.Store and pgstore.Store; each passes the conformance suite
// in idempotency/storetest. Methods are safe for concurrent use, take every
// time from their arguments (never a clock), and keep times to the
// microsecond.
//
// A key is identified by its scope and the client's key together: the same
// key in two scopes is two keys.
type Store interface {
	// KeyClaim claims c.Scope/c.Key for the request fingerprinted
	// c.Fingerprint under c.Token, atomically: of any number of concurrent
	// claims of one key, in any number of processes, at most one wins.
	//
	// A claim wins when the key is absent, expired (ExpiresAt <= c.Now,
	// reaped or not), or running with its lease over (LeaseUntil <=
	// c.Now: the earlier request's process died or its handler panicked).
	// Then the key is stored running under c.Token and KeyClaim returns
	// the new record and true. Otherwise nothing changes and KeyClaim
	// returns the stored record (running, or completed with its
	// response) and false.
	//
	// Errors: ErrInvalid for bad input (see [Claim.Validate]).
	KeyClaim(ctx context.Context, c Claim) (*Record, bool, error)

	// KeyComplete stores the final response of the request that holds the
	// claim c.Token, marks the key completed and sets its expiry to
	// c.ExpiresAt. Errors: ErrInvalid for bad input (see
	// [Completion.Validate]); ErrLeaseLost when the key is not running
	// under c.Token.
	KeyComplete(ctx context.Context, c Completion) error

	// KeyExtend moves the lease of the running key e.Scope/e.Key claimed
	// under e.Token to e.LeaseUntil (and its expiry to e.LeaseUntil, if
	// that is later): the middleware calls it while a slow handler runs,
	// so that only a dead process loses its claim. Errors: ErrInvalid for
	// bad input (see [Extension.Validate]); ErrLeaseLost when the key is
	// not running under e.Token (nothing is changed).
	KeyExtend(ctx context.Context, e Extension) error

	// KeyRelease deletes the running key r.Scope/r.Key claimed under
	// r.Token, so that the next request with it runs the handler. Errors:
	// ErrInvalid for bad input (see [Release.Validate]); ErrLeaseLost when
	// the key is not running under r.Token (nothing is deleted).
	KeyRelease(ctx context.Context, r Release) error

	// KeyReap deletes up to limit keys whose expiry is at or before now,
	// running or completed, and returns how many it deleted. Callers
	// repeat it until it returns fewer than limit (see idempotency.Reap). Errors:
	// ErrInvalid for a zero now or limit < 1.
	KeyReap(ctx context.Context, now time.Time, limit int) (int, error)
}

// Claim is the input of [Store.KeyClaim].
type Claim struct {
	Scope       string    // who and where: see idempotency.Middleware; 1 to MaxScopeLen bytes of UTF-8, no NUL
	Key         string    // the client's key: 1 to MaxKeyLen bytes of printable ASCII
	Fingerprint string    // the request's fingerprint: 1 to 128 bytes of UTF-8, no NUL
	Token       string    // this claim's random identity: 1 to 64 bytes of UTF-8, no NUL
	Now         time.Time // the time of the claim
	LeaseUntil  time.Time // after this the claim may be taken over; after Now
	ExpiresAt   time.Time // after this the key may be reaped; not before LeaseUntil
}

// Validate returns an error matching ErrInvalid naming the first bad field.
func (c Claim) Validate() error {
	if err := validKey(c.Scope, c.Key); err != nil {
		return err
	}
	switch {
	case !validText(c.Fingerprint, maxFingerprint):
		return invalid("Fingerprint", "want 1 to 128 bytes of UTF-8 without NUL")
	case !validText(c.Token, maxToken):
		return invalid("Token", "want 1 to 64 bytes of UTF-8 without NUL")
	case c.Now.IsZero():
		return invalid("Now", "zero")
	case !c.LeaseUntil.After(c.Now):
		return invalid("LeaseUntil", "not after Now")
	case c.ExpiresAt.Before(c.LeaseUntil):
		return invalid("ExpiresAt", "before LeaseUntil")
	}
	return nil
}

// Completion is the input of [Store.KeyComplete].
type Completion struct {
	Scope, Key string    // the key, as claimed
	Token      string    // the token it was claimed under
	Response   Response  // the final response to replay
	ExpiresAt  time.Time // when the key may be reaped
}

// Validate returns an error matching ErrInvalid naming the first bad field.
func (c Completion) Validate() error {
	if err := validKey(c.Scope, c.Key); err != nil {
		return err
	}
	switch {
	case !validText(c.Token, maxToken):
		return invalid("Token", "want 1 to 64 bytes of UTF-8 without NUL")
	case c.ExpiresAt.IsZero():
		return invalid("ExpiresAt", "zero")
	}
	return c.Response.validate()
}

// Release gives back a running key ([Store.KeyRelease]).
type Release struct {
	Scope, Key string // the key, as claimed
	Token      string // the token it was claimed under
}

// Validate returns an error matching ErrInvalid naming the first bad field.
func (r Release) Validate() error {
	if err := validKey(r.Scope, r.Key); err != nil {
		return err
	}
	if !validText(r.Token, maxToken) {
		return invalid("Token", "want 1 to 64 bytes of UTF-8 without NUL")
	}
	return nil
}

// Extension moves the lease of a running key ([Store.KeyExtend]).
type Extension struct {
	Scope, Key string    // the key, as claimed
	Token      string    // the token it was claimed under
	LeaseUntil time.Time // the lease's new end; not zero
}

// Validate returns an error matching ErrInvalid naming the first bad field.
func (e Extension) Validate() error {
	if err := (Release{e.Scope, e.Key, e.Token}).Validate(); err != nil {
		return err
	}
	if e.LeaseUntil.IsZero() {
		return invalid("LeaseUntil", "zero")
	}
	return nil
}

// ValidateReap checks the arguments of [Store.KeyReap].
func ValidateReap(now time.Time, limit int) error {
	if now.IsZero() {
		return invalid("now", "zero")
	}
	if limit < 1 {
		return invalid("limit", "less than 1")
	}
	return nil
}

// Response is a stored final response.
type Response struct {
	Status int         // 200 to 599
	Header http.Header // the allowlisted headers, canonical names; may be nil
	Body   []byte      // at most MaxStoredBody bytes; may be nil
}

// validate returns an error matching ErrInvalid naming the first bad field.
func (r Response) validate() error {
	if r.Status < 200 || r.Status > 599 {
		return invalid("Response.Status", fmt.Sprintf("%d is not a final status (200 to 599)", r.Status))
	}
	if len(r.Body) > MaxStoredBody {
		return invalid("Response.Body", fmt.Sprintf("%d bytes, more than MaxStoredBody (%d)", len(r.Body), MaxStoredBody))
	}
	for k, vs := range r.Header {
		if !validText(k, 256) {
			return invalid("Response.Header", "bad name")
		}
		for _, v := range vs {
			if !utf8.ValidString(v) || hasNUL(v) {
				return invalid("Response.Header", "value of "+k+" is not UTF-8 without NUL")
			}
		}
	}
	return nil
}

// Record is a stored key, as [Store.KeyClaim] returns it.
type Record struct {
	Scope, Key  string
	Fingerprint string    // of the request that claimed it
	State       State     // running or completed
	CreatedAt   time.Time // when it was (last) claimed
	LeaseUntil  time.Time // for a running key: when its claim may be taken over
	ExpiresAt   time.Time // when it may be reaped
	Response    *Response // for a completed key: the response to replay
}

// ValidScope reports whether s is a scope a store takes: 1 to
// [MaxScopeLen] bytes of UTF-8 without NUL. The middleware stores a scope
// that is not as its SHA-256.
func ValidScope(s string) bool { return validText(s, MaxScopeLen) }

func validKey(scope, key string) error {
	if !ValidScope(scope) {
		return invalid("Scope", fmt.Sprintf("want 1 to %d bytes of UTF-8 without NUL", MaxScopeLen))
	}
	if key == "" || len(key) > MaxKeyLen {
		return invalid("Key", fmt.Sprintf("want 1 to %d bytes", MaxKeyLen))
	}
	for i := 0; i < len(key); i++ {
		if key[i] < ' ' || key[i] >= 0x7f {
			return invalid("Key", "want printable ASCII")
		}
	}
	return nil
}

func validText(s string, max int) bool {
	return s != "" && len(s) <= max && utf8.ValidString(s) && !hasNUL(s)
}

func hasNUL(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return true
		}
	}
	return false
}

type invalidError struct{ field, reason string }

func (e *invalidError) Error() string {
	return "idempotency: invalid " + e.field + ": " + e.reason
}

func (e *invalidError) Is(target error) bool { return target == ErrInvalid }

func invalid(field, reason string) error { return &invalidError{field, reason} }

// StoredKey returns what a store keeps in place of the client's key: the
// SHA-256 of scope, a NUL byte and key, in 64 lower-case hex digits. A key
// is a bearer of the right to have its response replayed, so a store keeps
// only this digest, next to the scope in clear (scopes name principals and
// routes, not secrets): a copy of the table, a backup or a query log hands
// out no key. Keys come from clients and are random enough that an
// unkeyed hash is as good as an HMAC here, and needs no secret to manage.
//
// sqlitestore and pgstore use it for every statement, and their migrations
// (sqlitestore 0004, pgstore 004) rewrote keys stored raw by older
// versions the same way. A Store of your own should use it too.
func StoredKey(scope, key string) string {
	h := sha256.New()
	h.Write([]byte(scope))
	h.Write([]byte{0})
	h.Write([]byte(key))
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0]))
}
