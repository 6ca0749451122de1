package queuetest

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
)

// flakyStore fails claims and rescues while down, counting the failures.
type flakyStore struct {
	jobstore.Store
	down   atomic.Bool
	failed atomic.Int64
}

var errUnreachable = errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")

func (s *flakyStore) JobClaim(ctx context.Context, p jobstore.ClaimParams) ([]*queue.Job, error) {
	if s.down.Load() {
		s.failed.Add(1)
		return nil, errUnreachable
	}
	return s.Store.JobClaim(ctx, p)
}

func (s *flakyStore) JobRescue(ctx context.Context, p jobstore.RescueParams) ([]*queue.Job, error) {
	if s.down.Load() {
		s.failed.Add(1)
		return nil, errUnreachable
	}
	return s.Store.JobRescue(ctx, p)
}

// records is a slog handler that keeps messages and signals each one.
type records struct {
	mu   sync.Mutex
	msgs []string
	each chan string
}

func (h *records) Enabled(context.Context, slog.Level) bool { return true }
func (h *records) Handle(_ context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, "job ") {
		return nil
	}
	h.mu.Lock()
	h.msgs = append(h.msgs, r.Message)
	h.mu.Unlock()
	select {
	case h.each <- r.Message:
	default:
	}
	return nil
}
func (h *records) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *records) WithGroup(string) slog.Handler      { return h }

// TestWorkerOutageLogging: an outage of many failed polls is logged as its
// start and its end, not once per failed call.
func TestWorkerOutageLogging(t *testing.T) {
	st := &flakyStore{Store: openStore(t)}
	st.down.Store(true)
	rec := &records{each: make(chan string, 64)}
	cfg := fastConfig()
	cfg.PollInterval = time.Millisecond
	cfg.RescueInterval = time.Millisecond
	cfg.Logger = slog.New(rec)
	w := newWorker(t, st, cfg)
	start(t, w)
	for st.failed.Load() < 100 {
		time.Sleep(time.Millisecond)
	}
	st.down.Store(false)
	deadline := time.After(10 * time.Second)
	for {
		select {
		case m := <-rec.each:
			if !strings.HasPrefix(m, "queue: database reconnected after ") {
				continue
			}
		case <-deadline:
			t.Fatalf("no reconnected record; got %q", rec.msgs)
		}
		break
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	// Up to the first reconnected record. (A call that found the store
	// down just before it came back may fail after it: a new outage.)
	msgs := rec.msgs
	for i, m := range msgs {
		if strings.HasPrefix(m, "queue: database reconnected after ") {
			msgs = msgs[:i+1]
			break
		}
	}
	if len(msgs) != 2 || !strings.HasPrefix(msgs[0], "queue: database unreachable since ") ||
		!strings.HasSuffix(msgs[0], "; retrying") {
		t.Errorf("after %d failed calls the log has %q, want one unreachable and one reconnected record", st.failed.Load(), rec.msgs)
	}
}
