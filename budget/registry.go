package budget

import "sync"

// Registry keeps one [Budget] per destination and configuration, so that
// every client in a process that calls the same destination spends the same
// budget, however many client objects it makes. The zero Registry is empty
// and ready to use; it is safe for concurrent use. Most callers want the
// process's own, through [For].
//
// A Registry keeps every Budget it made for as long as it lives (about 250
// bytes each): key it by host and port, not by URL.
type Registry struct {
	mu sync.Mutex
	m  map[regKey]*Budget
}

// regKey is a destination and a Config after defaults (the Clock aside,
// which only the convenience wrappers read).
type regKey struct {
	dest string
	p    params
}

// For returns the Budget for destination dest (for HTTP, the host and
// port, as in URL.Host) under cfg, creating it on first use: every call
// with the same dest and an equivalent cfg (the same values after
// defaults) gets the same *Budget. It returns nil, nil when cfg turns the
// budget off, and the error of [New] for an invalid cfg. A Budget made for
// a cfg with a Clock keeps that Clock for its wrappers.
func (r *Registry) For(dest string, cfg Config) (*Budget, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.off() {
		return nil, nil
	}
	k := regKey{dest: dest, p: cfg.resolve()}
	r.mu.Lock()
	defer r.mu.Unlock()
	if b, ok := r.m[k]; ok {
		return b, nil
	}
	if r.m == nil {
		r.m = map[regKey]*Budget{}
	}
	b := newBudget(k.p, cfg.Clock)
	r.m[k] = b
	return b, nil
}

// size returns the number of budgets the registry holds.
func (r *Registry) size() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.m)
}

// process is the registry of [For].
var process Registry

// For returns the process's Budget for destination dest under cfg, from a
// Registry shared by the whole process: see [Registry.For]. retryhttp's
// Transport takes its per-host budgets from here by default, so that
// Transports made per call still share one budget per host.
func For(dest string, cfg Config) (*Budget, error) { return process.For(dest, cfg) }
