package retry

import (
	"context"
	"runtime"
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
// One atomic word holds the context's state and its race's: a race that
// ends with no hedge claims it with one compare-and-swap, which settles
// the context too (each atomic write costs about 20 ns on a busy
// machine). The state is changed only by compare-and-swap (or Or), so
// that no change is lost; a context being made is waited for, briefly.
//
// The inner context and its cancel function are kept behind one pointer,
// made with them, so that a raceCtx is 32 bytes, not 48: every call that
// may hedge allocates one, and at high load each byte allocated costs
// about 1 ns (retryhttp's BenchmarkHedgeCost, fastest chunk: on-off
// 105-111 ns, was 115-122). An attempt that asks for Done pays for it
// with one more allocation of 32 bytes (BenchmarkRaceCostDone: on-off
// 238-243 ns, was 227-229), beside the inner context and its cancel
// function it allocates anyway.
type raceCtx struct {
	context.Context // the caller's
	state           atomic.Int32
	made            *innerCtx // made by Done; read once state says ctxInner
}

// innerCtx is a raceCtx's inner context: WithCancel of the caller's.
type innerCtx struct {
	context.Context
	cancel context.CancelFunc
}

// raceCtx state bits.
const (
	// The context: open (nothing made), being made, or made (inner
	// answers).
	ctxMaking int32 = 1
	ctxInner  int32 = 2
	ctxPhase        = ctxMaking | ctxInner
	// ctxStopped: the race cancelled the context.
	ctxStopped int32 = 4
	// The race: running (zero), claimed by its first attempt, which ended
	// before any hedge (the context is then settled: nothing can cancel
	// it), or fired (hedges started: the coordinator owns the race).
	raceClaimed int32 = 8
	raceFired   int32 = 16
	racePhase         = raceClaimed | raceFired
)

func (c *raceCtx) Done() <-chan struct{} {
	if c.state.Load()&ctxPhase == ctxInner {
		return c.made.Done()
	}
	return c.inner().Done()
}

// inner makes the inner context, unless there is one or the race is
// settled (then the caller's context answers), and returns the context
// that answers.
func (c *raceCtx) inner() context.Context {
	for {
		s := c.state.Load()
		switch {
		case s&ctxPhase == ctxInner:
			return c.made
		case s&ctxPhase == ctxMaking:
			runtime.Gosched() // another goroutine makes it
			continue
		case s&racePhase == raceClaimed:
			return c.Context
		}
		if c.state.CompareAndSwap(s, s|ctxMaking) {
			break
		}
	}
	m := new(innerCtx)
	m.Context, m.cancel = context.WithCancel(c.Context)
	c.made = m
	for {
		s := c.state.Load()
		if c.state.CompareAndSwap(s, s&^ctxPhase|ctxInner) {
			if s&ctxStopped != 0 {
				m.cancel()
			}
			return m
		}
	}
}

func (c *raceCtx) Err() error {
	s := c.state.Load()
	switch {
	case s&ctxPhase == ctxInner:
		return c.made.Err()
	case s&ctxStopped != 0:
		return c.inner().Err()
	}
	return c.Context.Err()
}

func (c *raceCtx) Value(key any) any {
	s := c.state.Load()
	switch {
	case s&ctxPhase == ctxInner:
		return c.made.Value(key)
	case s&ctxStopped != 0:
		return c.inner().Value(key)
	}
	return c.Context.Value(key)
}

// stop cancels c: the race is done with its first attempt.
func (c *raceCtx) stop() {
	if c.state.Or(ctxStopped)&ctxPhase == ctxInner {
		c.made.cancel()
	}
	// Being made or not made: inner cancels what it makes.
}

// claim ends the race of c with no hedge sent, on the goroutine that made
// the first attempt, unless the race fired (false). The context is then
// settled: it stays the caller's when Done was never asked for (nothing
// to release: release is nil); otherwise release releases the inner
// context.
func (c *raceCtx) claim() (ok bool, release context.CancelFunc) {
	if c.state.CompareAndSwap(0, raceClaimed) {
		return true, nil // the common case: running, no Done asked for
	}
	for {
		s := c.state.Load()
		switch {
		case s&racePhase == raceFired:
			return false, nil
		case s&ctxPhase == ctxMaking:
			runtime.Gosched() // another goroutine makes it
			continue
		}
		if c.state.CompareAndSwap(s, s|raceClaimed) {
			if s&ctxPhase == ctxInner {
				return true, c.made.cancel
			}
			return true, nil
		}
	}
}

// fired marks the race of c as fired, unless its first attempt claimed
// it first (false).
func (c *raceCtx) fired() bool {
	for {
		s := c.state.Load()
		if s&racePhase != 0 {
			return false
		}
		if c.state.CompareAndSwap(s, s|raceFired) {
			return true
		}
	}
}
