package idempotency

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/heed-go/heed/idempotency/keystore"
	"github.com/heed-go/heed/internal/redact"
)

// defaultReapInterval is how often a [Reaper] deletes expired keys when
// its Interval is zero: every 10 minutes.
const defaultReapInterval = 10 * time.Minute

// reapBatch is how many keys one KeyReap call deletes, so that one
// transaction never holds the store for long.
const reapBatch = 1000

// Reap deletes every key of s that expired at or before now, in batches of
// 1,000, and returns how many it deleted. Run it from a cron job, or use a
// [Reaper]. It stops at the first error, returning the count so far.
func Reap(ctx context.Context, s keystore.Store, now time.Time) (int, error) {
	total := 0
	for {
		n, err := s.KeyReap(ctx, now, reapBatch)
		total += n
		if err != nil || n < reapBatch {
			return total, err
		}
	}
}

// Reaper deletes expired keys in the background: once at Start, then every
// Interval, until Stop. Set the fields, then call Start once. Reaping from
// several processes at once is harmless. The zero Reaper is not usable
// (Store is required); Start and Stop are safe for concurrent use.
type Reaper struct {
	// Store is the store to reap (required): the Middleware's.
	Store keystore.Store
	// Interval is the time between reaps (default 10 minutes).
	Interval time.Duration
	// Logger, when set, receives a Debug record per reap that deleted
	// keys and a Warn record per failed reap.
	Logger *slog.Logger
	// Now is the clock (default time.Now), for tests.
	Now func() time.Time

	mu      sync.Mutex
	started bool
	cancel  context.CancelFunc
	done    chan struct{}
}

// Start starts the reaper's goroutine. It panics if Store is nil or the
// reaper was started before.
func (r *Reaper) Start() {
	if r.Store == nil {
		panic("idempotency: Reaper.Store is nil")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started {
		panic("idempotency: Reaper started twice")
	}
	r.started = true
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	r.done = make(chan struct{})
	interval := r.Interval
	if interval <= 0 {
		interval = defaultReapInterval
	}
	now := r.Now
	if now == nil {
		now = time.Now
	}
	go func() {
		defer close(r.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			n, err := Reap(ctx, r.Store, now())
			switch {
			case err != nil && ctx.Err() == nil && r.Logger != nil:
				r.Logger.Warn("idempotency: reaping expired keys failed", "error", redact.Error(err), "deleted", n)
			case n > 0 && r.Logger != nil:
				r.Logger.Debug("idempotency: expired keys reaped", "deleted", n)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// Stop stops the reaper and waits for its goroutine to exit (a reap under
// way is cancelled). It is safe to call more than once, or before Start.
func (r *Reaper) Stop() {
	r.mu.Lock()
	cancel, done := r.cancel, r.done
	r.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-done
}
