package pgstore

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// maxBatch caps the number of calls one statement carries.
const maxBatch = 256

// batchTimeout bounds one batch's statement.
const batchTimeout = time.Minute

// request is one call waiting in a combiner.
type request interface {
	context() context.Context // the caller's context
	fail(err error)           // finish the call with err and no result
}

// combiner applies concurrent calls together: while one batch is in
// flight, the calls that arrive queue up and go out as the next one, in one
// statement and one commit. A lone call goes out at once, alone, so
// combining adds no delay; under load it saves a statement and a commit per
// call (River's batch completer, made invisible to the caller). Each call
// still returns only after its own work committed, with its own result.
// batcher (transitions) and inserter (inserts) are combiners.
type combiner[R request] struct {
	pool *pgxpool.Pool
	ctx  context.Context // ends on close

	// take splits pending into the next batch (at most maxBatch calls)
	// and the rest; one and many apply a batch of one or several live
	// calls, finishing each.
	take func(pending []R) (batch, rest []R)
	one  func(r R)
	many func(batch []R)

	mu      sync.Mutex
	pending []R
	busy    bool // a flush goroutine is running
	wg      sync.WaitGroup
	cancel  context.CancelFunc

	// batches and batched count the multi-row statements and the calls
	// they carried (for tests and benchmarks).
	batches, batched atomic.Int64
}

func (c *combiner[R]) init(pool *pgxpool.Pool) {
	c.pool = pool
	c.ctx, c.cancel = context.WithCancel(context.Background())
}

// submit queues r and waits until done is closed (r finished: nil), the
// store closes (ErrClosed) or r's context ends (its error; the work may or
// may not have been applied).
func (c *combiner[R]) submit(r R, done <-chan struct{}) error {
	c.mu.Lock()
	if c.ctx.Err() != nil {
		c.mu.Unlock()
		return ErrClosed
	}
	c.pending = append(c.pending, r)
	if !c.busy {
		c.busy = true
		c.wg.Add(1)
		go c.flush()
	}
	c.mu.Unlock()
	select {
	case <-done:
		return nil
	case <-r.context().Done():
		return r.context().Err()
	}
}

// close fails what is pending and waits for the flush goroutine.
func (c *combiner[R]) close() {
	c.mu.Lock()
	c.cancel()
	c.mu.Unlock()
	c.wg.Wait()
}

// next removes the next batch from pending, or returns nil (and marks the
// combiner idle) when nothing is pending.
func (c *combiner[R]) next() []R {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.pending) == 0 {
		c.busy = false
		return nil
	}
	batch, rest := c.take(c.pending)
	c.pending = rest
	return batch
}

func (c *combiner[R]) flush() {
	defer c.wg.Done()
	for {
		batch := c.next()
		if batch == nil {
			return
		}
		live := batch[:0]
		for _, r := range batch {
			switch {
			case c.ctx.Err() != nil:
				r.fail(ErrClosed)
			case r.context().Err() != nil:
				r.fail(r.context().Err()) // not applied
			default:
				live = append(live, r)
			}
		}
		if len(live) == 1 {
			c.one(live[0])
		} else if len(live) > 1 {
			c.many(live)
		}
	}
}

// stmtCtx is the context of a batch's statement: it ends when the store
// closes or after batchTimeout, and carries no caller's cancellation (a
// batch serves several callers), but keeps parent's values.
func (c *combiner[R]) stmtCtx(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), batchTimeout)
	stop := context.AfterFunc(c.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}
