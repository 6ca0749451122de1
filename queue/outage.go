package queue

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/heed-go/heed/internal/redact"
	"github.com/heed-go/heed/queue/jobstore"
)

// outageLogInterval is how often a worker repeats, while its store keeps
// failing, that the database is still unreachable. The first failure and
// the recovery are logged once each, however many calls fail in between.
const outageLogInterval = time.Minute

// outage tracks a worker's failing store calls, so that an outage is
// logged as a change of state ("unreachable since ...", "reconnected
// after ...") instead of one line per failed call.
type outage struct {
	mu       sync.Mutex
	since    time.Time // first failure of the current outage; zero when none
	logged   time.Time // when it was last logged
	failures int       // failed calls in the current outage
}

// storeFailed records a failed store call (op names it) and logs the
// outage when it starts and every outageLogInterval while it lasts. A
// lease lost to another worker and the worker's own shutdown are not
// outages.
func (w *Worker) storeFailed(op string, err error) {
	if errors.Is(err, jobstore.ErrLeaseLost) || w.ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return
	}
	now := w.now()
	o := &w.outage
	o.mu.Lock()
	o.failures++
	first := o.since.IsZero()
	if first {
		o.since = now
	} else if now.Sub(o.logged) < outageLogInterval {
		o.mu.Unlock()
		return
	}
	o.logged = now
	since, failures := o.since, o.failures
	o.mu.Unlock()
	if w.cfg.Logger == nil {
		return
	}
	if first {
		w.cfg.Logger.Warn("queue: database unreachable since "+since.Format(time.TimeOnly+".000")+"; retrying",
			"worker", w.cfg.ID, "op", op, "error", redact.Error(err))
		return
	}
	w.cfg.Logger.Warn("queue: database still unreachable since "+since.Format(time.TimeOnly+".000")+"; retrying",
		"worker", w.cfg.ID, "for", now.Sub(since).Round(100*time.Millisecond), "failed_calls", failures,
		"op", op, "error", redact.Error(err))
}

// storeOK records a store call that succeeded, ending an outage (logged
// once, with its length).
func (w *Worker) storeOK() {
	o := &w.outage
	o.mu.Lock()
	if o.since.IsZero() {
		o.mu.Unlock()
		return
	}
	took, failures := w.now().Sub(o.since), o.failures
	o.since, o.logged, o.failures = time.Time{}, time.Time{}, 0
	o.mu.Unlock()
	if w.cfg.Logger != nil {
		w.cfg.Logger.Warn("queue: database reconnected after "+took.Round(100*time.Millisecond).String(),
			slog.String("worker", w.cfg.ID), slog.Int("failed_calls", failures))
	}
}
