package pgstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/idempotency"
	"github.com/heed-go/heed/pgstore/internal/pgtest"
	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
	"github.com/heed-go/heed/retry"
	"github.com/jackc/pgx/v5"
)

// faultProxy is a TCP proxy in front of the PostgreSQL server, for fault
// injection without touching the server: down drops every connection and
// refuses new ones (the port is closed), up accepts them again.
type faultProxy struct {
	target string
	addr   string

	mu    sync.Mutex
	ln    net.Listener // nil while down
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
	holed atomic.Bool // drop every byte, keep connections open (a partition)
}

// startProxy listens on a free loopback port and forwards to target.
func startProxy(t *testing.T, target string) *faultProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{target: target, addr: ln.Addr().String(), conns: map[net.Conn]struct{}{}}
	p.serve(ln)
	t.Cleanup(func() { p.down(); p.wg.Wait() })
	return p
}

func (p *faultProxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return // closed by down
			}
			up, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			if p.ln != ln { // went down meanwhile
				p.mu.Unlock()
				c.Close()
				up.Close()
				continue
			}
			p.conns[c], p.conns[up] = struct{}{}, struct{}{}
			p.mu.Unlock()
			pipe := func(dst, src net.Conn) {
				buf := make([]byte, 32<<10)
				for {
					n, err := src.Read(buf)
					if n > 0 && !p.holed.Load() {
						if _, werr := dst.Write(buf[:n]); werr != nil {
							break
						}
					}
					if err != nil {
						break
					}
				}
				dst.Close()
				src.Close()
				p.mu.Lock()
				delete(p.conns, dst)
				delete(p.conns, src)
				p.mu.Unlock()
			}
			p.wg.Go(func() { pipe(c, up) })
			p.wg.Go(func() { pipe(up, c) })
		}
	})
}

// down closes the port and every connection through the proxy.
func (p *faultProxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// up opens the port again.
func (p *faultProxy) up(t *testing.T) {
	t.Helper()
	var ln net.Listener
	var err error
	for range 50 { // the port may linger for a moment
		if ln, err = net.Listen("tcp", p.addr); err == nil || !errors.Is(err, syscall.EADDRINUSE) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("proxy: listen again on %s: %v", p.addr, err)
	}
	p.serve(ln)
}

// viaProxy returns the connection URL u (a URL, as pgstoretest.Schema
// returns for a URL server) with the proxy as its host.
func viaProxy(t *testing.T, u string, p *faultProxy) string {
	t.Helper()
	pu, err := url.Parse(u)
	if err != nil {
		t.Skipf("%s is not a URL; the fault tests need one", pgtest.EnvURL)
	}
	pu.Host = p.addr
	q := pu.Query()
	q.Set("connect_timeout", "2")
	pu.RawQuery = q.Encode()
	return pu.String()
}

// serverAddr is host:port of the test server.
func serverAddr(t *testing.T) string {
	t.Helper()
	u, err := url.Parse(testURL(t))
	if err != nil || u.Host == "" || strings.HasPrefix(u.Host, "/") {
		t.Skipf("%s is not a TCP URL; the fault tests need one", pgtest.EnvURL)
	}
	if u.Port() == "" {
		return net.JoinHostPort(u.Hostname(), "5432")
	}
	return u.Host
}

// lineCounter is a slog handler that counts records (and keeps the last
// few, for failure messages).
type lineCounter struct {
	mu    sync.Mutex
	n     int
	lines []string
}

func (h *lineCounter) Enabled(context.Context, slog.Level) bool { return true }
func (h *lineCounter) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if r.Level < slog.LevelWarn || strings.HasPrefix(r.Message, "job ") {
		return nil
	}
	h.n++
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool { fmt.Fprintf(&b, " %s=%v", a.Key, a.Value); return true })
	h.lines = append(h.lines, b.String())
	return nil
}
func (h *lineCounter) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *lineCounter) WithGroup(string) slog.Handler      { return h }

func (h *lineCounter) snapshot() (int, []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n, append([]string(nil), h.lines...)
}

// TestFaultDatabaseOutage runs two workers (each with its own store, as two
// processes would) and a producer through a proxy, and cuts the database
// off for a few seconds while they work: every connection dropped, new ones
// refused. Nothing may panic or stop; every job whose enqueue was
// acknowledged must end succeeded; no job may run more often than its
// history records (a re-run is only ever an attempt recorded as "lost");
// and work must resume within a second of the database coming back.
func TestFaultDatabaseOutage(t *testing.T) {
	_, u := testSchema(t)
	proxy := startProxy(t, serverAddr(t))
	pu := viaProxy(t, u, proxy)
	ctx := t.Context()

	direct, err := Open(ctx, u) // setup and checks, around the proxy
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()

	const (
		preload  = 2000
		attempts = 5
		outage   = 3 * time.Second
	)
	var (
		runsMu    sync.Mutex
		runs      = map[int64]int{}
		succeeded atomic.Int64
		restored  atomic.Int64 // UnixNano when the proxy came back; 0 before
		resumedAt atomic.Int64 // UnixNano of the first success after that
		resumed   = make(chan struct{})
		warm      = make(chan struct{})
		warmOnce  sync.Once
		logs      lineCounter
	)
	observe := func(_ context.Context, e queue.Event) {
		if e.Kind != queue.EventSucceeded {
			return
		}
		if n := succeeded.Add(1); n == preload/4 {
			warmOnce.Do(func() { close(warm) })
		}
		if restored.Load() != 0 && resumedAt.CompareAndSwap(0, time.Now().UnixNano()) {
			close(resumed)
		}
	}

	workers := make([]*queue.Worker, 2)
	for i := range workers {
		st, err := Open(ctx, pu)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		w, err := queue.NewWorker(st, queue.WorkerConfig{
			ID:           fmt.Sprintf("w%d", i),
			Queues:       map[string]int{queue.DefaultQueue: 8},
			Lease:        2 * time.Second,
			PollInterval: 100 * time.Millisecond,
			Policy: retry.Policy{Attempts: attempts,
				Backoff: backoff.Schedule{Base: 10 * time.Millisecond, Cap: 100 * time.Millisecond}},
			ShutdownGrace: 10 * time.Second,
			Observe:       observe,
			Logger:        slog.New(&logs),
		})
		if err != nil {
			t.Fatal(err)
		}
		queue.Handle(w, "work", func(_ context.Context, job *jobstore.Job, args struct{ Fail bool }) error {
			runsMu.Lock()
			runs[job.ID]++
			runsMu.Unlock()
			if args.Fail && job.Attempt == 1 {
				return retry.Transient(errors.New("first attempt fails"))
			}
			return nil
		})
		workers[i] = w
	}

	var (
		ackMu sync.Mutex
		acked []int64
	)
	ack := func(j *jobstore.Job) {
		ackMu.Lock()
		acked = append(acked, j.ID)
		ackMu.Unlock()
	}
	// Preload through the direct store, 8 at a time.
	dc := queue.NewClient(direct, queue.ClientConfig{})
	var pre sync.WaitGroup
	for g := range 8 {
		pre.Go(func() {
			for i := g; i < preload; i += 8 {
				j, _, err := dc.Enqueue(ctx, "work", struct{ Fail bool }{i%10 == 0}, queue.EnqueueOptions{})
				if err != nil {
					t.Error(err)
					return
				}
				ack(j)
			}
		})
	}
	pre.Wait()
	if t.Failed() {
		return
	}

	for _, w := range workers {
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// The producer enqueues through the proxy until stopped; only
	// acknowledged jobs are promised.
	prodStore, err := Open(ctx, pu)
	if err != nil {
		t.Fatal(err)
	}
	defer prodStore.Close()
	pc := queue.NewClient(prodStore, queue.ClientConfig{})
	stopProd := make(chan struct{})
	var prod sync.WaitGroup
	var prodErrs, prodOK atomic.Int64
	prod.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stopProd:
				return
			default:
			}
			ectx, cancel := context.WithTimeout(ctx, 5*time.Second)
			j, _, err := pc.Enqueue(ectx, "work", struct{ Fail bool }{i%10 == 0}, queue.EnqueueOptions{})
			cancel()
			if err != nil {
				prodErrs.Add(1)
				time.Sleep(10 * time.Millisecond) // pace the producer's own retries
				continue
			}
			prodOK.Add(1)
			ack(j)
		}
	})

	select {
	case <-warm:
	case <-time.After(30 * time.Second):
		t.Fatalf("workers did not get going: %d succeeded", succeeded.Load())
	}
	before := succeeded.Load()
	proxy.down()
	downAt := time.Now()
	time.Sleep(outage) // the outage itself
	proxy.up(t)
	restored.Store(time.Now().UnixNano())
	select {
	case <-resumed:
	case <-time.After(20 * time.Second):
		t.Fatalf("no job succeeded within 20s of the database coming back (%d before the outage)", before)
	}
	resume := time.Duration(resumedAt.Load() - restored.Load())
	t.Logf("outage of %v (%d jobs had succeeded); first job succeeded %v after the database came back",
		time.Since(downAt).Round(time.Millisecond)-resume, before, resume.Round(time.Millisecond))
	if resume > time.Second {
		t.Errorf("work resumed %v after the database came back, want within 1s", resume)
	}
	// Let the producer add some more after the outage, then stop it.
	for target := prodOK.Load() + 200; prodOK.Load() < target; {
		time.Sleep(10 * time.Millisecond)
	}
	close(stopProd)
	prod.Wait()

	// Wait for every acknowledged job to reach a final state.
	deadline := time.Now().Add(40 * time.Second)
	for {
		st, err := direct.Stats(ctx, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		live := 0
		for _, q := range st.Queues {
			live += q.Available + q.Scheduled + q.Running
		}
		if live == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d jobs still live 40s after the outage", live)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, w := range workers {
		if err := w.Shutdown(ctx); err != nil {
			t.Errorf("worker %s: Shutdown: %v", w.ID(), err)
		}
	}

	jobs, err := direct.JobList(ctx, jobstore.JobFilter{Limit: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	byID := map[int64]*jobstore.Job{}
	for _, j := range jobs {
		byID[j.ID] = j
	}
	lost := 0
	runsMu.Lock()
	defer runsMu.Unlock()
	for _, id := range acked {
		j := byID[id]
		switch {
		case j == nil:
			t.Errorf("acknowledged job %d is gone", id)
			continue
		case j.State != jobstore.StateSucceeded:
			t.Errorf("job %d ended %s (%s), want succeeded; history %v", id, j.State, j.DeadReason, j.History)
		case j.Attempt > attempts:
			t.Errorf("job %d made %d attempts, more than the %d allowed", id, j.Attempt, attempts)
		}
		recorded := 0
		for _, a := range j.History {
			switch a.Outcome {
			case jobstore.OutcomeReleased, jobstore.OutcomeRequeued, jobstore.OutcomeSnoozed, jobstore.OutcomeExpired:
			default:
				recorded++
			}
			if a.Outcome == jobstore.OutcomeLost {
				lost++
			}
		}
		if runs[id] > recorded {
			t.Errorf("job %d ran %d times but its history records %d attempts: %v", id, runs[id], recorded, j.History)
		}
	}
	n, lines := logs.snapshot()
	t.Logf("%d acknowledged jobs all succeeded; %d producer errors during the outage; %d attempts rescued as lost (each one a documented re-run); %d worker log lines",
		len(acked), prodErrs.Load(), lost, n)
	// Each worker logs the outage's start and end; a connection that fails
	// once more while the pool replaces its dead ones may add a second pair.
	reconnected := 0
	for _, l := range lines {
		if strings.HasPrefix(l, "queue: database reconnected after ") {
			reconnected++
		}
	}
	if n > 4*len(workers) || reconnected < len(workers) {
		t.Errorf("the outage left %d log lines (%d reconnected), want at most %d with one reconnected per worker:\n%s",
			n, reconnected, 4*len(workers), strings.Join(lines, "\n"))
	}
	if testing.Verbose() {
		for _, l := range lines {
			t.Log("log: " + l)
		}
	}
}

// TestFaultIdempotencyOutage: while the database is unreachable the
// idempotency middleware answers 503 with Retry-After and does not run the
// handler; once it is back the same key runs the handler once and replays
// its response.
func TestFaultIdempotencyOutage(t *testing.T) {
	_, u := testSchema(t)
	proxy := startProxy(t, serverAddr(t))
	st, err := Open(t.Context(), viaProxy(t, u, proxy))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var ran atomic.Int64
	srv := httptest.NewServer(idempotency.Middleware{Store: st}.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := ran.Add(1)
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, "order %d", n)
	})))
	defer srv.Close()
	post := func() (int, string, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL, strings.NewReader(`{"x":1}`))
		req.Header.Set("Idempotency-Key", "order-1")
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Retry-After"), string(b)
	}

	proxy.down()
	for i := range 3 {
		code, ra, body := post()
		if code != http.StatusServiceUnavailable || ra == "" {
			t.Fatalf("request %d while down: %d (Retry-After %q) %s, want 503 with Retry-After", i, code, ra, body)
		}
	}
	if n := ran.Load(); n != 0 {
		t.Fatalf("handler ran %d times while the store was down", n)
	}
	proxy.up(t)
	code, _, body := post()
	for deadline := time.Now().Add(5 * time.Second); code == http.StatusServiceUnavailable && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		code, _, body = post()
	}
	if code != http.StatusCreated || body != "order 1" {
		t.Fatalf("after the outage: %d %q, want 201 \"order 1\"", code, body)
	}
	if code, _, body := post(); code != http.StatusCreated || body != "order 1" {
		t.Fatalf("replay: %d %q, want the stored 201 \"order 1\"", code, body)
	}
	if n := ran.Load(); n != 1 {
		t.Fatalf("handler ran %d times, want once", n)
	}
}

// TestFaultPartition: the proxy drops every byte but keeps the
// connections open, as a partition or a server that lost power does (no
// FIN, no RST). A worker's polls must not hang on those connections, and
// the listener must notice that its connection is dead: after the
// partition heals, work resumes and notifications arrive again.
//
// How soon work resumes varies from a few hundred milliseconds to about 15
// s: pgx cleans up a connection whose statement timed out by sending a
// cancel request, and waits up to 15 s for it. A cancel request sent during
// the partition is lost, and until it times out the connection still
// holds its slot in the worker pool. The store's Close waits for that
// cleanup too.
func TestFaultPartition(t *testing.T) {
	t.Parallel()
	_, u := testSchema(t)
	proxy := startProxy(t, serverAddr(t))
	ctx := t.Context()
	direct, err := Open(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	st, err := Open(ctx, viaProxy(t, u, proxy))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	st.pollTimeout = time.Second // instead of 30 s
	st.notify.checkEvery = 500 * time.Millisecond
	listens := make(chan struct{}, 16)
	st.notify.connected = func(*pgx.Conn) { listens <- struct{}{} }

	succeeded := make(chan time.Time, 1024)
	w, err := queue.NewWorker(st, queue.WorkerConfig{
		Lease:        5 * time.Second,
		PollInterval: time.Second, // a claim cut off by the partition is retried at the next poll
		Observe: func(_ context.Context, e queue.Event) {
			if e.Kind == queue.EventSucceeded {
				succeeded <- time.Now()
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	queue.Handle(w, "work", func(context.Context, *jobstore.Job, struct{}) error { return nil })
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Shutdown(context.Background())
	<-listens
	dc := queue.NewClient(direct, queue.ClientConfig{})
	enqueue := func() {
		t.Helper()
		if _, _, err := dc.Enqueue(ctx, "work", struct{}{}, queue.EnqueueOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	enqueue()
	select {
	case <-succeeded:
	case <-time.After(10 * time.Second):
		t.Fatal("no job before the partition")
	}

	proxy.holed.Store(true)
	enqueue() // its notification is lost in the partition
	// A poll (whose context, like a worker's, has no deadline) fails after
	// the store's poll timeout instead of hanging.
	claimed := make(chan error, 1)
	go func() {
		now := time.Now()
		_, err := st.JobClaim(context.Background(), jobstore.ClaimParams{Queue: "elsewhere", Limit: 1, Now: now,
			LeaseUntil: now.Add(time.Minute), Worker: "probe"})
		claimed <- err
	}()
	select {
	case err := <-claimed:
		if err == nil {
			t.Error("a claim through the partition succeeded")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a claim through the partition still hangs after 10s (poll timeout 1s)")
	}
	time.Sleep(time.Second) // the rest of the partition
	proxy.holed.Store(false)
	healed := time.Now()
	// The listener finds its connection dead and reconnects (and announces
	// the queue with the job enqueued during the partition), and the
	// worker runs that job.
	select {
	case <-listens:
	case <-time.After(20 * time.Second):
		t.Fatal("the listener did not reconnect after the partition")
	}
	select {
	case at := <-succeeded:
		t.Logf("the job enqueued during the partition ran %v after it healed", at.Sub(healed).Round(time.Millisecond))

	case <-time.After(40 * time.Second):
		t.Fatal("the job enqueued during the partition did not run within 40s after it healed")
	}
}
