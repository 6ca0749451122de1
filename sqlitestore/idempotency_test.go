package sqlitestore_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heed-go/heed/idempotency"
	"github.com/heed-go/heed/idempotency/keystore"
	idemtest "github.com/heed-go/heed/idempotency/storetest"
	"github.com/heed-go/heed/sqlitestore"
)

// defaultLease is the idempotency.Middleware's default Lease.
const defaultLease = 30 * time.Second

func openIdem(t testing.TB, dsn string) *sqlitestore.Store {
	t.Helper()
	if dsn == "" {
		dsn = filepath.Join(t.TempDir(), "heed.db")
	}
	s, err := sqlitestore.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestIdempotencyStore(t *testing.T) {
	idemtest.Run(t, func(t *testing.T) keystore.Store { return openIdem(t, "") })
}

func TestIdempotencyStoreMemory(t *testing.T) {
	idemtest.Run(t, func(t *testing.T) keystore.Store { return openIdem(t, ":memory:") })
}

// Two Stores over one file stand for two processes: a key claimed through
// one is held for the other, and completed responses are shared.
func TestIdempotencyTwoProcesses(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "heed.db")
	a, b := openIdem(t, path), openIdem(t, path)
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

// A process claims a key and dies before its handler returns. Another
// process on the same file answers 409 until the lease ends, then runs
// the handler once.
func TestIdempotencyProcessDeath(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "heed.db")
	start := time.Now()
	// What the middleware of the dying process stored: a claim under the
	// default lease for POST /charges by the anonymous principal.
	a, err := sqlitestore.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	var fp, scope string
	{
		// Learn the fingerprint the middleware computes, from a store
		// that records claims.
		rec := &recordingStore{Store: idempotency.NewMemoryStore()}
		h := idempotency.Middleware{Store: rec}.Wrap(http.NotFoundHandler())
		h.ServeHTTP(httptest.NewRecorder(), chargeRequest())
		fp, scope = rec.last.Fingerprint, rec.last.Scope
	}
	if _, won, err := a.KeyClaim(ctx, keystore.Claim{Scope: scope, Key: "k", Fingerprint: fp, Token: "dead",
		Now: start, LeaseUntil: start.Add(defaultLease), ExpiresAt: start.Add(24 * time.Hour)}); err != nil || !won {
		t.Fatalf("claim: %v %v", won, err)
	}
	a.Close() // the process dies

	b := openIdem(t, path)
	var runs atomic.Int64
	var now atomic.Int64
	now.Store(start.Add(10 * time.Second).UnixNano())
	h := idempotency.Middleware{Store: b, Now: func() time.Time { return time.Unix(0, now.Load()) }}.Wrap(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			runs.Add(1)
			w.WriteHeader(http.StatusCreated)
		}))
	serve := func() *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, chargeRequest())
		return w
	}
	if w := serve(); w.Code != http.StatusConflict {
		t.Fatalf("during the dead claim's lease: %d, want 409", w.Code)
	}
	now.Store(start.Add(defaultLease).UnixNano())
	if w := serve(); w.Code != http.StatusCreated || w.Header().Get(idempotency.ReplayedHeader) != "" {
		t.Fatalf("after the lease: %d, want 201 from the handler", w.Code)
	}
	if w := serve(); w.Code != http.StatusCreated || w.Header().Get(idempotency.ReplayedHeader) != "true" {
		t.Fatalf("then: %d, want the replay", w.Code)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("%d runs, want 1", n)
	}
}

func chargeRequest() *http.Request {
	r := httptest.NewRequest("POST", "/charges", strings.NewReader(`{"amount":1000}`))
	r.Header.Set("Idempotency-Key", `"k"`)
	return r
}

type recordingStore struct {
	keystore.Store
	last keystore.Claim
}

func (s *recordingStore) KeyClaim(ctx context.Context, c keystore.Claim) (*keystore.Record, bool, error) {
	s.last = c
	return s.Store.KeyClaim(ctx, c)
}

func BenchmarkIdempotencyMiddleware(b *testing.B) {
	idemtest.Benchmark(b, openIdem(b, ""))
}
