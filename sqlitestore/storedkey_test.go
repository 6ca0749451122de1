package sqlitestore

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heed-go/heed/idempotency/keystore"
)

// TestStoredKeyMigration stores a key raw, as schema 3 did, migrates, and
// checks that the row now holds keystore.StoredKey and that the key
// replays as before; then that a new claim stores only the digest.
func TestStoredKeyMigration(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "heed.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	ms := migrations
	if _, err := db.ExecContext(ctx, `CREATE TABLE heed_schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT`); err != nil {
		t.Fatal(err)
	}
	for _, m := range ms[:3] {
		if _, err := db.ExecContext(ctx, m.SQL); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, `INSERT INTO heed_schema_migrations VALUES (?, ?, 0)`, m.Version, m.Name+".sql"); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	const scope, key, raw = "user:ann POST /orders", `"raw-key-CANARYx7Qp2Lm9"`, "raw-key-CANARYx7Qp2Lm9"
	if _, err := db.ExecContext(ctx, `INSERT INTO heed_idempotency_keys
		(scope, key, fingerprint, state, created_at, lease_until, expires_at, status, headers, body)
		VALUES (?, ?, 'fp1', 'completed', ?, ?, ?, 201, NULL, X'6d616465')`, scope, key, now.UnixMicro(), now.UnixMicro(), now.Add(time.Hour).UnixMicro()); err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, path) // migrates to 4
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var stored string
	if err := db.QueryRowContext(ctx, `SELECT key FROM heed_idempotency_keys`).Scan(&stored); err != nil {
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
	rows, err := db.QueryContext(ctx, `SELECT scope || key FROM heed_idempotency_keys`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(v, raw) {
			t.Errorf("a row holds the raw key: %s", v)
		}
	}
	db.Close()
}
