package idempotency

import (
	"context"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/heed-go/heed/idempotency/keystore"
)

// NewMemoryStore returns an empty store of keys in memory, for tests and
// for a single process whose keys need not survive a restart: give it to
// [Middleware] (its Store field) and to a [Reaper]. It is safe for
// concurrent use. Records it returns are copies.
func NewMemoryStore() keystore.Store { return &memoryStore{} }

// memoryStore is NewMemoryStore's store. The zero value is ready to use;
// do not copy it after first use.
type memoryStore struct {
	mu   sync.Mutex
	keys map[memKey]*memEntry
}

type memKey struct{ scope, key string }

type memEntry struct {
	rec   keystore.Record
	token string
}

// KeyClaim implements keystore.Store.
func (s *memoryStore) KeyClaim(ctx context.Context, c keystore.Claim) (*keystore.Record, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	if err := c.Validate(); err != nil {
		return nil, false, err
	}
	k := memKey{c.Scope, c.Key}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.keys[k]; e != nil && e.rec.ExpiresAt.After(c.Now) &&
		(e.rec.State == keystore.StateCompleted || e.rec.LeaseUntil.After(c.Now)) {
		return copyRecord(&e.rec), false, nil
	}
	if s.keys == nil {
		s.keys = map[memKey]*memEntry{}
	}
	e := &memEntry{token: c.Token, rec: keystore.Record{
		Scope: c.Scope, Key: c.Key, Fingerprint: c.Fingerprint, State: keystore.StateRunning,
		CreatedAt: c.Now.Truncate(time.Microsecond), LeaseUntil: c.LeaseUntil.Truncate(time.Microsecond),
		ExpiresAt: c.ExpiresAt.Truncate(time.Microsecond),
	}}
	s.keys[k] = e
	return copyRecord(&e.rec), true, nil
}

// KeyComplete implements keystore.Store.
func (s *memoryStore) KeyComplete(ctx context.Context, c keystore.Completion) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := c.Validate(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.keys[memKey{c.Scope, c.Key}]
	if e == nil || e.token != c.Token || e.rec.State != keystore.StateRunning {
		return keystore.ErrLeaseLost
	}
	r := copyResponse(&c.Response)
	e.rec.State = keystore.StateCompleted
	e.rec.Response = r
	e.rec.ExpiresAt = c.ExpiresAt.Truncate(time.Microsecond)
	e.token = ""
	return nil
}

// KeyExtend implements keystore.Store.
func (s *memoryStore) KeyExtend(ctx context.Context, ext keystore.Extension) error {
	scope, key, token, leaseUntil := ext.Scope, ext.Key, ext.Token, ext.LeaseUntil
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := ext.Validate(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.keys[memKey{scope, key}]
	if e == nil || e.token != token || e.rec.State != keystore.StateRunning {
		return keystore.ErrLeaseLost
	}
	e.rec.LeaseUntil = leaseUntil.Truncate(time.Microsecond)
	if e.rec.LeaseUntil.After(e.rec.ExpiresAt) {
		e.rec.ExpiresAt = e.rec.LeaseUntil
	}
	return nil
}

// KeyRelease implements keystore.Store.
func (s *memoryStore) KeyRelease(ctx context.Context, rel keystore.Release) error {
	scope, key, token := rel.Scope, rel.Key, rel.Token
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := rel.Validate(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := memKey{scope, key}
	e := s.keys[k]
	if e == nil || e.token != token || e.rec.State != keystore.StateRunning {
		return keystore.ErrLeaseLost
	}
	delete(s.keys, k)
	return nil
}

// KeyReap implements keystore.Store. It deletes the keys that expired first.
func (s *memoryStore) KeyReap(ctx context.Context, now time.Time, limit int) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if err := keystore.ValidateReap(now, limit); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var expired []memKey
	for k, e := range s.keys {
		if !e.rec.ExpiresAt.After(now) {
			expired = append(expired, k)
		}
	}
	if len(expired) > limit {
		sort.Slice(expired, func(i, j int) bool {
			return s.keys[expired[i]].rec.ExpiresAt.Before(s.keys[expired[j]].rec.ExpiresAt)
		})
		expired = expired[:limit]
	}
	for _, k := range expired {
		delete(s.keys, k)
	}
	return len(expired), nil
}

func copyRecord(r *keystore.Record) *keystore.Record {
	c := *r
	if r.Response != nil {
		c.Response = copyResponse(r.Response)
	}
	return &c
}

func copyResponse(r *keystore.Response) *keystore.Response {
	c := keystore.Response{Status: r.Status}
	if r.Header != nil {
		c.Header = http.Header{}
		for k, v := range r.Header {
			c.Header[k] = append([]string(nil), v...)
		}
	}
	if r.Body != nil {
		c.Body = append([]byte{}, r.Body...)
	}
	return &c
}
