// Package storetest is the conformance suite of an idempotency key store
// (keystore.Store, package idempotency/keystore): every store heed ships
// (idempotency.NewMemoryStore's, sqlitestore, pgstore) runs it, and a
// store of your own should too:
//
//	func TestIdempotencyStore(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) keystore.Store {
//			return openFreshStore(t) // closed by t.Cleanup
//		})
//	}
//
// The store tests use fixed instants, never the clock, so a store must
// take every time from its arguments. [Benchmark] measures the middleware
// over a store.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heed-go/heed/idempotency"
	"github.com/heed-go/heed/idempotency/keystore"
)

// t0 is the instant the tests start at (microsecond precision).
var t0 = time.Date(2026, 3, 4, 5, 6, 7, 891011000, time.UTC)

var ctx = context.Background()

// Run runs the conformance suite, each test in its own subtest with a
// fresh, empty store from open. open should register the store's Close
// with t.Cleanup.
func Run(t *testing.T, open func(t *testing.T) keystore.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s keystore.Store)
	}{
		{"ClaimNew", testClaimNew},
		{"ClaimConcurrent", testClaimConcurrent},
		{"TakeOverConcurrent", testTakeOverConcurrent},
		{"CompleteReplay", testCompleteReplay},
		{"CompleteTokenGuard", testCompleteTokenGuard},
		{"FingerprintKept", testFingerprintKept},
		{"LeaseExpiryReclaim", testLeaseExpiryReclaim},
		{"LeaseExtend", testLeaseExtend},
		{"KeyExpiry", testKeyExpiry},
		{"Reap", testReap},
		{"ScopeIsolation", testScopeIsolation},
		{"Release", testRelease},
		{"Oversized", testOversized},
		{"BadInput", testBadInput},
		{"MiddlewareConcurrent", testMiddlewareConcurrent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.fn(t, open(t))
		})
	}
}

func claim(scope, key, fp, token string, now time.Time) keystore.Claim {
	return keystore.Claim{Scope: scope, Key: key, Fingerprint: fp, Token: token,
		Now: now, LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(24 * time.Hour)}
}

func mustClaim(t *testing.T, s keystore.Store, c keystore.Claim, wantWon bool) *keystore.Record {
	t.Helper()
	rec, won, err := s.KeyClaim(ctx, c)
	if err != nil {
		t.Fatalf("KeyClaim(%s/%s, token %s): %v", c.Scope, c.Key, c.Token, err)
	}
	if won != wantWon {
		t.Fatalf("KeyClaim(%s/%s, token %s) won = %v, want %v (record %+v)", c.Scope, c.Key, c.Token, won, wantWon, rec)
	}
	if rec == nil {
		t.Fatalf("KeyClaim returned a nil record")
	}
	return rec
}

func complete(t *testing.T, s keystore.Store, scope, key, token string, resp keystore.Response, exp time.Time) {
	t.Helper()
	err := s.KeyComplete(ctx, keystore.Completion{Scope: scope, Key: key, Token: token, Response: resp, ExpiresAt: exp})
	if err != nil {
		t.Fatalf("KeyComplete(%s/%s, token %s): %v", scope, key, token, err)
	}
}

func testClaimNew(t *testing.T, s keystore.Store) {
	c := claim(`"alice" POST /pay`, "k1", "fp1", "tok1", t0)
	rec := mustClaim(t, s, c, true)
	want := keystore.Record{Scope: c.Scope, Key: c.Key, Fingerprint: "fp1", State: keystore.StateRunning,
		CreatedAt: t0, LeaseUntil: t0.Add(time.Minute), ExpiresAt: t0.Add(24 * time.Hour)}
	checkRecord(t, rec, want)
	// While the lease runs, a second claim loses and sees the running key.
	rec = mustClaim(t, s, claim(c.Scope, c.Key, "fp1", "tok2", t0.Add(time.Second)), false)
	checkRecord(t, rec, want)
}

func checkRecord(t *testing.T, got *keystore.Record, want keystore.Record) {
	t.Helper()
	if got.Scope != want.Scope || got.Key != want.Key || got.Fingerprint != want.Fingerprint || got.State != want.State {
		t.Errorf("record %q/%q fp %q state %q, want %q/%q fp %q state %q",
			got.Scope, got.Key, got.Fingerprint, got.State, want.Scope, want.Key, want.Fingerprint, want.State)
	}
	if !got.CreatedAt.Equal(want.CreatedAt) {
		t.Errorf("CreatedAt %v, want %v", got.CreatedAt, want.CreatedAt)
	}
	if want.State == keystore.StateRunning && !got.LeaseUntil.Equal(want.LeaseUntil) {
		t.Errorf("LeaseUntil %v, want %v", got.LeaseUntil, want.LeaseUntil)
	}
	if !got.ExpiresAt.Equal(want.ExpiresAt) {
		t.Errorf("ExpiresAt %v, want %v", got.ExpiresAt, want.ExpiresAt)
	}
	if want.State == keystore.StateRunning && got.Response != nil {
		t.Errorf("running record has a response: %+v", got.Response)
	}
}

func testClaimConcurrent(t *testing.T, s keystore.Store) {
	const n = 50
	var wins atomic.Int64
	var winner atomic.Value
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			tok := fmt.Sprintf("tok%02d", i)
			rec, won, err := s.KeyClaim(ctx, claim("scope", "same-key", "fp-"+tok, tok, t0))
			if err != nil {
				t.Errorf("claim %d: %v", i, err)
				return
			}
			if won {
				wins.Add(1)
				winner.Store(rec.Fingerprint)
			} else if rec.State != keystore.StateRunning {
				t.Errorf("claim %d lost to a key in state %q", i, rec.State)
			}
		}()
	}
	close(start)
	wg.Wait()
	if w := wins.Load(); w != 1 {
		t.Fatalf("%d of %d concurrent claims won, want exactly 1", w, n)
	}
	rec := mustClaim(t, s, claim("scope", "same-key", "other", "late", t0.Add(time.Second)), false)
	if rec.Fingerprint != winner.Load().(string) {
		t.Errorf("stored fingerprint %q, want the winner's %q", rec.Fingerprint, winner.Load())
	}
}

// Many requests find a lapsed claim, or an expired key, at once: exactly
// one takes it over.
func testTakeOverConcurrent(t *testing.T, s keystore.Store) {
	mustClaim(t, s, claim("sc", "lapsed", "fp", "dead", t0), true)
	mustClaim(t, s, claim("sc", "expired", "fp", "tok", t0), true)
	complete(t, s, "sc", "expired", "tok", keystore.Response{Status: 200}, t0.Add(time.Hour))
	later := t0.Add(2 * time.Hour)
	for _, key := range []string{"lapsed", "expired"} {
		const n = 20
		var wins atomic.Int64
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, won, err := s.KeyClaim(ctx, claim("sc", key, "fp", fmt.Sprintf("new%02d", i), later))
				if err != nil {
					t.Errorf("claim %d: %v", i, err)
				}
				if won {
					wins.Add(1)
				}
			}()
		}
		close(start)
		wg.Wait()
		if w := wins.Load(); w != 1 {
			t.Errorf("%s key: %d of %d concurrent claims took it over, want 1", key, w, n)
		}
	}
}

func testCompleteReplay(t *testing.T, s keystore.Store) {
	body := make([]byte, 0, 70000)
	for i := range 70000 {
		body = append(body, byte(i*7)) // every byte value, NULs included
	}
	cases := []struct {
		name string
		resp keystore.Response
	}{
		{"created", keystore.Response{Status: 201, Header: http.Header{
			"Content-Type": {"application/json"}, "Location": {"/payments/7"}, "Link": {"<a>; rel=x", "<b>; rel=y"},
		}, Body: []byte(`{"id":7,"note":"ünïcode ✓"}`)}},
		{"binary", keystore.Response{Status: 200, Header: http.Header{"Content-Type": {"application/octet-stream"}}, Body: body}},
		{"error", keystore.Response{Status: 500, Body: []byte("boom\n")}},
		{"empty", keystore.Response{Status: 204}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			key := "key-" + strconv.Itoa(i)
			mustClaim(t, s, claim("sc", key, "fp", "tok", t0), true)
			exp := t0.Add(2 * time.Second).Add(24 * time.Hour)
			complete(t, s, "sc", key, "tok", tc.resp, exp)
			rec := mustClaim(t, s, claim("sc", key, "fp", "tok-again", t0.Add(5*time.Minute)), false)
			checkRecord(t, rec, keystore.Record{Scope: "sc", Key: key, Fingerprint: "fp", State: keystore.StateCompleted,
				CreatedAt: t0, ExpiresAt: exp})
			if rec.Response == nil {
				t.Fatal("completed record without a response")
			}
			checkResponse(t, rec.Response, &tc.resp)
		})
	}
}

func checkResponse(t *testing.T, got, want *keystore.Response) {
	t.Helper()
	if got.Status != want.Status {
		t.Errorf("status %d, want %d", got.Status, want.Status)
	}
	if !bytes.Equal(got.Body, want.Body) {
		t.Errorf("body differs: %d bytes, want %d", len(got.Body), len(want.Body))
	}
	if len(got.Header) != len(want.Header) {
		t.Errorf("header %v, want %v", got.Header, want.Header)
	}
	for k, vs := range want.Header {
		if strings.Join(got.Header[k], "\x00") != strings.Join(vs, "\x00") {
			t.Errorf("header %s = %q, want %q", k, got.Header[k], vs)
		}
	}
}

func testCompleteTokenGuard(t *testing.T, s keystore.Store) {
	mustClaim(t, s, claim("sc", "k", "fp", "tok", t0), true)
	resp := keystore.Response{Status: 200, Body: []byte("ok")}
	exp := t0.Add(time.Hour)
	err := s.KeyComplete(ctx, keystore.Completion{Scope: "sc", Key: "k", Token: "not-mine", Response: resp, ExpiresAt: exp})
	if !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("complete with another token: %v, want ErrLeaseLost", err)
	}
	err = s.KeyComplete(ctx, keystore.Completion{Scope: "sc", Key: "absent", Token: "tok", Response: resp, ExpiresAt: exp})
	if !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("complete an absent key: %v, want ErrLeaseLost", err)
	}
	complete(t, s, "sc", "k", "tok", resp, exp)
	err = s.KeyComplete(ctx, keystore.Completion{Scope: "sc", Key: "k", Token: "tok", Response: keystore.Response{Status: 500}, ExpiresAt: exp})
	if !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("complete twice: %v, want ErrLeaseLost", err)
	}
	rec := mustClaim(t, s, claim("sc", "k", "fp", "t2", t0.Add(time.Second)), false)
	checkResponse(t, rec.Response, &resp)
}

func testFingerprintKept(t *testing.T, s keystore.Store) {
	mustClaim(t, s, claim("sc", "k", "fp-first", "tok", t0), true)
	rec := mustClaim(t, s, claim("sc", "k", "fp-second", "tok2", t0.Add(time.Second)), false)
	if rec.Fingerprint != "fp-first" {
		t.Errorf("running: fingerprint %q, want fp-first", rec.Fingerprint)
	}
	complete(t, s, "sc", "k", "tok", keystore.Response{Status: 200}, t0.Add(time.Hour))
	rec = mustClaim(t, s, claim("sc", "k", "fp-second", "tok3", t0.Add(2*time.Second)), false)
	if rec.Fingerprint != "fp-first" || rec.State != keystore.StateCompleted {
		t.Errorf("completed: fingerprint %q state %q, want fp-first completed", rec.Fingerprint, rec.State)
	}
}

func testLeaseExpiryReclaim(t *testing.T, s keystore.Store) {
	// The first request's process dies: its claim lapses with the lease.
	mustClaim(t, s, claim("sc", "k", "fp", "dead", t0), true)
	mustClaim(t, s, claim("sc", "k", "fp", "early", t0.Add(time.Minute-time.Microsecond)), false)
	later := t0.Add(time.Minute) // LeaseUntil <= now: taken over
	rec := mustClaim(t, s, claim("sc", "k", "fp2", "second", later), true)
	checkRecord(t, rec, keystore.Record{Scope: "sc", Key: "k", Fingerprint: "fp2", State: keystore.StateRunning,
		CreatedAt: later, LeaseUntil: later.Add(time.Minute), ExpiresAt: later.Add(24 * time.Hour)})
	// The dead claim's token no longer works.
	resp := keystore.Response{Status: 200, Body: []byte("late")}
	err := s.KeyComplete(ctx, keystore.Completion{Scope: "sc", Key: "k", Token: "dead", Response: resp, ExpiresAt: later.Add(time.Hour)})
	if !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("complete under a lapsed claim: %v, want ErrLeaseLost", err)
	}
	if err := s.KeyRelease(ctx, keystore.Release{Scope: "sc", Key: "k", Token: "dead"}); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("release under a lapsed claim: %v, want ErrLeaseLost", err)
	}
	complete(t, s, "sc", "k", "second", resp, later.Add(time.Hour))
	// A completed key is never taken over before it expires, lease or not.
	rec = mustClaim(t, s, claim("sc", "k", "fp2", "third", later.Add(30*time.Minute)), false)
	checkResponse(t, rec.Response, &resp)
}

func testLeaseExtend(t *testing.T, s keystore.Store) {
	c := claim("sc", "k", "fp", "tok", t0)
	c.ExpiresAt = c.LeaseUntil.Add(time.Minute) // expiry t0+2m
	mustClaim(t, s, c, true)
	// Renewed at t0+30s for another 5 minutes: past the expiry too.
	if err := s.KeyExtend(ctx, keystore.Extension{Scope: "sc", Key: "k", Token: "tok", LeaseUntil: t0.Add(5 * time.Minute)}); err != nil {
		t.Fatalf("KeyExtend: %v", err)
	}
	rec := mustClaim(t, s, claim("sc", "k", "fp", "other", t0.Add(4*time.Minute)), false)
	if !rec.LeaseUntil.Equal(t0.Add(5*time.Minute)) || rec.ExpiresAt.Before(rec.LeaseUntil) {
		t.Errorf("after KeyExtend: lease until %v, expires %v; want lease t0+5m and expiry not before it", rec.LeaseUntil, rec.ExpiresAt)
	}
	if err := s.KeyExtend(ctx, keystore.Extension{Scope: "sc", Key: "k", Token: "other", LeaseUntil: t0.Add(time.Hour)}); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("extend with another token: %v, want ErrLeaseLost", err)
	}
	if err := s.KeyExtend(ctx, keystore.Extension{Scope: "sc", Key: "absent", Token: "tok", LeaseUntil: t0.Add(time.Hour)}); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("extend an absent key: %v, want ErrLeaseLost", err)
	}
	if err := s.KeyExtend(ctx, keystore.Extension{Scope: "sc", Key: "k", Token: "tok", LeaseUntil: time.Time{}}); !errors.Is(err, keystore.ErrInvalid) {
		t.Errorf("extend to a zero time: %v, want ErrInvalid", err)
	}
	// Once the lease lapses and another claim takes the key, the old token
	// cannot extend it.
	mustClaim(t, s, claim("sc", "k", "fp", "taker", t0.Add(5*time.Minute)), true)
	if err := s.KeyExtend(ctx, keystore.Extension{Scope: "sc", Key: "k", Token: "tok", LeaseUntil: t0.Add(time.Hour)}); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("extend a lapsed claim: %v, want ErrLeaseLost", err)
	}
	complete(t, s, "sc", "k", "taker", keystore.Response{Status: 200}, t0.Add(time.Hour))
	if err := s.KeyExtend(ctx, keystore.Extension{Scope: "sc", Key: "k", Token: "taker", LeaseUntil: t0.Add(2 * time.Hour)}); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("extend a completed key: %v, want ErrLeaseLost", err)
	}
}

func testKeyExpiry(t *testing.T, s keystore.Store) {
	mustClaim(t, s, claim("sc", "k", "fp", "tok", t0), true)
	exp := t0.Add(time.Hour)
	complete(t, s, "sc", "k", "tok", keystore.Response{Status: 200, Body: []byte("old")}, exp)
	mustClaim(t, s, claim("sc", "k", "fp", "t2", exp.Add(-time.Microsecond)), false)
	// Expired but not reaped yet: a new claim wins, with a fresh record.
	rec := mustClaim(t, s, claim("sc", "k", "fp-new", "t3", exp), true)
	if rec.State != keystore.StateRunning || rec.Response != nil || rec.Fingerprint != "fp-new" {
		t.Errorf("reclaimed expired key: %+v", rec)
	}
}

func testReap(t *testing.T, s keystore.Store) {
	// Five completed keys expiring at t0+1h..t0+5h, and a running one
	// expiring at t0+24h.
	for i := 1; i <= 5; i++ {
		key := "k" + strconv.Itoa(i)
		mustClaim(t, s, claim("sc", key, "fp", "tok", t0), true)
		complete(t, s, "sc", key, "tok", keystore.Response{Status: 200}, t0.Add(time.Duration(i)*time.Hour))
	}
	mustClaim(t, s, claim("sc", "running", "fp", "tok", t0), true)

	n, err := s.KeyReap(ctx, t0.Add(30*time.Minute), 10)
	if err != nil || n != 0 {
		t.Fatalf("reap before any expiry: %d, %v", n, err)
	}
	n, err = s.KeyReap(ctx, t0.Add(3*time.Hour), 2) // 3 expired, limit 2
	if err != nil || n != 2 {
		t.Fatalf("reap with limit 2: %d, %v; want 2", n, err)
	}
	n, err = idempotency.Reap(ctx, s, t0.Add(3*time.Hour))
	if err != nil || n != 1 {
		t.Fatalf("Reap: %d, %v; want 1", n, err)
	}
	// k4 and k5 are still there (replayed), k1..k3 are gone (claimable).
	for i := 1; i <= 5; i++ {
		key := "k" + strconv.Itoa(i)
		_, won, err := s.KeyClaim(ctx, claim("sc", key, "fp", "probe", t0.Add(150*time.Minute)))
		if err != nil {
			t.Fatal(err)
		}
		if want := i <= 3; won != want {
			t.Errorf("%s claimable after reaping = %v, want %v", key, won, want)
		}
	}
	// Running keys expire too.
	n, err = idempotency.Reap(ctx, s, t0.Add(48*time.Hour))
	if err != nil || n != 6 {
		t.Errorf("final reap: %d, %v; want 6", n, err)
	}
}

func testScopeIsolation(t *testing.T, s keystore.Store) {
	a, b := `"alice" POST /pay`, `"bob" POST /pay`
	mustClaim(t, s, claim(a, "shared", "fp", "ta", t0), true)
	mustClaim(t, s, claim(b, "shared", "fp", "tb", t0), true)
	complete(t, s, a, "shared", "ta", keystore.Response{Status: 200, Body: []byte("alice's")}, t0.Add(time.Hour))
	rec := mustClaim(t, s, claim(b, "shared", "fp", "tb2", t0.Add(time.Second)), false)
	if rec.State != keystore.StateRunning || rec.Response != nil {
		t.Errorf("bob's key sees alice's response: %+v", rec)
	}
	if err := s.KeyComplete(ctx, keystore.Completion{Scope: b, Key: "shared", Token: "ta",
		Response: keystore.Response{Status: 200}, ExpiresAt: t0.Add(time.Hour)}); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("alice's token completes bob's key: %v", err)
	}
	// Keys differ by case; scopes by a byte.
	mustClaim(t, s, claim(a, "SHARED", "fp", "tc", t0), true)
	mustClaim(t, s, claim(a+" ", "shared", "fp", "td", t0), true)
}

func testRelease(t *testing.T, s keystore.Store) {
	mustClaim(t, s, claim("sc", "k", "fp", "tok", t0), true)
	if err := s.KeyRelease(ctx, keystore.Release{Scope: "sc", Key: "k", Token: "other"}); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("release with another token: %v, want ErrLeaseLost", err)
	}
	if err := s.KeyRelease(ctx, keystore.Release{Scope: "sc", Key: "k", Token: "tok"}); err != nil {
		t.Fatalf("release: %v", err)
	}
	if err := s.KeyRelease(ctx, keystore.Release{Scope: "sc", Key: "k", Token: "tok"}); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("release twice: %v, want ErrLeaseLost", err)
	}
	mustClaim(t, s, claim("sc", "k", "fp-new", "tok2", t0.Add(time.Second)), true)
	complete(t, s, "sc", "k", "tok2", keystore.Response{Status: 200}, t0.Add(time.Hour))
	if err := s.KeyRelease(ctx, keystore.Release{Scope: "sc", Key: "k", Token: "tok2"}); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("release a completed key: %v, want ErrLeaseLost", err)
	}
	mustClaim(t, s, claim("sc", "k", "fp-new", "tok3", t0.Add(2*time.Second)), false)
}

func testOversized(t *testing.T, s keystore.Store) {
	mustClaim(t, s, claim("sc", "big", "fp", "tok", t0), true)
	huge := bytes.Repeat([]byte{0xab}, keystore.MaxStoredBody+1)
	err := s.KeyComplete(ctx, keystore.Completion{Scope: "sc", Key: "big", Token: "tok",
		Response: keystore.Response{Status: 200, Body: huge}, ExpiresAt: t0.Add(time.Hour)})
	if !errors.Is(err, keystore.ErrInvalid) {
		t.Fatalf("complete with %d bytes: %v, want ErrInvalid", len(huge), err)
	}
	// Nothing changed: the key is still running under the claim, which
	// the middleware then releases.
	mustClaim(t, s, claim("sc", "big", "fp", "probe", t0.Add(time.Second)), false)
	if err := s.KeyRelease(ctx, keystore.Release{Scope: "sc", Key: "big", Token: "tok"}); err != nil {
		t.Fatalf("release after an oversized response: %v", err)
	}
	// The largest body allowed is kept whole.
	mustClaim(t, s, claim("sc", "max", "fp", "tok", t0), true)
	max := keystore.Response{Status: 200, Body: huge[:keystore.MaxStoredBody]}
	complete(t, s, "sc", "max", "tok", max, t0.Add(time.Hour))
	rec := mustClaim(t, s, claim("sc", "max", "fp", "probe", t0.Add(time.Second)), false)
	checkResponse(t, rec.Response, &max)
}

func testBadInput(t *testing.T, s keystore.Store) {
	good := claim("sc", "k", "fp", "tok", t0)
	bad := map[string]func(c *keystore.Claim){
		"empty scope":       func(c *keystore.Claim) { c.Scope = "" },
		"long scope":        func(c *keystore.Claim) { c.Scope = strings.Repeat("s", keystore.MaxScopeLen+1) },
		"NUL in scope":      func(c *keystore.Claim) { c.Scope = "a\x00b" },
		"bad UTF-8 scope":   func(c *keystore.Claim) { c.Scope = "a\xffb" },
		"empty key":         func(c *keystore.Claim) { c.Key = "" },
		"long key":          func(c *keystore.Claim) { c.Key = strings.Repeat("k", keystore.MaxKeyLen+1) },
		"control in key":    func(c *keystore.Claim) { c.Key = "a\nb" },
		"empty fingerprint": func(c *keystore.Claim) { c.Fingerprint = "" },
		"empty token":       func(c *keystore.Claim) { c.Token = "" },
		"zero now":          func(c *keystore.Claim) { c.Now = time.Time{} },
		"lease not after":   func(c *keystore.Claim) { c.LeaseUntil = c.Now },
		"expiry too soon":   func(c *keystore.Claim) { c.ExpiresAt = c.LeaseUntil.Add(-time.Second) },
	}
	for name, mutate := range bad {
		c := good
		mutate(&c)
		if _, _, err := s.KeyClaim(ctx, c); !errors.Is(err, keystore.ErrInvalid) {
			t.Errorf("claim with %s: %v, want ErrInvalid", name, err)
		}
	}
	// Nothing was written: the good claim still wins.
	mustClaim(t, s, good, true)
	// The longest key and scope are fine.
	mustClaim(t, s, claim(strings.Repeat("s", keystore.MaxScopeLen), strings.Repeat("k", keystore.MaxKeyLen), "fp", "tok", t0), true)

	comp := keystore.Completion{Scope: "sc", Key: "k", Token: "tok", Response: keystore.Response{Status: 200}, ExpiresAt: t0.Add(time.Hour)}
	badComp := map[string]func(c *keystore.Completion){
		"status 0":    func(c *keystore.Completion) { c.Response.Status = 0 },
		"status 101":  func(c *keystore.Completion) { c.Response.Status = 101 },
		"status 600":  func(c *keystore.Completion) { c.Response.Status = 600 },
		"empty token": func(c *keystore.Completion) { c.Token = "" },
		"zero expiry": func(c *keystore.Completion) { c.ExpiresAt = time.Time{} },
		"empty key":   func(c *keystore.Completion) { c.Key = "" },
		"NUL header":  func(c *keystore.Completion) { c.Response.Header = http.Header{"X": {"a\x00"}} },
	}
	for name, mutate := range badComp {
		c := comp
		mutate(&c)
		if err := s.KeyComplete(ctx, c); !errors.Is(err, keystore.ErrInvalid) {
			t.Errorf("complete with %s: %v, want ErrInvalid", name, err)
		}
	}
	if err := s.KeyRelease(ctx, keystore.Release{Scope: "", Key: "k", Token: "tok"}); !errors.Is(err, keystore.ErrInvalid) {
		t.Errorf("release with empty scope: %v", err)
	}
	if err := s.KeyRelease(ctx, keystore.Release{Scope: "sc", Key: "k", Token: ""}); !errors.Is(err, keystore.ErrInvalid) {
		t.Errorf("release with empty token: %v", err)
	}
	if _, err := s.KeyReap(ctx, time.Time{}, 10); !errors.Is(err, keystore.ErrInvalid) {
		t.Errorf("reap at zero time: %v", err)
	}
	if _, err := s.KeyReap(ctx, t0, 0); !errors.Is(err, keystore.ErrInvalid) {
		t.Errorf("reap with limit 0: %v", err)
	}
	// Still running, untouched by the bad completions.
	if err := s.KeyComplete(ctx, comp); err != nil {
		t.Errorf("good completion after bad ones: %v", err)
	}
}

// testMiddlewareConcurrent sends 50 concurrent requests with one key
// through the middleware, holding the handler until every other request
// has been answered: the handler runs exactly once, and while it runs
// every other request gets 409. Afterwards the key replays.
func testMiddlewareConcurrent(t *testing.T, s keystore.Store) {
	var runs atomic.Int64
	release := make(chan struct{})
	h := idempotency.Middleware{Store: s}.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := runs.Add(1)
		body, _ := io.ReadAll(r.Body)
		<-release // hold the key while the others arrive
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"charge":%d,"body":%q}`, n, body)
	}))
	const n = 50
	codes := make([]int, n)
	bodies := make([]string, n)
	var wg sync.WaitGroup
	var answered atomic.Int64
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := httptest.NewRequest("POST", "/charges", strings.NewReader("amount=10"))
			req.Header.Set("Idempotency-Key", `"one-key"`)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			codes[i], bodies[i] = rec.Code, rec.Body.String()
			answered.Add(1)
		}()
	}
	// The handler holds the key until every other request has been
	// answered (on the event itself, not after a guess at how long the
	// claims take on a loaded machine).
	for deadline := time.Now().Add(time.Minute); answered.Load() < n-1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			close(release)
			wg.Wait()
			t.Fatalf("only %d of the %d other requests were answered within a minute while the handler held the key", answered.Load(), n-1)
		}
	}
	close(release)
	wg.Wait()
	if r := runs.Load(); r != 1 {
		t.Fatalf("handler ran %d times for %d requests with one key, want 1", r, n)
	}
	want := `{"charge":1,"body":"amount=10"}`
	var created, conflicts int
	for i, c := range codes {
		switch c {
		case http.StatusCreated:
			created++
			if bodies[i] != want {
				t.Errorf("request %d: body %q, want %q", i, bodies[i], want)
			}
		case http.StatusConflict:
			conflicts++
		default:
			t.Errorf("request %d: status %d, want 201 or 409", i, c)
		}
	}
	if created != 1 || conflicts != n-1 {
		t.Errorf("%d created and %d conflicts; want the original and %d conflicts", created, conflicts, n-1)
	}
	// And afterwards, a replay.
	req := httptest.NewRequest("POST", "/charges", strings.NewReader("amount=10"))
	req.Header.Set("Idempotency-Key", "one-key") // the bare form names the same key
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusCreated || rec.Body.String() != want || rec.Header().Get(idempotency.ReplayedHeader) != "true" {
		t.Errorf("after: %d %q replayed=%q", rec.Code, rec.Body.String(), rec.Header().Get(idempotency.ReplayedHeader))
	}
	if r := runs.Load(); r != 1 {
		t.Errorf("handler ran %d times", r)
	}
}

// Benchmark measures the middleware over s. "baseline" is the handler
// alone, without the middleware (subtract it to get the overhead);
// "first" sends requests with new keys (claim, handler, store the
// response); "replay" repeats one key (the claim loses, the stored
// response is written); "first-parallel" sends new keys from GOMAXPROCS
// goroutines. Each reports keyed requests per second as req/s.
func Benchmark(b *testing.B, s keystore.Store) {
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"id":"ch_1","amount":1000,"currency":"eur","status":"succeeded"}`)
	})
	h := idempotency.Middleware{Store: s}.Wrap(handler)
	body := `{"amount":1000,"currency":"eur","source":"tok_visa"}`
	serve := func(b *testing.B, h http.Handler, key string) {
		req := httptest.NewRequest("POST", "/charges", strings.NewReader(body))
		req.Header.Set("Idempotency-Key", key)
		w := discardWriter{h: http.Header{}}
		h.ServeHTTP(&w, req)
		if w.code != http.StatusCreated {
			b.Fatalf("status %d, want 201", w.code)
		}
	}
	perSecond := func(b *testing.B) {
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
	}
	prefix := strconv.FormatInt(time.Now().UnixNano(), 36)
	b.Run("baseline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			serve(b, handler, "unused")
		}
		perSecond(b)
	})
	b.Run("first", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			serve(b, h, prefix+"-"+strconv.Itoa(i))
		}
		perSecond(b)
	})
	b.Run("replay", func(b *testing.B) {
		b.ReportAllocs()
		serve(b, h, prefix+"-replay")
		for b.Loop() {
			serve(b, h, prefix+"-replay")
		}
		perSecond(b)
	})
	b.Run("first-parallel", func(b *testing.B) {
		b.ReportAllocs()
		var n atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				serve(b, h, prefix+"-p-"+strconv.FormatInt(n.Add(1), 10))
			}
		})
		perSecond(b)
	})
}

type discardWriter struct {
	h    http.Header
	code int
}

func (w *discardWriter) Header() http.Header { return w.h }
func (w *discardWriter) Write(p []byte) (int, error) {
	if w.code == 0 {
		w.code = 200
	}
	return len(p), nil
}
func (w *discardWriter) WriteHeader(c int) {
	if w.code == 0 {
		w.code = c
	}
}
