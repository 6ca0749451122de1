package idempotency

import "github.com/heed-go/heed/idempotency/keystore"

// Names the external tests use, unexported because no user needs them.
var (
	FormatKey = formatKey
)

type Problem = problemBody

// StoreLen returns the number of keys a store from NewMemoryStore holds,
// expired or not.
func StoreLen(s keystore.Store) int {
	m := s.(*memoryStore)
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.keys)
}
