package overload

import (
	"context"
	"sync"
	"time"

	"github.com/heed-go/heed/internal/admit"
)

// Config configures a [Limiter]. The zero Config is the documented
// default and what most servers want: an adaptive limit from 20 between 1
// and 1000, a queue as long as the limit, CoDel's 5 ms target and 100 ms
// interval, adaptive LIFO.
type Config struct {
	// Limit fixes the concurrency limit (default 0: adaptive). Use it
	// when the capacity is known and does not move, such as a pool of
	// workers in front of a licence-limited resource.
	Limit int

	// InitialLimit, MinLimit and MaxLimit are where the adaptive limit
	// starts and its bounds (defaults 20, 1 and 1000; at most 1,048,576).
	InitialLimit, MinLimit, MaxLimit int

	// MaxQueue is the most requests that wait at the limit (default: as
	// many as the limit). Negative: none wait; at the limit every request
	// is refused at once.
	MaxQueue int

	// QueueTarget and QueueInterval bound the time a request waits
	// (defaults 5 ms and 100 ms): at most QueueInterval, and at most
	// 2 × QueueTarget once the shortest wait of a whole interval was above
	// QueueTarget (the queue did not empty).
	QueueTarget, QueueInterval time.Duration

	// LIFOOff serves waiters in arrival order even while overloaded
	// (default: the newest first while overloaded).
	LIFOOff bool

	// Observe, when set, is called for every request the limiter admits
	// or refuses, on the request's goroutine and outside the limiter's
	// lock. heedotel's Metrics.OverloadObserver records it.
	Observe func(Event)
}

func (c Config) validate() error { return c.core().Validate() }

// Limiter is a concurrency limit with a queue in front. Make one with
// [New] per server (or per class of requests whose costs differ) and share
// it; it is safe for concurrent use. Most servers use it through
// [Limiter.Wrap]; [Limiter.Acquire] is the mechanism.
type Limiter struct {
	observe func(Event)
	c       *admit.Core // TryFast and TryFastRelease without mu; the rest under mu
	mu      sync.Mutex
}

// New returns a Limiter for cfg, or an error naming the bad field.
func New(cfg Config) (*Limiter, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Limiter{observe: cfg.Observe, c: admit.New(cfg.core())}, nil
}

// core returns c's decision fields for the Core.
func (c Config) core() admit.Config {
	return admit.Config{
		Limit: c.Limit, Initial: c.InitialLimit, Min: c.MinLimit, Max: c.MaxLimit,
		MaxQueue: c.MaxQueue, Target: c.QueueTarget, Interval: c.QueueInterval, FIFO: c.LIFOOff,
	}
}

// Permit is a request admitted by [Limiter.Acquire]. Call Release exactly
// once when the request's work ends. The zero Permit releases nothing.
type Permit struct {
	l        *Limiter
	ctx      context.Context
	start    time.Time // zero: not timed
	inflight int
}

// Release ends the request. Its time since Acquire returned is a sample
// of the handlers' latency, unless its context ended: a deadline that
// passed cuts the adaptive limit (the request ran out of time), and a
// caller that went away gives no sample (its latency says nothing). Below
// half the limit only one request in 32 is timed.
func (p Permit) Release() {
	l := p.l
	if l == nil {
		return
	}
	if p.start.IsZero() && l.c.TryFastRelease() {
		return
	}
	now := time.Now()
	how, rtt := admit.Unsampled, time.Duration(0)
	if !p.start.IsZero() {
		switch p.ctx.Err() {
		case nil:
			how, rtt = admit.Sampled, now.Sub(p.start)
		case context.DeadlineExceeded:
			how, rtt = admit.TimedOut, now.Sub(p.start)
		}
	}
	l.mu.Lock()
	l.c.Release(now, rtt, p.inflight, how)
	l.mu.Unlock()
}

// waiter is a request in the queue; the Core answers it on ch.
type waiter struct {
	w  admit.Waiter
	ch chan uint8
}

func (w *waiter) Wake(r uint8) { w.ch <- r }

// Acquire admits a request, waiting in the queue if need be, or refuses
// it with a [*RefusedError]. attempt is the request's attempt number as
// heed's Retry-Attempt carries it (0 or 1: a first attempt; 2 or more: a
// retry, which never waits). The context's deadline, if any, is the time
// the request has; its end takes the request out of the queue.
//
// Below the limit with nobody waiting, a first attempt is admitted with
// two atomic operations and no clock reading (one in 32 is timed).
func (l *Limiter) Acquire(ctx context.Context, attempt int) (Permit, error) {
	retry := attempt >= 2
	if !retry {
		if n, timed, ok := l.c.TryFast(); ok {
			var start time.Time
			if timed {
				start = time.Now()
			}
			if l.observe != nil {
				l.observe(Event{})
			}
			return Permit{l: l, ctx: ctx, start: start, inflight: n}, nil
		}
	}
	now := time.Now()
	dl, _ := ctx.Deadline()
	l.mu.Lock()
	out := l.c.Arrive(now, retry, dl)
	switch {
	case out.Admitted:
		l.mu.Unlock()
		if l.observe != nil {
			l.observe(Event{Retry: retry})
		}
		return Permit{l: l, ctx: ctx, start: now, inflight: out.Inflight}, nil
	case out.Reason != admit.None:
		l.mu.Unlock()
		return Permit{}, l.refused(Reason(out.Reason), out.RetryAfter, retry, 0, nil)
	}
	w := &waiter{ch: make(chan uint8, 1)}
	l.c.Queue(&w.w, now, dl, w)
	l.mu.Unlock()

	t := time.NewTimer(out.Wait)
	defer t.Stop()
	var why uint8
	select {
	case r := <-w.ch:
		return l.answered(ctx, r, time.Now(), now, retry)
	case <-t.C:
		why = out.Expire
	case <-ctx.Done():
		why = admit.Gone
	}
	end := time.Now()
	l.mu.Lock()
	ra, left := l.c.Leave(&w.w, end, why)
	l.mu.Unlock()
	if !left {
		// Answered just as it gave up: take the answer.
		r := <-w.ch
		if r == admit.None && why == admit.Gone {
			// Never serve a caller who has gone: pass the place on.
			l.mu.Lock()
			l.c.Release(end, 0, 0, admit.Unsampled)
			l.mu.Unlock()
			return Permit{}, l.refused(ReasonGone, 0, retry, end.Sub(now), ctx.Err())
		}
		return l.answered(ctx, r, end, now, retry)
	}
	var cause error
	if why == admit.Gone {
		ra, cause = 0, ctx.Err()
	}
	return Permit{}, l.refused(Reason(why), ra, retry, end.Sub(now), cause)
}

// answered returns the permit or the refusal of a waiter that joined the
// queue at since and was answered r by the Core at now.
func (l *Limiter) answered(ctx context.Context, r uint8, now, since time.Time, retry bool) (Permit, error) {
	if r != admit.None {
		l.mu.Lock()
		ra := l.c.RetryAfter(now)
		l.mu.Unlock()
		return Permit{}, l.refused(Reason(r), ra, retry, now.Sub(since), nil)
	}
	if l.observe != nil {
		l.observe(Event{Waited: now.Sub(since), Retry: retry})
	}
	return Permit{l: l, ctx: ctx, start: now, inflight: l.c.Inflight()}, nil
}

func (l *Limiter) refused(r Reason, ra time.Duration, retry bool, waited time.Duration, cause error) error {
	if l.observe != nil {
		l.observe(Event{Reason: r, Waited: waited, Retry: retry})
	}
	return &RefusedError{Reason: r, RetryAfter: ra, Err: cause}
}

// Stats returns a snapshot of l.
func (l *Limiter) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	lim, in, q, base := l.c.Stats()
	return Stats{Limit: lim, InFlight: in, Queued: q, Baseline: base}
}
