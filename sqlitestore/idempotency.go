package sqlitestore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/heed-go/heed/idempotency/keystore"
	"modernc.org/sqlite"
)

// The Store is also a keystore.Store, the store of idempotency.Middleware:
// keys and stored responses live in the table heed_idempotency_keys
// (migration 0002), beside the jobs. The key column holds
// keystore.StoredKey(scope, key), never the key itself (migration 0004
// rewrote older rows).
//
// A claim is one INSERT ... ON CONFLICT DO UPDATE ... WHERE statement on
// the writer connection: the primary key (scope, key) makes it atomic
// across goroutines and processes, and the WHERE takes over only an
// expired key or a running key whose lease is over. When it takes
// nothing, the key's row is read from the read pool.
var _ keystore.Store = (*Store)(nil)

const keyClaimSQL = `INSERT INTO heed_idempotency_keys
	(scope, key, fingerprint, state, token, created_at, lease_until, expires_at)
	VALUES (?1, ?2, ?3, 'running', ?4, ?5, ?6, ?7)
	ON CONFLICT (scope, key) DO UPDATE SET
		fingerprint = excluded.fingerprint, state = 'running', token = excluded.token,
		created_at = excluded.created_at, lease_until = excluded.lease_until,
		expires_at = excluded.expires_at, status = NULL, headers = NULL, body = NULL
	WHERE heed_idempotency_keys.expires_at <= excluded.created_at
		OR (heed_idempotency_keys.state = 'running' AND heed_idempotency_keys.lease_until <= excluded.created_at)
	RETURNING token`

const keyGetSQL = `SELECT fingerprint, state, created_at, lease_until, expires_at, status, headers, body
	FROM heed_idempotency_keys WHERE scope = ? AND key = ?`

// KeyClaim implements keystore.Store.
func (s *Store) KeyClaim(ctx context.Context, c keystore.Claim) (*keystore.Record, bool, error) {
	if err := c.Validate(); err != nil {
		return nil, false, err
	}
	ins, err := s.prepared(ctx, keyClaimSQL)
	if err != nil {
		return nil, false, wrap("key claim", err)
	}
	get, err := s.preparedRead(ctx, keyGetSQL)
	if err != nil {
		return nil, false, wrap("key claim", err)
	}
	for range 10 {
		var token string
		err := ins.QueryRowContext(ctx, c.Scope, keystore.StoredKey(c.Scope, c.Key), c.Fingerprint, c.Token,
			micros(c.Now), micros(c.LeaseUntil), micros(c.ExpiresAt)).Scan(&token)
		switch {
		case err == nil && token == c.Token:
			return &keystore.Record{Scope: c.Scope, Key: c.Key, Fingerprint: c.Fingerprint,
				State: keystore.StateRunning, CreatedAt: fromMicros(nullMicros(c.Now)),
				LeaseUntil: fromMicros(nullMicros(c.LeaseUntil)), ExpiresAt: fromMicros(nullMicros(c.ExpiresAt))}, true, nil
		case err == nil:
			return nil, false, fmt.Errorf("sqlitestore: key claim: returned another token")
		case !errors.Is(err, sql.ErrNoRows):
			return nil, false, wrap("key claim", err)
		}
		// The key is held: read it.
		rec, err := scanKey(get.QueryRowContext(ctx, c.Scope, keystore.StoredKey(c.Scope, c.Key)))
		if errors.Is(err, sql.ErrNoRows) {
			continue // released or reaped in between: claim again
		}
		if err != nil {
			return nil, false, wrap("key claim", err)
		}
		rec.Scope, rec.Key = c.Scope, c.Key
		return rec, false, nil
	}
	return nil, false, errors.New("sqlitestore: key claim: the key kept changing; try again")
}

func scanKey(sc scanner) (*keystore.Record, error) {
	var (
		rec                         keystore.Record
		state                       string
		created, leaseUntil, expiry int64
		status                      sql.NullInt64
		headers                     sql.NullString
		body                        []byte
	)
	if err := sc.Scan(&rec.Fingerprint, &state, &created, &leaseUntil, &expiry, &status, &headers, &body); err != nil {
		return nil, err
	}
	rec.State = keystore.State(state)
	rec.CreatedAt = time.UnixMicro(created).UTC()
	rec.LeaseUntil = time.UnixMicro(leaseUntil).UTC()
	rec.ExpiresAt = time.UnixMicro(expiry).UTC()
	if rec.State == keystore.StateCompleted {
		resp := &keystore.Response{Status: int(status.Int64), Body: body}
		if headers.Valid {
			if err := json.Unmarshal([]byte(headers.String), &resp.Header); err != nil {
				return nil, fmt.Errorf("stored headers: %w", err)
			}
		}
		rec.Response = resp
	}
	return &rec, nil
}

const keyCompleteSQL = `UPDATE heed_idempotency_keys
	SET state = 'completed', token = NULL, status = ?, headers = ?, body = ?, expires_at = ?
	WHERE scope = ? AND key = ? AND token = ? AND state = 'running'`

// KeyComplete implements keystore.Store.
func (s *Store) KeyComplete(ctx context.Context, c keystore.Completion) error {
	if err := c.Validate(); err != nil {
		return err
	}
	var headers sql.NullString
	if len(c.Response.Header) > 0 {
		b, err := json.Marshal(c.Response.Header)
		if err != nil {
			return wrap("key complete", err)
		}
		headers = sql.NullString{String: string(b), Valid: true}
	}
	body := c.Response.Body
	if body == nil {
		body = []byte{}
	}
	st, err := s.prepared(ctx, keyCompleteSQL)
	if err != nil {
		return wrap("key complete", err)
	}
	res, err := st.ExecContext(ctx, c.Response.Status, headers, body, micros(c.ExpiresAt), c.Scope, keystore.StoredKey(c.Scope, c.Key), c.Token)
	return affected("key complete", res, err)
}

func affected(op string, res sql.Result, err error) error {
	if err != nil {
		return wrap(op, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return wrap(op, err)
	}
	if n == 0 {
		return keystore.ErrLeaseLost
	}
	return nil
}

const keyExtendSQL = `UPDATE heed_idempotency_keys
	SET lease_until = ?1, expires_at = max(expires_at, ?1)
	WHERE scope = ?2 AND key = ?3 AND token = ?4 AND state = 'running'`

// KeyExtend implements keystore.Store.
func (s *Store) KeyExtend(ctx context.Context, ext keystore.Extension) error {
	scope, key, token, leaseUntil := ext.Scope, ext.Key, ext.Token, ext.LeaseUntil
	if err := ext.Validate(); err != nil {
		return err
	}
	st, err := s.prepared(ctx, keyExtendSQL)
	if err != nil {
		return wrap("key extend", err)
	}
	res, err := st.ExecContext(ctx, micros(leaseUntil), scope, keystore.StoredKey(scope, key), token)
	return affected("key extend", res, err)
}

const keyReleaseSQL = `DELETE FROM heed_idempotency_keys
	WHERE scope = ? AND key = ? AND token = ? AND state = 'running'`

// KeyRelease implements keystore.Store.
func (s *Store) KeyRelease(ctx context.Context, rel keystore.Release) error {
	scope, key, token := rel.Scope, rel.Key, rel.Token
	if err := rel.Validate(); err != nil {
		return err
	}
	st, err := s.prepared(ctx, keyReleaseSQL)
	if err != nil {
		return wrap("key release", err)
	}
	res, err := st.ExecContext(ctx, scope, keystore.StoredKey(scope, key), token)
	return affected("key release", res, err)
}

// KeyReap implements keystore.Store: it deletes the keys that expired
// first, in one statement.
func (s *Store) KeyReap(ctx context.Context, now time.Time, limit int) (int, error) {
	if err := keystore.ValidateReap(now, limit); err != nil {
		return 0, err
	}
	res, err := s.w.ExecContext(ctx, `DELETE FROM heed_idempotency_keys WHERE rowid IN
		(SELECT rowid FROM heed_idempotency_keys WHERE expires_at <= ? ORDER BY expires_at LIMIT ?)`, micros(now), limit)
	if err != nil {
		return 0, wrap("key reap", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, wrap("key reap", err)
	}
	return int(n), nil
}

// storedKeyFunc is the SQL name of keystore.StoredKey, for migration
// 0004, which rewrote the keys stored raw by older versions.
const storedKeyFunc = "heed_stored_key"

func init() {
	sqlite.MustRegisterDeterministicScalarFunction(storedKeyFunc, 2, func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
		scope, ok1 := args[0].(string)
		key, ok2 := args[1].(string)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("sqlitestore: %s: want two text arguments, got %T and %T", storedKeyFunc, args[0], args[1])
		}
		return keystore.StoredKey(scope, key), nil
	})
}
