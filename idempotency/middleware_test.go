package idempotency_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heed-go/heed/idempotency"
	"github.com/heed-go/heed/idempotency/keystore"
	"github.com/heed-go/heed/internal/leakcheck"
	"github.com/heed-go/heed/internal/redact"
)

func TestMain(m *testing.M) {
	leakcheck.Main(m)
}

// fakeClock is a clock the test moves by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// payments is a payment-like handler that counts its charges.
type payments struct {
	charges atomic.Int64
}

func (p *payments) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	n := p.charges.Add(1)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Location", fmt.Sprintf("/payments/%d", n))
	w.Header().Set("Set-Cookie", "session=secret")
	w.Header().Set("X-Request-Local", "not stored")
	w.WriteHeader(http.StatusCreated)
	fmt.Fprintf(w, `{"payment":%d,"request":%q}`, n, body)
}

type result struct {
	code   int
	header http.Header
	body   string
}

func send(h http.Handler, method, target, body string, hdr ...string) result {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, target, rd)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return result{w.Code, w.Header(), w.Body.String()}
}

func problemCode(t *testing.T, r result) string {
	t.Helper()
	if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("Content-Type %q, want application/problem+json", ct)
	}
	var p idempotency.Problem
	if err := json.Unmarshal([]byte(r.body), &p); err != nil {
		t.Fatalf("problem body %q: %v", r.body, err)
	}
	if p.Status != r.code || p.Detail == "" || p.Title == "" {
		t.Errorf("problem %+v for status %d", p, r.code)
	}
	return p.Code
}

func TestReplayByteForByte(t *testing.T) {
	var p payments
	h := idempotency.Middleware{Store: idempotency.NewMemoryStore()}.Wrap(&p)
	first := send(h, "POST", "/payments", "amount=10", "Idempotency-Key", `"k1"`)
	if first.code != 201 || first.header.Get(idempotency.ReplayedHeader) != "" {
		t.Fatalf("first: %d %v", first.code, first.header)
	}
	for _, form := range []string{`"k1"`, `k1`, ` "k1" `} {
		again := send(h, "POST", "/payments", "amount=10", "Idempotency-Key", form)
		if again.code != 201 || again.body != first.body {
			t.Errorf("replay (%s): %d %q, want 201 %q", form, again.code, again.body, first.body)
		}
		if again.header.Get(idempotency.ReplayedHeader) != "true" {
			t.Errorf("replay not marked: %v", again.header)
		}
		for _, name := range []string{"Content-Type", "Location"} {
			if again.header.Get(name) != first.header.Get(name) {
				t.Errorf("replayed %s = %q, want %q", name, again.header.Get(name), first.header.Get(name))
			}
		}
		for _, name := range []string{"Set-Cookie", "X-Request-Local"} {
			if v := again.header.Get(name); v != "" {
				t.Errorf("replayed %s = %q: not on the allowlist", name, v)
			}
		}
		if cl := again.header.Get("Content-Length"); cl != fmt.Sprint(len(first.body)) {
			t.Errorf("Content-Length %q", cl)
		}
	}
	if n := p.charges.Load(); n != 1 {
		t.Errorf("%d charges, want 1", n)
	}
}

func TestMethodsAndMissingKey(t *testing.T) {
	var p payments
	s := idempotency.NewMemoryStore()
	h := idempotency.Middleware{Store: s}.Wrap(&p)
	// GET and PUT pass through, key or not; POST without a key too.
	send(h, "GET", "/payments", "", "Idempotency-Key", "k")
	send(h, "PUT", "/payments", "x", "Idempotency-Key", "k")
	send(h, "POST", "/payments", "x")
	send(h, "POST", "/payments", "x")
	if n := p.charges.Load(); n != 4 || idempotency.StoreLen(s) != 0 {
		t.Errorf("%d charges and %d keys, want 4 and 0", n, idempotency.StoreLen(s))
	}
	// PATCH is keyed by default.
	send(h, "PATCH", "/payments/1", "x", "Idempotency-Key", "k")
	send(h, "PATCH", "/payments/1", "x", "Idempotency-Key", "k")
	if n := p.charges.Load(); n != 5 {
		t.Errorf("%d charges after two keyed PATCHes, want 5", n)
	}
	// Configured methods replace the default.
	h = idempotency.Middleware{Store: s, Methods: []string{"PUT"}}.Wrap(&p)
	send(h, "PUT", "/x", "x", "Idempotency-Key", "k")
	send(h, "PUT", "/x", "x", "Idempotency-Key", "k")
	send(h, "POST", "/x", "x", "Idempotency-Key", "k")
	send(h, "POST", "/x", "x", "Idempotency-Key", "k")
	if n := p.charges.Load(); n != 8 {
		t.Errorf("%d charges, want 8", n)
	}
}

func TestRequiredKey(t *testing.T) {
	var p payments
	h := idempotency.Middleware{Store: idempotency.NewMemoryStore(), Required: true}.Wrap(&p)
	r := send(h, "POST", "/payments", "amount=10")
	if r.code != 400 || problemCode(t, r) != "idempotency_key_missing" {
		t.Errorf("missing key: %d %s", r.code, r.body)
	}
	for _, bad := range []string{`"unterminated`, strings.Repeat("k", 256), "two words", `""`} {
		r = send(h, "POST", "/payments", "amount=10", "Idempotency-Key", bad)
		if r.code != 400 || problemCode(t, r) != "idempotency_key_invalid" {
			t.Errorf("key %.20q: %d %s", bad, r.code, r.body)
		}
	}
	r = send(h, "POST", "/payments", "amount=10", "Idempotency-Key", "a", "Idempotency-Key", "b")
	if r.code != 400 || problemCode(t, r) != "idempotency_key_invalid" {
		t.Errorf("two keys: %d %s", r.code, r.body)
	}
	// An invalid key is refused even where keys are optional.
	h2 := idempotency.Middleware{Store: idempotency.NewMemoryStore()}.Wrap(&p)
	if r = send(h2, "POST", "/payments", "x", "Idempotency-Key", `"bad`); r.code != 400 {
		t.Errorf("invalid optional key: %d", r.code)
	}
	if n := p.charges.Load(); n != 0 {
		t.Errorf("%d charges, want 0", n)
	}
}

func TestPrincipalIsolation(t *testing.T) {
	var p payments
	h := idempotency.Middleware{
		Store:     idempotency.NewMemoryStore(),
		Principal: func(r *http.Request) string { return r.Header.Get("X-User") },
	}.Wrap(&p)
	alice := send(h, "POST", "/payments", "amount=10", "Idempotency-Key", "same", "X-User", "alice")
	bob := send(h, "POST", "/payments", "amount=10", "Idempotency-Key", "same", "X-User", "bob")
	if alice.body == bob.body || p.charges.Load() != 2 {
		t.Fatalf("alice %q, bob %q, %d charges: principals share a key", alice.body, bob.body, p.charges.Load())
	}
	again := send(h, "POST", "/payments", "amount=10", "Idempotency-Key", "same", "X-User", "bob")
	if again.body != bob.body || again.header.Get(idempotency.ReplayedHeader) != "true" {
		t.Errorf("bob's replay %q, want %q", again.body, bob.body)
	}
	// Without a principal, everyone is in the anonymous scope.
	anon := send(h, "POST", "/payments", "amount=10", "Idempotency-Key", "same")
	if p.charges.Load() != 3 || anon.code != 201 {
		t.Errorf("anonymous: %d, %d charges", anon.code, p.charges.Load())
	}
	shared := idempotency.Middleware{Store: idempotency.NewMemoryStore()}.Wrap(&p)
	a := send(shared, "POST", "/payments", "amount=10", "Idempotency-Key", "same", "X-User", "alice")
	b := send(shared, "POST", "/payments", "amount=10", "Idempotency-Key", "same", "X-User", "bob")
	if a.body != b.body || b.header.Get(idempotency.ReplayedHeader) != "true" {
		t.Errorf("no Principal: bob should get alice's replay (documented), got %q vs %q", b.body, a.body)
	}
}

func TestRouteIsolation(t *testing.T) {
	var p payments
	mw := idempotency.Middleware{Store: idempotency.NewMemoryStore()}
	mux := http.NewServeMux()
	mux.Handle("POST /payments", mw.Wrap(&p))
	mux.Handle("POST /refunds", mw.Wrap(&p))
	mux.Handle("POST /orders/{id}/pay", mw.Wrap(&p))
	send(mux, "POST", "/payments", "x", "Idempotency-Key", "k")
	send(mux, "POST", "/refunds", "x", "Idempotency-Key", "k")
	if n := p.charges.Load(); n != 2 {
		t.Errorf("%d charges for one key on two routes, want 2", n)
	}
	// One route (pattern), two paths: the key is the route's; the paths
	// differ, so the second is a mismatch.
	send(mux, "POST", "/orders/1/pay", "x", "Idempotency-Key", "k")
	r := send(mux, "POST", "/orders/2/pay", "x", "Idempotency-Key", "k")
	if r.code != 422 {
		t.Errorf("same key, same route, other path: %d, want 422", r.code)
	}
}

func TestFingerprintMismatch(t *testing.T) {
	var p payments
	h := idempotency.Middleware{Store: idempotency.NewMemoryStore(), FingerprintHeaders: []string{"content-type"}}.Wrap(&p)
	send(h, "POST", "/payments?x=1", "amount=10", "Idempotency-Key", "k", "Content-Type", "text/plain")
	for name, r := range map[string]result{
		"body":    send(h, "POST", "/payments?x=1", "amount=99", "Idempotency-Key", "k", "Content-Type", "text/plain"),
		"query":   send(h, "POST", "/payments?x=2", "amount=10", "Idempotency-Key", "k", "Content-Type", "text/plain"),
		"header":  send(h, "POST", "/payments?x=1", "amount=10", "Idempotency-Key", "k", "Content-Type", "text/csv"),
		"no body": send(h, "POST", "/payments?x=1", "", "Idempotency-Key", "k", "Content-Type", "text/plain"),
	} {
		if r.code != 422 || problemCode(t, r) != "idempotency_key_mismatch" {
			t.Errorf("%s differs: %d %s", name, r.code, r.body)
		}
	}
	// A header not named does not matter.
	r := send(h, "POST", "/payments?x=1", "amount=10", "Idempotency-Key", "k", "Content-Type", "text/plain", "User-Agent", "other")
	if r.code != 201 || r.header.Get(idempotency.ReplayedHeader) != "true" {
		t.Errorf("unnamed header differs: %d", r.code)
	}
	if n := p.charges.Load(); n != 1 {
		t.Errorf("%d charges", n)
	}
}

func TestLongRequestBody(t *testing.T) {
	var got []string
	h := idempotency.Middleware{Store: idempotency.NewMemoryStore(), MaxRequestBody: 8}.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = append(got, string(b))
	}))
	send(h, "POST", "/", "0123456789abcdef", "Idempotency-Key", "k")
	if len(got) != 1 || got[0] != "0123456789abcdef" {
		t.Fatalf("handler read %q, want the whole body", got)
	}
	// Same first 8 bytes, another length: a mismatch.
	if r := send(h, "POST", "/", "0123456789", "Idempotency-Key", "k"); r.code != 422 {
		t.Errorf("longer body with the same prefix: %d, want 422", r.code)
	}
}

func TestOversizedResponseReleasesKey(t *testing.T) {
	var runs atomic.Int64
	big := strings.Repeat("x", 100)
	s := idempotency.NewMemoryStore()
	h := idempotency.Middleware{Store: s, MaxResponseBody: 64}.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		io.WriteString(w, big[:50])
		io.WriteString(w, big[50:])
	}))
	for i := range 2 {
		r := send(h, "POST", "/report", "q", "Idempotency-Key", "k")
		if r.code != 200 || r.body != big || r.header.Get(idempotency.ReplayedHeader) != "" {
			t.Errorf("request %d: %d, %d bytes", i, r.code, len(r.body))
		}
	}
	if runs.Load() != 2 || idempotency.StoreLen(s) != 0 {
		t.Errorf("%d runs, %d keys: an oversized response must release its key", runs.Load(), idempotency.StoreLen(s))
	}
}

func TestPanicHoldsKeyUntilLease(t *testing.T) {
	clk := newClock()
	var runs atomic.Int64
	h := idempotency.Middleware{Store: idempotency.NewMemoryStore(), Lease: 30 * time.Second, Now: clk.Now}.Wrap(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if runs.Add(1) == 1 {
				panic("charged, then crashed")
			}
			w.WriteHeader(http.StatusCreated)
		}))
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the panic did not propagate")
			}
		}()
		send(h, "POST", "/payments", "x", "Idempotency-Key", "k")
	}()
	r := send(h, "POST", "/payments", "x", "Idempotency-Key", "k")
	if r.code != 409 || r.header.Get("Retry-After") != "1" || problemCode(t, r) != "idempotency_key_in_use" {
		t.Errorf("during the lease: %d Retry-After %q", r.code, r.header.Get("Retry-After"))
	}
	clk.Add(30 * time.Second)
	if r = send(h, "POST", "/payments", "x", "Idempotency-Key", "k"); r.code != 201 {
		t.Errorf("after the lease: %d, want 201", r.code)
	}
	if r = send(h, "POST", "/payments", "x", "Idempotency-Key", "k"); r.code != 201 || r.header.Get(idempotency.ReplayedHeader) != "true" {
		t.Errorf("then: %d, want the replay", r.code)
	}
	if n := runs.Load(); n != 2 {
		t.Errorf("%d runs, want 2", n)
	}
}

// extendLog is a store that reports each lease extension.
type extendLog struct {
	keystore.Store
	until chan time.Time
}

func (s *extendLog) KeyExtend(ctx context.Context, ext keystore.Extension) error {
	leaseUntil := ext.LeaseUntil
	err := s.Store.KeyExtend(ctx, ext)
	if err == nil {
		select {
		case s.until <- leaseUntil:
		default:
		}
	}
	return err
}

// A handler slower than the lease keeps its key: its process renews the
// lease, so a retry meanwhile gets 409, never a second run. Lease expiry
// is judged on a fake clock, and each retry waits for a renewal made at
// the clock's new time (the event itself), so a loaded machine that
// renews late cannot fail the test; the renewals come from the
// middleware's own timers.
func TestSlowHandlerKeepsKey(t *testing.T) {
	const lease = 40 * time.Millisecond
	clk := newClock()
	st := &extendLog{Store: idempotency.NewMemoryStore(), until: make(chan time.Time, 1)}
	var runs atomic.Int64
	started, finish := make(chan struct{}), make(chan struct{})
	h := idempotency.Middleware{Store: st, Lease: lease, Now: clk.Now}.Wrap(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if runs.Add(1) == 1 {
				close(started)
				<-finish // slower than many leases
			}
			w.WriteHeader(http.StatusCreated)
		}))
	done := make(chan result)
	go func() { done <- send(h, "POST", "/payments", "x", "Idempotency-Key", "k") }()
	<-started
	for i := range 5 {
		clk.Add(lease * 3 / 4) // after two steps the first lease has lapsed
		want := clk.Now().Add(lease)
	renewal: // wait for a renewal at the new time
		for timeout := time.After(10 * time.Second); ; {
			select {
			case until := <-st.until:
				if !until.Before(want) {
					break renewal
				}
			case <-timeout:
				t.Fatalf("retry %d: no lease renewal to %v within 10s", i+1, want)
			}
		}
		if r := send(h, "POST", "/payments", "x", "Idempotency-Key", "k"); r.code != 409 {
			t.Errorf("retry %d while the slow handler runs, %v after its claim: %d, want 409", i+1, time.Duration(i+1)*lease*3/4, r.code)
		}
	}
	close(finish)
	if r := <-done; r.code != 201 {
		t.Errorf("slow request: %d", r.code)
	}
	if r := send(h, "POST", "/payments", "x", "Idempotency-Key", "k"); r.code != 201 || r.header.Get(idempotency.ReplayedHeader) != "true" {
		t.Errorf("after: %d, want the replay", r.code)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("%d runs, want 1", n)
	}
}

func TestKeyExpiryAndReap(t *testing.T) {
	clk := newClock()
	var p payments
	s := idempotency.NewMemoryStore()
	h := idempotency.Middleware{Store: s, TTL: time.Hour, Now: clk.Now}.Wrap(&p)
	send(h, "POST", "/payments", "x", "Idempotency-Key", "k")
	clk.Add(time.Hour - time.Second)
	if r := send(h, "POST", "/payments", "x", "Idempotency-Key", "k"); r.header.Get(idempotency.ReplayedHeader) != "true" {
		t.Errorf("before expiry: not replayed")
	}
	clk.Add(time.Second)
	if r := send(h, "POST", "/payments", "x", "Idempotency-Key", "k"); r.header.Get(idempotency.ReplayedHeader) != "" || p.charges.Load() != 2 {
		t.Errorf("after expiry: replayed, %d charges", p.charges.Load())
	}
	send(h, "POST", "/payments", "x", "Idempotency-Key", "other")
	clk.Add(2 * time.Hour)
	if n, err := idempotency.Reap(context.Background(), s, clk.Now()); n != 2 || err != nil || idempotency.StoreLen(s) != 0 {
		t.Errorf("Reap: %d, %v; %d keys left", n, err, idempotency.StoreLen(s))
	}
}

// reapSignal is a store that tells the test of each reap: how many keys
// it deleted, once KeyReap has returned.
type reapSignal struct {
	keystore.Store
	reaped chan int
}

func (s *reapSignal) KeyReap(ctx context.Context, now time.Time, limit int) (int, error) {
	n, err := s.Store.KeyReap(ctx, now, limit)
	select {
	case s.reaped <- n:
	case <-ctx.Done(): // Stop: nobody is listening any more
	}
	return n, err
}

// TestReaperStartStop: the reaper reaps once at Start and then every
// Interval, until Stop. The test waits on the reaps themselves (the store
// reports each), never on the time they might take.
func TestReaperStartStop(t *testing.T) {
	clk := newClock()
	mem := idempotency.NewMemoryStore()
	s := &reapSignal{Store: mem, reaped: make(chan int)}
	h := idempotency.Middleware{Store: mem, TTL: time.Hour, Now: clk.Now}.Wrap(&payments{})
	send(h, "POST", "/payments", "x", "Idempotency-Key", "k")
	clk.Add(2 * time.Hour)
	r := &idempotency.Reaper{Store: s, Interval: 5 * time.Millisecond, Now: clk.Now}
	r.Start()
	// waitReap waits for a reap that deletes want keys; reaps that delete
	// none (ticks before the key expired) are skipped.
	waitReap := func(what string, want int) {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case n := <-s.reaped:
				if n == want {
					return
				}
				if n != 0 {
					t.Fatalf("%s: a reap deleted %d keys, want %d", what, n, want)
				}
			case <-timeout:
				t.Fatalf("%s: no reap deleted %d keys within 10s (%d keys left)", what, want, idempotency.StoreLen(mem))
			}
		}
	}
	waitReap("at Start", 1)
	if n := idempotency.StoreLen(mem); n != 0 {
		t.Fatalf("after the first reap: %d keys left", n)
	}
	// A key that expires after Start is reaped by a later tick.
	send(h, "POST", "/payments", "x", "Idempotency-Key", "k2")
	clk.Add(2 * time.Hour)
	waitReap("on a tick", 1)
	r.Stop()
	r.Stop()
	if n := idempotency.StoreLen(mem); n != 0 {
		t.Errorf("%d keys left", n)
	}
	(&idempotency.Reaper{Store: s}).Stop() // never started: no-op
}

type failingStore struct{ keystore.Store }

func (*failingStore) KeyClaim(context.Context, keystore.Claim) (*keystore.Record, bool, error) {
	return nil, false, errors.New("disk on fire: postgres://keys:Zq7cAnAry4secret@db/keys")
}

func TestStoreFailureRefuses(t *testing.T) {
	var p payments
	var logs bytes.Buffer
	h := idempotency.Middleware{Store: &failingStore{idempotency.NewMemoryStore()}, Logger: slog.New(slog.NewTextHandler(&logs, nil))}.Wrap(&p)
	r := send(h, "POST", "/payments", "x", "Idempotency-Key", `"secret-key-0123456789"`)
	if r.code != 503 || r.header.Get("Retry-After") == "" || problemCode(t, r) != "idempotency_store_unavailable" {
		t.Errorf("%d %s", r.code, r.body)
	}
	if p.charges.Load() != 0 {
		t.Error("handler ran without a claim")
	}
	if strings.Contains(logs.String(), "secret-key") || !strings.Contains(logs.String(), "key_hash="+redact.KeyHash(`"secret-key-0123456789"`)) {
		t.Errorf("log shows the key, or not its hash: %s", logs.String())
	}
	if strings.Contains(logs.String(), "Zq7cAnAry4secret") || !strings.Contains(logs.String(), "disk on fire") {
		t.Errorf("log shows the store's password, or not its error: %s", logs.String())
	}
}

func TestClientGoneStillStores(t *testing.T) {
	var p payments
	var hangUp context.CancelFunc
	h := idempotency.Middleware{Store: idempotency.NewMemoryStore()}.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.ServeHTTP(w, r)
		if hangUp != nil {
			hangUp() // the client hangs up while the handler finishes
			<-r.Context().Done()
		}
	}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hangUp = cancel
	req := httptest.NewRequest("POST", "/payments", strings.NewReader("x")).WithContext(ctx)
	req.Header.Set("Idempotency-Key", "k")
	h.ServeHTTP(httptest.NewRecorder(), req)
	hangUp = nil
	if r := send(h, "POST", "/payments", "x", "Idempotency-Key", "k"); r.header.Get(idempotency.ReplayedHeader) != "true" || p.charges.Load() != 1 {
		t.Errorf("retry after the client left: %d, %d charges", r.code, p.charges.Load())
	}
}

func TestStoredStatusesAndSniffing(t *testing.T) {
	s := idempotency.NewMemoryStore()
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
	}{
		{"500 is replayed", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "boom", 500) }},
		{"nothing written", func(w http.ResponseWriter, r *http.Request) {}},
		{"sniffed", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "<html><body>hi</body></html>") }},
		{"204", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) }},
		{"early hints", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Link", "</a.css>; rel=preload")
			w.WriteHeader(103)
			w.WriteHeader(202)
			io.WriteString(w, "accepted")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var runs atomic.Int64
			h := idempotency.Middleware{Store: s}.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				runs.Add(1)
				tc.handler(w, r)
			}))
			first := send(h, "POST", "/"+strings.ReplaceAll(tc.name, " ", "-"), "", "Idempotency-Key", "k")
			again := send(h, "POST", "/"+strings.ReplaceAll(tc.name, " ", "-"), "", "Idempotency-Key", "k")
			if first.code == 103 {
				first.code = 202 // httptest.ResponseRecorder keeps the informational status
			}
			if runs.Load() != 1 || again.code != first.code || again.body != first.body ||
				again.header.Get("Content-Type") != first.header.Get("Content-Type") {
				t.Errorf("first %d %q %v; replay %d %q %v; %d runs", first.code, first.body, first.header,
					again.code, again.body, again.header, runs.Load())
			}
		})
	}
}

func TestHijackReleases(t *testing.T) {
	s := idempotency.NewMemoryStore()
	h := idempotency.Middleware{Store: s}.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
		c.Close()
	}))
	// The key is released when the middleware's ServeHTTP returns, which
	// may be after the client read the hijacked connection's response:
	// served says it returned.
	served := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(served)
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	req, _ := http.NewRequest("POST", srv.URL, strings.NewReader("x"))
	req.Header.Set("Idempotency-Key", "k")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	select {
	case <-served:
	case <-time.After(10 * time.Second):
		t.Fatal("the middleware did not return within 10s of the hijacked response")
	}
	if idempotency.StoreLen(s) != 0 {
		t.Error("a hijacked response's key was not released")
	}
}

func TestValidate(t *testing.T) {
	s := idempotency.NewMemoryStore()
	for name, m := range map[string]idempotency.Middleware{
		"Store":           {},
		"MaxResponseBody": {Store: s, MaxResponseBody: keystore.MaxStoredBody + 1},
		"Lease":           {Store: s, Lease: -1},
		"TTL":             {Store: s, TTL: time.Second, Lease: time.Minute},
		"MaxRequestBody":  {Store: s, MaxRequestBody: -1},
		"Methods":         {Store: s, Methods: []string{""}},
	} {
		err := m.Validate()
		if err == nil || !strings.Contains(err.Error(), "Middleware."+name) || !errors.Is(err, idempotency.ErrInvalid) {
			t.Errorf("%s: %v (want it to name Middleware.%[1]s and match ErrInvalid)", name, err)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("Wrap of an invalid Middleware did not panic")
		}
	}()
	idempotency.Middleware{}.Wrap(http.NotFoundHandler())
}

// TestStoreHeadersOff: an empty StoreHeaders is the default list, and
// StoreHeadersOff replays no header (heed's one way to say off).
func TestStoreHeadersOff(t *testing.T) {
	for _, tc := range []struct {
		name     string
		headers  []string
		location bool
	}{{"nil", nil, true}, {"empty", []string{}, true}, {"off", idempotency.StoreHeadersOff, false}} {
		var p payments
		h := idempotency.Middleware{Store: idempotency.NewMemoryStore(), StoreHeaders: tc.headers}.Wrap(&p)
		send(h, "POST", "/payments", "amount=10", "Idempotency-Key", `"k1"`)
		again := send(h, "POST", "/payments", "amount=10", "Idempotency-Key", `"k1"`)
		if got := again.header.Get("Location") != ""; got != tc.location || p.charges.Load() != 1 {
			t.Errorf("%s: replayed Location %v (want %v), %d charges", tc.name, got, tc.location, p.charges.Load())
		}
	}
}
