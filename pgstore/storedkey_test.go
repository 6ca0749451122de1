package pgstore

import (
	"testing"
	"time"

	"github.com/heed-go/heed/idempotency/keystore"
	"github.com/jackc/pgx/v5/pgxpool"
)

// TestStoredKeyMigration stores a key raw, as schema 3 did, migrates, and
// checks that the row now holds keystore.StoredKey and that the key
// replays as before; then that a new claim stores only the digest.
func TestStoredKeyMigration(t *testing.T) {
	t.Parallel()
	_, u := testSchema(t)
	ctx := t.Context()
	pool, err := pgxpool.New(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := migrate(ctx, pool, migrations[:3], time.Now()); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	const scope, key, raw = "user:ann POST /orders", `"raw-key-CANARYx7Qp2Lm9"`, "raw-key-CANARYx7Qp2Lm9"
	if _, err := pool.Exec(ctx, `INSERT INTO heed_idempotency_keys
		(scope, key, fingerprint, state, created_at, lease_until, expires_at, status, headers, body)
		VALUES ($1, $2, 'fp1', 'completed', $3, $3, $4, 201, NULL, 'made')`, scope, key, now, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, u) // migrates to 4
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var stored string
	if err := pool.QueryRow(ctx, `SELECT key FROM heed_idempotency_keys`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stored != keystore.StoredKey(scope, key) {
		t.Fatalf("migrated key %q, want StoredKey %q", stored, keystore.StoredKey(scope, key))
	}
	rec, won, err := s.KeyClaim(ctx, keystore.Claim{Scope: scope, Key: key, Fingerprint: "fp1", Token: "t1",
		Now: now, LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Minute)})
	if err != nil || won || rec.State != keystore.StateCompleted || rec.Response == nil || string(rec.Response.Body) != "made" || rec.Key != key {
		t.Fatalf("claim after migration: %+v, won %v, %v; want the stored response", rec, won, err)
	}
	if _, won, err := s.KeyClaim(ctx, keystore.Claim{Scope: scope, Key: "other-" + raw, Fingerprint: "fp2", Token: "t2",
		Now: now, LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Minute)}); err != nil || !won {
		t.Fatalf("new claim: won %v, %v", won, err)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM heed_idempotency_keys WHERE key LIKE '%' || $1 || '%'`, raw).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d rows hold the raw key (%v)", n, err)
	}
}
