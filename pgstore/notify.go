package pgstore

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/heed-go/heed/backoff"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// notifyChannel is the channel heed notifies on when a job is inserted or
// becomes available again. The payload is a JSON object {"s": schema, "q":
// queue}, so that stores in different schemas of one database ignore each
// other's jobs.
const notifyChannel = "heed_jobs"

// notifyPayload is the JSON of a notification.
type notifyPayload struct {
	Schema string `json:"s"`
	Queue  string `json:"q"`
}

// notifyOneSQL notifies for the queue in $1, from the session's schema.
const notifyOneSQL = `SELECT pg_notify('heed_jobs', json_build_object('s', current_schema(), 'q', $1::text)::text)`

// notifyManySQL notifies for each queue of the array $1.
const notifyManySQL = `SELECT pg_notify('heed_jobs', json_build_object('s', current_schema(), 'q', q)::text)
FROM unnest($1::text[]) AS q`

// publisher sends notifications for committed changes, from its own
// goroutine and outside of the changes' transactions.
//
// Why not NOTIFY inside the inserting transaction (or from a trigger)?
// PostgreSQL serialises the commits of transactions that issued NOTIFY
// (they take one database-wide lock, held through the commit's WAL flush),
// which defeats group commit: parallel inserts ran 4× slower than serial
// ones. A transaction that only notifies writes no WAL, so it holds that
// lock briefly. The publisher also coalesces: queues published while a
// NOTIFY is in flight go out together in the next one, without added
// delay. EnqueueTx, whose job must be announced only if the caller's
// transaction commits, is the exception: it notifies inside it.
type publisher struct {
	pool *pgxpool.Pool

	mu      sync.Mutex
	pending map[string]struct{}
	kick    chan struct{} // capacity 1
	cancel  context.CancelFunc
	done    chan struct{}
	closed  bool
}

func newPublisher(pool *pgxpool.Pool) *publisher {
	return &publisher{pool: pool, pending: make(map[string]struct{}), kick: make(chan struct{}, 1)}
}

// publish queues a notification for each queue name, starting the
// publisher's goroutine if needed. It never blocks on the database.
func (p *publisher) publish(queues ...string) {
	if len(queues) == 0 {
		return
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	for _, q := range queues {
		p.pending[q] = struct{}{}
	}
	if p.cancel == nil {
		ctx, cancel := context.WithCancel(context.Background())
		p.cancel, p.done = cancel, make(chan struct{})
		go p.run(ctx)
	}
	p.mu.Unlock()
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// take empties the pending set.
func (p *publisher) take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	qs := make([]string, 0, len(p.pending))
	for q := range p.pending {
		qs = append(qs, q)
	}
	clear(p.pending)
	return qs
}

func (p *publisher) run(ctx context.Context) {
	defer close(p.done)
	for {
		select {
		case <-ctx.Done():
			// Announce what was published before Close, briefly.
			if qs := p.take(); len(qs) > 0 {
				fctx, cancel := context.WithTimeout(context.Background(), time.Second)
				_, _ = p.pool.Exec(fctx, notifyManySQL, qs)
				cancel()
			}
			return
		case <-p.kick:
		}
		if qs := p.take(); len(qs) > 0 {
			// A failure only costs latency: workers poll as well.
			_, _ = p.pool.Exec(ctx, notifyManySQL, qs)
		}
	}
}

// close sends what is pending and stops the goroutine.
func (p *publisher) close() {
	p.mu.Lock()
	p.closed = true
	cancel, done := p.cancel, p.done
	p.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// listenBackoff paces reconnections of the listener: from 100 ms up to
// 10 s, full jitter.
var listenBackoff = backoff.Schedule{Base: 100 * time.Millisecond, Cap: 10 * time.Second}

// subscriptionBuffer is how many queue names a slow subscriber may have
// pending before further ones are dropped.
const subscriptionBuffer = 64

// notifier holds one dedicated connection that LISTENs on notifyChannel
// and fans the queue names out to subscribers. It starts with the first
// subscription and runs until close, reconnecting with backoff when the
// connection drops. Each time it (re)connects it sends every queue that
// has available jobs, since notifications sent while nobody listened are
// lost.
type notifier struct {
	pool *pgxpool.Pool

	mu     sync.Mutex
	subs   map[*subscription]struct{}
	cancel context.CancelFunc // nil until started
	done   chan struct{}      // closed when run returns
	ready  chan struct{}      // closed after the first connection attempt
	closed bool
	up     bool // a LISTEN connection is up

	// connected, when set (by tests, before the first subscription), is
	// called each time LISTEN succeeds, with the connection.
	connected func(*pgx.Conn)
}

// subscription receives queue names on ch until it is removed, when ch is
// closed.
type subscription struct {
	ch   chan string
	stop func() bool // stops the context.AfterFunc that removes it
}

func newNotifier(pool *pgxpool.Pool) *notifier {
	return &notifier{pool: pool, subs: make(map[*subscription]struct{})}
}

// subscribe registers a subscription that lasts until ctx ends or close,
// starts the listener if needed, and waits (within ctx, and at most
// firstConnectWait) for the listener's first connection attempt, so that a
// caller that subscribes and then inserts hears of its insert. It returns
// nil after close.
func (n *notifier) subscribe(ctx context.Context) <-chan string {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	sub := &subscription{ch: make(chan string, subscriptionBuffer)}
	n.subs[sub] = struct{}{}
	sub.stop = context.AfterFunc(ctx, func() { n.remove(sub) })
	if n.cancel == nil {
		runCtx, cancel := context.WithCancel(context.Background())
		n.cancel, n.done, n.ready = cancel, make(chan struct{}), make(chan struct{})
		go n.run(runCtx)
	}
	ready := n.ready
	n.mu.Unlock()
	t := time.NewTimer(firstConnectWait)
	defer t.Stop()
	select {
	case <-ready:
	case <-ctx.Done():
	case <-t.C: // the server is slow to answer: keep trying in the background
	}
	return sub.ch
}

// firstConnectWait bounds how long JobNotify waits for the listener's
// first connection.
const firstConnectWait = 5 * time.Second

// remove unsubscribes sub and closes its channel, once.
func (n *notifier) remove(sub *subscription) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.subs[sub]; ok {
		delete(n.subs, sub)
		close(sub.ch)
	}
}

// listening reports whether the LISTEN connection is up.
func (n *notifier) listening() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.up
}

// close stops the listener, waits for it to exit, and closes every
// subscription's channel.
func (n *notifier) close() {
	n.mu.Lock()
	n.closed = true
	cancel, done := n.cancel, n.done
	n.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for sub := range n.subs {
		sub.stop()
		delete(n.subs, sub)
		close(sub.ch)
	}
}

// send gives queue to every subscriber that has room.
func (n *notifier) send(queue string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for sub := range n.subs {
		select {
		case sub.ch <- queue:
		default: // full: the subscriber will poll
		}
	}
}

func (n *notifier) setUp(v bool) {
	n.mu.Lock()
	n.up = v
	n.mu.Unlock()
}

// run listens until ctx ends, reconnecting with backoff.
func (n *notifier) run(ctx context.Context) {
	defer close(n.done)
	first := true
	failures := 0
	var wait time.Duration
	for ctx.Err() == nil {
		conn, schema, pending, err := n.connect(ctx)
		if err == nil {
			n.setUp(true)
		}
		if first {
			close(n.ready)
			first = false
		}
		if err != nil {
			failures++
			wait = listenBackoff.Next(failures, wait, nil)
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			continue
		}
		failures, wait = 0, 0
		for _, q := range pending {
			n.send(q)
		}
		n.listen(ctx, conn, schema)
		n.setUp(false)
		closeCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = conn.Close(closeCtx)
		cancel()
	}
}

// connect takes a connection out of the pool for good (so that it has the
// pool's configuration, search_path included), LISTENs on it, and returns
// it with its current schema and the queues that have available jobs.
func (n *notifier) connect(ctx context.Context) (conn *pgx.Conn, schema string, pending []string, err error) {
	pc, err := n.pool.Acquire(ctx)
	if err != nil {
		return nil, "", nil, err
	}
	conn = pc.Hijack()
	defer func() {
		if err != nil {
			_ = conn.Close(context.WithoutCancel(ctx))
		}
	}()
	if _, err = conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		return nil, "", nil, err
	}
	if err = conn.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return nil, "", nil, err
	}
	// After LISTEN, so that no job falls between the two.
	rows, err := conn.Query(ctx, `SELECT DISTINCT queue FROM heed_jobs WHERE state = 'available'`)
	if err == nil {
		pending, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	if err != nil {
		return nil, "", nil, err
	}
	if n.connected != nil {
		n.connected(conn)
	}
	return conn, schema, pending, nil
}

// listen delivers notifications for schema until the connection fails or
// ctx ends.
func (n *notifier) listen(ctx context.Context, conn *pgx.Conn, schema string) {
	for {
		msg, err := conn.WaitForNotification(ctx)
		if err != nil {
			return
		}
		var p notifyPayload
		if json.Unmarshal([]byte(msg.Payload), &p) == nil && p.Schema == schema {
			n.send(p.Queue)
		}
	}
}

// JobNotify returns a channel that receives the name of a job's queue
// when, in any process using this database and schema, a job is inserted,
// requeued, or made available again for now (a release, a snooze, a retry
// without delay; retries due later are left to polling), shortly after the
// change commits, through PostgreSQL's LISTEN/NOTIFY. Notifications are
// coalesced, dropped when the receiver falls 64 behind, and lost while the
// listener is disconnected; after it reconnects, the channel receives the
// name of every queue that has available jobs. So poll as well: a
// notification says "look now", its absence proves nothing.
//
// All subscriptions share one dedicated connection, opened on the first
// call (which waits up to 5 s, within ctx, for the first connection
// attempt) and kept, and reconnected with backoff, until [Store.Close].
// The channel is closed when ctx ends or the store is closed. JobNotify
// returns [ErrClosed] after Close.
func (s *Store) JobNotify(ctx context.Context) (<-chan string, error) {
	ch := s.notify.subscribe(ctx)
	if ch == nil {
		return nil, ErrClosed
	}
	return ch, nil
}
