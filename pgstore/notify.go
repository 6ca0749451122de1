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
	Cancel int64  `json:"c,omitempty"` // a running job that was cancelled (ops.go), instead of Queue
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
	stop    chan struct{} // closed by close: send what is pending, then return
	abort   context.CancelFunc
	ctx     context.Context // of every NOTIFY; cancelled publishFlush after close
	done    chan struct{}
	started bool
	closed  bool
}

// publishTimeout bounds one NOTIFY, so that a server that stopped
// answering does not hold notifications (the next NOTIFY carries them).
const publishTimeout = 5 * time.Second

// publishFlush is how long close lets the publisher send what was
// published before it: a short-lived producer (enqueue, then Close) must
// still wake the workers.
const publishFlush = 2 * time.Second

func newPublisher(pool *pgxpool.Pool) *publisher {
	ctx, abort := context.WithCancel(context.Background())
	return &publisher{pool: pool, pending: make(map[string]struct{}), kick: make(chan struct{}, 1),
		stop: make(chan struct{}), ctx: ctx, abort: abort, done: make(chan struct{})}
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
	if !p.started {
		p.started = true
		go p.run()
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

// send NOTIFYs for what is pending. A failure only costs latency: workers
// poll as well.
func (p *publisher) send() {
	if qs := p.take(); len(qs) > 0 {
		ctx, cancel := context.WithTimeout(p.ctx, publishTimeout)
		_, _ = p.pool.Exec(ctx, notifyManySQL, qs)
		cancel()
	}
}

func (p *publisher) run() {
	defer close(p.done)
	for {
		select {
		case <-p.stop:
			// Announce what was published before close. A NOTIFY in
			// flight when close was called has not been cancelled.
			p.send()
			return
		case <-p.kick:
		}
		p.send()
	}
}

// close sends what is pending (waiting up to publishFlush for the
// server) and stops the goroutine.
func (p *publisher) close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	started := p.started
	p.mu.Unlock()
	close(p.stop)
	if started {
		t := time.AfterFunc(publishFlush, p.abort)
		<-p.done
		t.Stop()
	}
	p.abort()
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

	cancels cancelFan // JobCancelNotify's subscribers (ops.go)

	// connected, when set (by tests, before the first subscription), is
	// called each time LISTEN succeeds, with the connection.
	connected func(*pgx.Conn)
	// checkEvery is how long the listener waits for a notification before
	// it pings the server (listenCheck; tests shorten it).
	checkEvery time.Duration
}

// listenCheck is how long an idle listener waits before it checks that its
// server is still there: a connection cut without a FIN or RST (a
// partition) is otherwise noticed only by TCP, after many minutes, and the
// store would hear no notification meanwhile.
const listenCheck = 30 * time.Second

// listenPing bounds that check.
const listenPing = 5 * time.Second

// subscription receives queue names on ch until it is removed, when ch is
// closed.
type subscription struct {
	ch   chan string
	stop func() bool // stops the context.AfterFunc that removes it
}

func newNotifier(pool *pgxpool.Pool) *notifier {
	return &notifier{pool: pool, subs: make(map[*subscription]struct{}), checkEvery: listenCheck}
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
			if wait = listenBackoff.Next(failures, wait, nil); !sleepCtx(ctx, wait) {
				return
			}
			continue
		}
		for _, q := range pending {
			n.send(q)
		}
		up := time.Now()
		n.listen(ctx, conn, schema)
		n.setUp(false)
		closeConn(conn)
		if time.Since(up) >= stableListen {
			failures, wait = 0, 0
			continue
		}
		// A connection that drops as soon as it is up (a server
		// restarting, a proxy that accepts and cuts) counts as a failed
		// attempt, so that reconnecting backs off instead of spinning.
		failures++
		if wait = listenBackoff.Next(failures, wait, nil); !sleepCtx(ctx, wait) {
			return
		}
	}
}

// sleepCtx waits d, and reports false if ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// stableListen is how long a LISTEN connection must last for the
// listener's reconnection backoff to start over.
const stableListen = time.Second

// connect takes a connection out of the pool for good (so that it has the
// pool's configuration, search_path included), LISTENs on it, and returns
// it with its current schema and the queues that have available jobs. On
// error it has closed the connection and returns none: the server may go
// away between any two of these statements.
func (n *notifier) connect(ctx context.Context) (*pgx.Conn, string, []string, error) {
	pc, err := n.pool.Acquire(ctx)
	if err != nil {
		return nil, "", nil, err
	}
	conn := pc.Hijack()
	schema, pending, err := n.prepare(ctx, conn)
	if err != nil {
		closeConn(conn)
		return nil, "", nil, err
	}
	if n.connected != nil {
		n.connected(conn)
	}
	return conn, schema, pending, nil
}

// prepare LISTENs on conn and reads its schema and the queues with
// available jobs.
func (n *notifier) prepare(ctx context.Context, conn *pgx.Conn) (schema string, pending []string, err error) {
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		return "", nil, err
	}
	if err := conn.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return "", nil, err
	}
	// After LISTEN, so that no job falls between the two.
	rows, err := conn.Query(ctx, `SELECT DISTINCT queue FROM heed_jobs WHERE state = 'available'`)
	if err != nil {
		return "", nil, err
	}
	pending, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return "", nil, err
	}
	return schema, pending, nil
}

// closeConn closes a hijacked connection, waiting at most 5 s for the
// server to acknowledge (a server that is gone does not).
func closeConn(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	_ = conn.Close(ctx)
	cancel()
}

// listen delivers notifications for schema until the connection fails or
// ctx ends.
func (n *notifier) listen(ctx context.Context, conn *pgx.Conn, schema string) {
	for {
		wctx, cancel := context.WithTimeout(ctx, n.checkEvery)
		msg, err := conn.WaitForNotification(wctx)
		timedOut := wctx.Err() != nil && ctx.Err() == nil
		cancel()
		if timedOut {
			// Quiet for a while: is the server still there? (A wait that
			// timed out leaves the connection usable.)
			pctx, cancel := context.WithTimeout(ctx, listenPing)
			err := conn.Ping(pctx)
			cancel()
			if err != nil {
				return
			}
			continue
		}
		if err != nil {
			return
		}
		var p notifyPayload
		if json.Unmarshal([]byte(msg.Payload), &p) == nil && p.Schema == schema {
			if p.Cancel != 0 {
				n.cancels.send(p.Cancel)
			} else {
				n.send(p.Queue)
			}
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
