package pgstore

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// expectQueue waits for q on ch.
func expectQueue(t *testing.T, ch <-chan string, q string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case got, ok := <-ch:
			if !ok {
				t.Fatalf("channel closed while waiting for %q", q)
			}
			if got == q {
				return
			}
		case <-timeout:
			t.Fatalf("no notification for queue %q", q)
		}
	}
}

// expectNone checks that nothing arrives on ch for a while.
func expectNone(t *testing.T, ch <-chan string, d time.Duration) {
	t.Helper()
	select {
	case got := <-ch:
		t.Fatalf("unexpected notification %q", got)
	case <-time.After(d):
	}
}

func TestNotifyInsertAndRetry(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := t.Context()
	ch, err := s.JobNotify(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !s.notify.listening() {
		t.Error("listener not up after JobNotify returned")
	}
	job, _, err := s.JobInsert(ctx, newInsert(t, "k", queue.EnqueueOptions{Queue: "q1"}))
	if err != nil {
		t.Fatal(err)
	}
	expectQueue(t, ch, "q1")

	// Claiming does not notify; a retry due now does (one due later is
	// left to polling).
	claimed, err := s.JobClaim(ctx, jobstore.ClaimParams{Queue: "q1", Limit: 1, Now: t0, LeaseUntil: t0.Add(time.Minute)})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim = %v, %v", claimed, err)
	}
	expectNone(t, ch, 200*time.Millisecond)
	err = s.JobTransition(ctx, jobstore.Transition{ID: job.ID, LeaseToken: claimed[0].LeaseToken, State: jobstore.StateAvailable,
		Attempt: 1, AvailableAt: t0, Now: t0, Entry: jobstore.Attempt{Attempt: 1, Outcome: "transient", Action: "retry"}})
	if err != nil {
		t.Fatal(err)
	}
	expectQueue(t, ch, "q1")
}

// TestNotifyOtherSchema: a store hears nothing of another schema's jobs.
func TestNotifyOtherSchema(t *testing.T) {
	t.Parallel()
	a, b := openTest(t), openTest(t)
	ctx := t.Context()
	ch, err := a.JobNotify(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.JobInsert(ctx, newInsert(t, "k", queue.EnqueueOptions{Queue: "other"})); err != nil {
		t.Fatal(err)
	}
	expectNone(t, ch, 300*time.Millisecond)
}

// TestEnqueueTx: a job enqueued in a transaction exists, and is
// announced, exactly when the transaction commits.
func TestEnqueueTx(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := t.Context()
	ch, err := s.JobNotify(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `CREATE TABLE orders (id int PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}

	// Rolled back: no order, no job, no notification.
	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO orders VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	job, inserted, err := s.EnqueueTx(ctx, tx, "ship", map[string]int{"order": 1}, queue.EnqueueOptions{Queue: "tx"})
	if err != nil || !inserted {
		t.Fatalf("EnqueueTx = %v, %v", inserted, err)
	}
	expectNone(t, ch, 200*time.Millisecond) // not before commit
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	expectNone(t, ch, 200*time.Millisecond)
	if _, err := s.JobGet(ctx, job.ID); err == nil {
		t.Fatal("job of a rolled-back transaction exists")
	}

	// Committed: the job and the notification.
	tx, err = s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	job, _, err = s.EnqueueTx(ctx, tx, "ship", map[string]int{"order": 2}, queue.EnqueueOptions{Queue: "tx"})
	if err != nil {
		t.Fatal(err)
	}
	expectNone(t, ch, 200*time.Millisecond)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	expectQueue(t, ch, "tx")
	got, err := s.JobGet(ctx, job.ID)
	if err != nil || string(got.Args) != `{"order":2}` {
		t.Fatalf("JobGet = %+v, %v", got, err)
	}

	// Invalid input is refused before anything is written.
	tx, err = s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, _, err := s.EnqueueTx(ctx, tx, "", nil, queue.EnqueueOptions{}); err == nil {
		t.Error("EnqueueTx with an empty kind succeeded")
	}
	if _, _, err := s.EnqueueTx(ctx, tx, "k", json.RawMessage(`{"a":`), queue.EnqueueOptions{}); err == nil {
		t.Error("EnqueueTx with invalid JSON succeeded")
	}
}

// TestEnqueueTxUnique: a transaction that enqueues a key held by an
// uncommitted transaction waits for it, then returns its job.
func TestEnqueueTxUnique(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := t.Context()
	tx1, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx1.Rollback(ctx)
	j1, ins1, err := s.EnqueueTx(ctx, tx1, "k", nil, queue.EnqueueOptions{UniqueKey: "once"})
	if err != nil || !ins1 {
		t.Fatalf("first EnqueueTx = %v, %v", ins1, err)
	}
	type result struct {
		job *jobstore.Job
		ins bool
		err error
	}
	done := make(chan result, 1)
	go func() {
		j, ins, err := s.JobInsert(ctx, newInsert(t, "k", queue.EnqueueOptions{UniqueKey: "once"}))
		done <- result{j, ins, err}
	}()
	select {
	case r := <-done:
		t.Fatalf("second insert did not wait for the first transaction: %+v", r)
	case <-time.After(200 * time.Millisecond):
	}
	if err := tx1.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.ins || r.job.ID != j1.ID {
		t.Fatalf("second insert = %+v, want job %d not inserted", r, j1.ID)
	}
}

// TestNotifyReconnect kills the listener's connection: it reconnects,
// announces queues with available jobs, and hears new jobs again.
func TestNotifyReconnect(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := t.Context()
	var (
		mu   sync.Mutex
		pids []uint32
		up   = make(chan struct{}, 8)
	)
	s.notify.connected = func(c *pgx.Conn) {
		mu.Lock()
		pids = append(pids, c.PgConn().PID())
		mu.Unlock()
		up <- struct{}{}
	}
	ch, err := s.JobNotify(ctx)
	if err != nil {
		t.Fatal(err)
	}
	<-up
	if _, _, err := s.JobInsert(ctx, newInsert(t, "k", queue.EnqueueOptions{Queue: "before"})); err != nil {
		t.Fatal(err)
	}
	expectQueue(t, ch, "before")

	mu.Lock()
	pid := pids[0]
	mu.Unlock()
	if _, err := s.Pool().Exec(ctx, `SELECT pg_terminate_backend($1)`, pid); err != nil {
		t.Fatal(err)
	}
	select {
	case <-up:
	case <-time.After(15 * time.Second):
		t.Fatal("listener did not reconnect")
	}
	// The job inserted before is still available: announced again.
	expectQueue(t, ch, "before")
	if _, _, err := s.JobInsert(ctx, newInsert(t, "k", queue.EnqueueOptions{Queue: "after"})); err != nil {
		t.Fatal(err)
	}
	expectQueue(t, ch, "after")
}

// TestNotifyChannelClosed: the channel closes when its context ends, and
// every channel closes on Close.
func TestNotifyChannelClosed(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx, cancel := context.WithCancel(t.Context())
	ch1, err := s.JobNotify(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ch2, err := s.JobNotify(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	drainUntilClosed(t, ch1)
	s.Close()
	drainUntilClosed(t, ch2)
}

func drainUntilClosed(t *testing.T, ch <-chan string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-timeout:
			t.Fatal("channel not closed")
		}
	}
}

// TestNotifyAcrossStores: a job inserted through one store (process)
// wakes the listener of another on the same schema, and a requeue does
// too.
func TestNotifyAcrossStores(t *testing.T) {
	t.Parallel()
	_, u := testSchema(t)
	ctx := t.Context()
	open := func() *Store {
		s, err := Open(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b := open(), open()
	ch, err := a.JobNotify(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.JobInsert(ctx, newInsert(t, "k", queue.EnqueueOptions{Queue: "shared"})); err != nil {
		t.Fatal(err)
	}
	expectQueue(t, ch, "shared")

	killJob(t, b, "requeued")
	expectQueue(t, ch, "requeued") // its insert
	if n, err := b.DeadRequeue(ctx, jobstore.OpParams{Filter: jobstore.JobFilter{Queue: "requeued"}, Now: t0, Entry: jobstore.Attempt{Outcome: jobstore.OutcomeRequeued, Action: "requeue"}}); err != nil || n != 1 {
		t.Fatalf("DeadRequeue = %d, %v", n, err)
	}
	expectQueue(t, ch, "requeued")
}

// TestNotifyServerDown: with no server, JobNotify still returns a channel
// (the listener keeps retrying with backoff), and Close stops the retries
// and closes the channel. Needs no server.
func TestNotifyServerDown(t *testing.T) {
	pool, err := pgxpool.New(t.Context(), "postgres://heed@127.0.0.1:1/heed?sslmode=disable&connect_timeout=1")
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	s, err := New(pool)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := s.JobNotify(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if s.notify.listening() {
		t.Error("listening without a server")
	}
	time.Sleep(300 * time.Millisecond) // a few failed attempts
	s.Close()
	drainUntilClosed(t, ch)
}

// TestNotifyConnectFailsAfterHijack: a listener whose connection fails
// after it was taken from the pool (here: the schema has no heed_jobs
// table yet, as when the server goes away between LISTEN and the query)
// closes that connection and retries; it does not crash the process.
func TestNotifyConnectFailsAfterHijack(t *testing.T) {
	t.Parallel()
	_, u := testSchema(t)
	pool, err := pgxpool.New(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	s, err := New(pool) // not migrated: the listener's query fails
	if err != nil {
		t.Fatal(err)
	}
	ch, err := s.JobNotify(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if s.notify.listening() {
		t.Error("listening without a heed_jobs table")
	}
	if err := s.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.JobInsert(t.Context(), newInsert(t, "k", queue.EnqueueOptions{Queue: "late"})); err != nil {
		t.Fatal(err)
	}
	expectQueue(t, ch, "late") // the listener's retry succeeded
	s.Close()
	drainUntilClosed(t, ch)
}
