package retryhttp_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heed-go/heed/deadline"
	"github.com/heed-go/heed/retryhttp"
)

// chain is three services on loopback, A calls B calls C, each with heed
// on both sides: the server middleware in front, a retrying client behind.
type chain struct {
	a, b, c *httptest.Server
	cHits   atomic.Int64
	mu      sync.Mutex
	seen    map[string][]time.Duration // Timeout-Remaining adopted per hop
	cDone   chan cEnd                  // how C's context ended, when C blocks
	cIn     chan struct{}              // closed when C's handler first runs
	cInOnce sync.Once
}

// cEnd is how C's request context ended: its error, and the time that was
// left before its deadline then (hasDeadline false: it had none).
type cEnd struct {
	err         error
	left        time.Duration
	hasDeadline bool
}

// newChain builds the chain. With ownership off, every layer retries. C
// answers 503, or with block, waits for its context to end.
func newChain(t *testing.T, ownership, block bool) *chain {
	t.Helper()
	ch := &chain{seen: map[string][]time.Duration{}, cDone: make(chan cEnd, 10), cIn: make(chan struct{})}
	mw := deadline.Middleware{Limit: 10 * time.Second, OwnershipOff: !ownership}
	record := func(hop string, r *http.Request) {
		if left, ok := deadline.Remaining(r.Context()); ok {
			ch.mu.Lock()
			ch.seen[hop] = append(ch.seen[hop], left)
			ch.mu.Unlock()
		}
	}
	ch.c = httptest.NewServer(retryhttp.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		record("C", r)
		ch.cHits.Add(1)
		ch.cInOnce.Do(func() { close(ch.cIn) })
		if block {
			<-r.Context().Done()
			end := cEnd{err: r.Context().Err()}
			if dl, ok := r.Context().Deadline(); ok {
				end.left, end.hasDeadline = time.Until(dl), true
			}
			ch.cDone <- end
			http.Error(w, "C ran out of time", http.StatusGatewayTimeout)
			return
		}
		http.Error(w, "C is down", http.StatusServiceUnavailable)
	}), mw))
	t.Cleanup(ch.c.Close)
	forward := func(hop string, next func() string) http.Handler {
		tr := newTransport(t, fast(3))
		return retryhttp.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			record(hop, r)
			req, _ := http.NewRequestWithContext(r.Context(), "GET", next(), nil)
			resp, err := tr.RoundTrip(req)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			defer resp.Body.Close()
			w.WriteHeader(resp.StatusCode)
			io.Copy(w, resp.Body)
		}), mw)
	}
	ch.b = httptest.NewServer(forward("B", func() string { return ch.c.URL }))
	t.Cleanup(ch.b.Close)
	ch.a = httptest.NewServer(forward("A", func() string { return ch.b.URL }))
	t.Cleanup(ch.a.Close)
	return ch
}

func TestChainOwnership(t *testing.T) {
	const r = 2 // retries per layer: 3 attempts
	for _, tt := range []struct {
		ownership bool
		want      int64
	}{
		{true, 1 + r},
		{false, (1 + r) * (1 + r) * (1 + r)},
	} {
		name := "ownership on"
		if !tt.ownership {
			name = "ownership off"
		}
		t.Run(name, func(t *testing.T) {
			ch := newChain(t, tt.ownership, false)
			user := newTransport(t, fast(1+r))
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			resp, err := do(t, user, ctx, "GET", ch.a.URL, nil)
			if err != nil {
				t.Fatal(err)
			}
			readAll(t, resp)
			if resp.StatusCode != http.StatusServiceUnavailable {
				t.Errorf("user got %d, want C's 503 passed back", resp.StatusCode)
			}
			if n := ch.cHits.Load(); n != tt.want {
				t.Errorf("C saw %d attempts for one user request, want %d", n, tt.want)
			}
			// Deadlines shrink hop by hop: each hop's first request had
			// less time than the hop before it.
			ch.mu.Lock()
			defer ch.mu.Unlock()
			a, b, c := ch.seen["A"], ch.seen["B"], ch.seen["C"]
			if len(a) == 0 || len(b) == 0 || len(c) == 0 {
				t.Fatalf("deadlines not seen: A %v, B %v, C %v", a, b, c)
			}
			if !(a[0] <= 5*time.Second && b[0] < a[0] && c[0] < b[0]) {
				t.Errorf("deadlines do not shrink: A %v, B %v, C %v", a[0], b[0], c[0])
			}
		})
	}
}

func TestChainCancelStopsC(t *testing.T) {
	ch := newChain(t, true, true)
	user := newTransport(t, fast(3))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-ch.cIn: // C is working: its handler runs
			cancel() // A's caller gives up while C is working
		case <-ctx.Done():
		}
	}()
	_, err := do(t, user, ctx, "GET", ch.a.URL, nil)
	if err == nil {
		t.Fatal("no error after the caller gave up")
	}
	select {
	case end := <-ch.cDone:
		if end.err == nil {
			t.Error("C's context ended without an error")
		}
	case <-time.After(2 * time.Second):
		t.Fatal("C kept working after A's caller gave up")
	}
	if n := ch.cHits.Load(); n != 1 {
		t.Errorf("C saw %d attempts, want 1", n)
	}
}

func TestChainDeadlineReachesC(t *testing.T) {
	ch := newChain(t, true, true)
	user := newTransport(t, fast(3))
	const budget = 200 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	start := time.Now()
	resp, err := do(t, user, ctx, "GET", ch.a.URL, nil)
	if err == nil {
		readAll(t, resp)
		// 504 from C, or 502 from a hop whose own call ran out of time.
		if resp.StatusCode != http.StatusGatewayTimeout && resp.StatusCode != http.StatusBadGateway {
			t.Errorf("user got %d", resp.StatusCode)
		}
	}
	// The bounds that matter are the deadlines themselves; the wall clock
	// only catches a call that waited for C's own 10 s limit (a busy
	// machine can be late by far more than the 200 ms).
	if e := time.Since(start); e > budget+2*time.Second {
		t.Errorf("user waited %v, past its deadline", e)
	}
	select {
	case end := <-ch.cDone:
		// C's context ends at its own deadline, the user's carried down
		// the chain, not C's own 10 s limit. B's deadline is only the
		// header margin (5 ms) later than C's, less the request's transit:
		// on a busy machine the transit can take longer, and B hangs up
		// first. Then C's deadline must still have been the user's: at
		// most the budget away when its context ended.
		switch {
		case errors.Is(end.err, context.DeadlineExceeded):
		case errors.Is(end.err, context.Canceled) && end.hasDeadline && end.left <= budget:
		default:
			t.Errorf("C's context ended with %v, %v before its deadline (it had one: %v), want its deadline, the user's",
				end.err, end.left, end.hasDeadline)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("C kept working past the user's deadline")
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if len(ch.seen["C"]) == 0 {
		t.Fatal("C saw no deadline")
	}
	for _, left := range ch.seen["C"] {
		if left <= 0 || left > budget {
			t.Errorf("C saw %v left, want the user's %v less what the hops used", left, budget)
		}
	}
}
