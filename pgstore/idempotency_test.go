package pgstore

import (
	"context"
	"testing"
	"time"

	"github.com/heed-go/heed/idempotency/keystore"
	idemtest "github.com/heed-go/heed/idempotency/storetest"
)

// Each test gets a fresh schema (openTest): see pgstoretest.Schema. Without
// HEED_TEST_POSTGRES_URL these tests skip, saying so.
func TestIdempotencyStore(t *testing.T) {
	testURL(t) // skip the whole suite at once without a server
	idemtest.Run(t, func(t *testing.T) keystore.Store { return openTest(t) })
}

// Two Stores on one schema stand for two machines: a key claimed through
// one is held for the other, and completed responses are shared.
func TestIdempotencyTwoProcesses(t *testing.T) {
	_, u := testSchema(t)
	ctx := context.Background()
	open := func() *Store {
		s, err := Open(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b := open(), open()
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	c := keystore.Claim{Scope: "s", Key: "k", Fingerprint: "f", Token: "ta",
		Now: now, LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour)}
	if _, won, err := a.KeyClaim(ctx, c); err != nil || !won {
		t.Fatalf("a: %v %v", won, err)
	}
	c.Token = "tb"
	if rec, won, err := b.KeyClaim(ctx, c); err != nil || won || rec.State != keystore.StateRunning {
		t.Fatalf("b: %v %v %+v", won, err, rec)
	}
	if err := a.KeyComplete(ctx, keystore.Completion{Scope: "s", Key: "k", Token: "ta",
		Response: keystore.Response{Status: 201, Body: []byte("done")}, ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	rec, won, err := b.KeyClaim(ctx, c)
	if err != nil || won || rec.Response == nil || string(rec.Response.Body) != "done" {
		t.Fatalf("b after completion: %v %v %+v", won, err, rec)
	}
}

func BenchmarkIdempotencyMiddleware(b *testing.B) {
	idemtest.Benchmark(b, openTest(b))
}
