package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/heed-go/heed/idempotency/keystore"
	"github.com/jackc/pgx/v5"
)

// The Store is also a keystore.Store, the store of idempotency.Middleware:
// keys and stored responses live in the table heed_idempotency_keys
// (migration 002), beside the jobs. The key column holds
// keystore.StoredKey(scope, key), never the key itself (migration 004
// rewrote older rows).
//
// A claim is an INSERT ... ON CONFLICT DO NOTHING: the primary key (scope,
// key) makes it atomic across connections and machines, and when the key
// exists it neither writes nor locks, so replays and 409s cost no WAL
// flush. An existing key is then read; if it is expired, or running with
// its lease over, one UPDATE whose WHERE re-checks exactly that takes it
// over (PostgreSQL re-evaluates the WHERE on the locked row, so of two
// concurrent takeovers one wins and the other sees a live key).
var _ keystore.Store = (*Store)(nil)

const keyInsertSQL = `INSERT INTO heed_idempotency_keys
	(scope, key, fingerprint, state, token, created_at, lease_until, expires_at)
	VALUES ($1, $2, $3, 'running', $4, $5, $6, $7)
	ON CONFLICT (scope, key) DO NOTHING
	RETURNING token`

const keyTakeOverSQL = `UPDATE heed_idempotency_keys SET
		fingerprint = $3, state = 'running', token = $4, created_at = $5, lease_until = $6,
		expires_at = $7, status = NULL, headers = NULL, body = NULL
	WHERE scope = $1 AND key = $2
		AND (expires_at <= $5 OR (state = 'running' AND lease_until <= $5))
	RETURNING token`

const keyGetSQL = `SELECT fingerprint, state, created_at, lease_until, expires_at, status, headers, body
	FROM heed_idempotency_keys WHERE scope = $1 AND key = $2`

// KeyClaim implements keystore.Store.
func (s *Store) KeyClaim(ctx context.Context, c keystore.Claim) (*keystore.Record, bool, error) {
	if err := c.Validate(); err != nil {
		return nil, false, err
	}
	now, lease, exp := c.Now.UTC().Truncate(time.Microsecond), c.LeaseUntil.UTC().Truncate(time.Microsecond), c.ExpiresAt.UTC().Truncate(time.Microsecond)
	args := []any{c.Scope, keystore.StoredKey(c.Scope, c.Key), c.Fingerprint, c.Token, now, lease, exp}
	won := func(sql string) (bool, error) {
		var token string
		err := s.pool.QueryRow(ctx, sql, args...).Scan(&token)
		switch {
		case err == nil && token == c.Token:
			return true, nil
		case err == nil:
			return false, errors.New("returned another token")
		case errors.Is(err, pgx.ErrNoRows):
			return false, nil
		}
		return false, err
	}
	mine := &keystore.Record{Scope: c.Scope, Key: c.Key, Fingerprint: c.Fingerprint,
		State: keystore.StateRunning, CreatedAt: now, LeaseUntil: lease, ExpiresAt: exp}
	for range 10 {
		if ok, err := won(keyInsertSQL); err != nil || ok {
			if err != nil {
				return nil, false, pgErr("key claim", err)
			}
			return mine, true, nil
		}
		// The key exists: read it.
		rec, err := scanKey(s.pool.QueryRow(ctx, keyGetSQL, c.Scope, keystore.StoredKey(c.Scope, c.Key)))
		if errors.Is(err, pgx.ErrNoRows) {
			continue // released or reaped in between: claim again
		}
		if err != nil {
			return nil, false, pgErr("key claim", err)
		}
		rec.Scope, rec.Key = c.Scope, c.Key
		if rec.ExpiresAt.After(now) && (rec.State == keystore.StateCompleted || rec.LeaseUntil.After(now)) {
			return rec, false, nil // live: held or replayable
		}
		// Expired, or a lapsed claim: take it over, unless someone else did.
		if ok, err := won(keyTakeOverSQL); err != nil || ok {
			if err != nil {
				return nil, false, pgErr("key claim", err)
			}
			return mine, true, nil
		}
	}
	return nil, false, errors.New("pgstore: key claim: the key kept changing; try again")
}

func pgErr(op string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("pgstore: %s: %w", op, err)
}

func scanKey(row pgx.Row) (*keystore.Record, error) {
	var (
		rec                         keystore.Record
		state                       string
		created, leaseUntil, expiry time.Time
		status                      *int32
		headers                     *string
		body                        []byte
	)
	if err := row.Scan(&rec.Fingerprint, &state, &created, &leaseUntil, &expiry, &status, &headers, &body); err != nil {
		return nil, err
	}
	rec.State = keystore.State(state)
	rec.CreatedAt, rec.LeaseUntil, rec.ExpiresAt = created.UTC(), leaseUntil.UTC(), expiry.UTC()
	if rec.State == keystore.StateCompleted {
		resp := &keystore.Response{Body: body}
		if status != nil {
			resp.Status = int(*status)
		}
		if headers != nil {
			if err := json.Unmarshal([]byte(*headers), &resp.Header); err != nil {
				return nil, fmt.Errorf("stored headers: %w", err)
			}
		}
		rec.Response = resp
	}
	return &rec, nil
}

// KeyComplete implements keystore.Store.
func (s *Store) KeyComplete(ctx context.Context, c keystore.Completion) error {
	if err := c.Validate(); err != nil {
		return err
	}
	var headers *string
	if len(c.Response.Header) > 0 {
		b, err := json.Marshal(c.Response.Header)
		if err != nil {
			return pgErr("key complete", err)
		}
		h := string(b)
		headers = &h
	}
	body := c.Response.Body
	if body == nil {
		body = []byte{}
	}
	tag, err := s.pool.Exec(ctx, `UPDATE heed_idempotency_keys
		SET state = 'completed', token = NULL, status = $1, headers = $2, body = $3, expires_at = $4
		WHERE scope = $5 AND key = $6 AND token = $7 AND state = 'running'`,
		c.Response.Status, headers, body, c.ExpiresAt.UTC().Truncate(time.Microsecond), c.Scope, keystore.StoredKey(c.Scope, c.Key), c.Token)
	if err != nil {
		return pgErr("key complete", err)
	}
	if tag.RowsAffected() == 0 {
		return keystore.ErrLeaseLost
	}
	return nil
}

// KeyExtend implements keystore.Store.
func (s *Store) KeyExtend(ctx context.Context, ext keystore.Extension) error {
	scope, key, token, leaseUntil := ext.Scope, ext.Key, ext.Token, ext.LeaseUntil
	if err := ext.Validate(); err != nil {
		return err
	}
	tag, err := s.pool.Exec(ctx, `UPDATE heed_idempotency_keys
		SET lease_until = $1, expires_at = GREATEST(expires_at, $1)
		WHERE scope = $2 AND key = $3 AND token = $4 AND state = 'running'`,
		leaseUntil.UTC().Truncate(time.Microsecond), scope, keystore.StoredKey(scope, key), token)
	if err != nil {
		return pgErr("key extend", err)
	}
	if tag.RowsAffected() == 0 {
		return keystore.ErrLeaseLost
	}
	return nil
}

// KeyRelease implements keystore.Store.
func (s *Store) KeyRelease(ctx context.Context, rel keystore.Release) error {
	scope, key, token := rel.Scope, rel.Key, rel.Token
	if err := rel.Validate(); err != nil {
		return err
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM heed_idempotency_keys
		WHERE scope = $1 AND key = $2 AND token = $3 AND state = 'running'`, scope, keystore.StoredKey(scope, key), token)
	if err != nil {
		return pgErr("key release", err)
	}
	if tag.RowsAffected() == 0 {
		return keystore.ErrLeaseLost
	}
	return nil
}

// KeyReap implements keystore.Store: it deletes the keys that expired
// first, skipping rows another transaction has locked (a claim taking an
// expired key over), so that reapers never wait on requests.
func (s *Store) KeyReap(ctx context.Context, now time.Time, limit int) (int, error) {
	if err := keystore.ValidateReap(now, limit); err != nil {
		return 0, err
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM heed_idempotency_keys WHERE (scope, key) IN
		(SELECT scope, key FROM heed_idempotency_keys WHERE expires_at <= $1
		 ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED)`, now.UTC(), limit)
	if err != nil {
		return 0, pgErr("key reap", err)
	}
	return int(tag.RowsAffected()), nil
}
