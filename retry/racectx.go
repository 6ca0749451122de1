package retry

import (
	"context"
	"sync"
	"sync/atomic"
)

// raceCtx is the context of a race's first attempt: the caller's, which
// the race may cancel when a hedge wins. Most races send no hedge, and
// many attempts never ask for Done (an in-memory transport, a cache), so
// the cancellable context is made only when Done is asked for: until
// then, cancelling is a flag, and a race that ends with no hedge and no
// Done asked for leaves the context the caller's own, with nothing to
// release. That saves a call that sends no hedge the cancellable context
// (two allocations, a registration with the caller's context) and the
// function that releases it.
//
// Once made, the inner context answers everything (Done, Err, Value), so
// that contexts made from this one attach to it as to any cancellable
// context (no goroutine of their own) and context.Cause sees it.
//
// Its state changes under mu, the lock of the hedge's timer list (see
// tracker): the race that ends with no hedge sets settled while it holds
// that lock anyway, so that ending costs no atomic write of its own (each
// one about 20 ns on a busy machine). The state is read without the lock.
type raceCtx struct {
	context.Context // the caller's
	mu              *sync.Mutex
	state           atomic.Int32
	settled         bool            // the race ended with no hedge (under mu)
	inner           context.Context // made by Done: WithCancel of the caller's
	cancel          context.CancelFunc
}

// raceCtx states.
const (
	rcOpen     int32 = iota // no Done asked for, not cancelled
	rcCanceled              // cancelled before Done was asked for
	rcInner                 // Done was asked for: inner answers
)

func (c *raceCtx) Done() <-chan struct{} {
	if c.state.Load() == rcInner {
		return c.inner.Done()
	}
	return c.made().Done()
}

// made makes the inner context, unless there is one or the race is
// settled (then the caller's context answers), and returns the context
// that answers.
func (c *raceCtx) made() context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch s := c.state.Load(); {
	case s == rcInner:
		return c.inner
	case c.settled:
		return c.Context
	}
	c.inner, c.cancel = context.WithCancel(c.Context)
	if c.state.Load() == rcCanceled {
		c.cancel()
	}
	c.state.Store(rcInner)
	return c.inner
}

func (c *raceCtx) Err() error {
	switch c.state.Load() {
	case rcInner:
		return c.inner.Err()
	case rcCanceled:
		return c.made().Err()
	}
	return c.Context.Err()
}

func (c *raceCtx) Value(key any) any {
	switch c.state.Load() {
	case rcInner:
		return c.inner.Value(key)
	case rcCanceled:
		return c.made().Value(key)
	}
	return c.Context.Value(key)
}

// stop cancels c: the race is done with its first attempt.
func (c *raceCtx) stop() {
	c.mu.Lock()
	switch c.state.Load() {
	case rcOpen:
		c.state.Store(rcCanceled)
	case rcInner:
		c.cancel()
	}
	c.mu.Unlock()
}

// settle ends the race of c with no hedge sent, on the goroutine that
// made the first attempt, once settled is set: c stays the caller's
// context when Done was never asked for (nothing to release: it returns
// nil); otherwise it returns the function that releases the inner
// context.
func (c *raceCtx) settle() context.CancelFunc {
	if c.state.Load() != rcInner {
		return nil
	}
	return c.cancel
}

// settleLocked sets settled and settles c, for a race that was not
// taken off the timer's list (see Call.Race).
func (c *raceCtx) settleLocked() context.CancelFunc {
	c.mu.Lock()
	c.settled = true
	c.mu.Unlock()
	return c.settle()
}
