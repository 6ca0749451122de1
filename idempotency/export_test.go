package idempotency

// Names the external tests use, unexported because no user needs them.
var (
	FormatKey = formatKey
)

type Problem = problemBody

// Len returns the number of keys stored, expired or not.
func (s *MemoryStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.keys)
}
