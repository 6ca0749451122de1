package retryhttp_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/breaker"
	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/deadline"
	"github.com/heed-go/heed/internal/leakcheck"
	"github.com/heed-go/heed/internal/redact"
	"github.com/heed-go/heed/internal/wire"
	"github.com/heed-go/heed/retry"
	"github.com/heed-go/heed/retryhttp"
)

func TestMain(m *testing.M) {
	leakcheck.Main(m)
}

// fast is a policy with short, unjittered delays for loopback tests.
func fast(attempts int) retry.Policy {
	return retry.Policy{
		Attempts: attempts,
		Backoff:  backoff.Schedule{Kind: backoff.Constant, Base: time.Millisecond, Jitter: backoff.NoJitter},
	}
}

// newTransport returns a Transport with policy p and no retry budget,
// whose idle connections are closed when the test ends.
func newTransport(t *testing.T, p retry.Policy) *retryhttp.Transport {
	t.Helper()
	tr := &retryhttp.Transport{Policy: p, Budget: budget.Config{Ratio: -1}}
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

// counting is a test server that counts requests and connections.
type counting struct {
	*httptest.Server
	requests atomic.Int64
	conns    atomic.Int64
}

func newCounting(t *testing.T, h func(w http.ResponseWriter, r *http.Request, n int64)) *counting {
	t.Helper()
	c := &counting{}
	c.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		h(w, r, c.requests.Add(1))
	}))
	c.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			c.conns.Add(1)
		}
	}
	c.Start()
	t.Cleanup(c.Close)
	return c
}

func do(t *testing.T, rt http.RoundTripper, ctx context.Context, method, url string, body io.Reader, hdr ...string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return rt.RoundTrip(req)
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("reading body: %v", err)
	}
	return string(b)
}

func TestSuccessSendsWireHeadersAndLeavesRequestAlone(t *testing.T) {
	var got http.Header
	srv := newCounting(t, func(w http.ResponseWriter, r *http.Request, n int64) {
		got = r.Header.Clone()
		io.WriteString(w, "hello")
	})
	tr := newTransport(t, fast(3))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
	req.Header.Set("X-Mine", "1")
	before := req.Header.Clone()
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, resp); body != "hello" {
		t.Errorf("body %q", body)
	}
	if got.Get("Retry-Attempt") != "1" || got.Get("X-Mine") != "1" {
		t.Errorf("server saw %v", got)
	}
	d, err := wire.ParseHeader(got.Get(wire.Header))
	if err != nil || d <= 0 || d > 2*time.Second-retryhttp.DefaultHeaderMargin {
		t.Errorf("Timeout-Remaining %q: %v, %v", got.Get(wire.Header), d, err)
	}
	if fmt.Sprint(req.Header) != fmt.Sprint(before) {
		t.Errorf("caller's header changed: %v, was %v", req.Header, before)
	}
}

func TestRetryableStatusThenSuccess(t *testing.T) {
	var attempts []string
	var mu sync.Mutex
	srv := newCounting(t, func(w http.ResponseWriter, r *http.Request, n int64) {
		mu.Lock()
		attempts = append(attempts, r.Header.Get("Retry-Attempt"))
		mu.Unlock()
		if n < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, "busy")
			return
		}
		io.WriteString(w, "ok")
	})
	tr := newTransport(t, fast(3))
	resp, err := do(t, tr, context.Background(), "GET", srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || readAll(t, resp) != "ok" {
		t.Errorf("status %d", resp.StatusCode)
	}
	if fmt.Sprint(attempts) != "[1 2 3]" {
		t.Errorf("Retry-Attempt values %v", attempts)
	}
	if c := srv.conns.Load(); c != 1 {
		t.Errorf("%d connections, want 1 (keep-alive across retries)", c)
	}
}

func TestGiveUpReturnsLastResponse(t *testing.T) {
	srv := newCounting(t, func(w http.ResponseWriter, r *http.Request, n int64) {
		w.WriteHeader(http.StatusBadGateway)
		fmt.Fprintf(w, "attempt %d", n)
	})
	tr := newTransport(t, fast(3))
	resp, err := do(t, tr, context.Background(), "GET", srv.URL, nil)
	if err != nil {
		t.Fatalf("error %v, want the last response", err)
	}
	if resp.StatusCode != 502 || readAll(t, resp) != "attempt 3" {
		t.Errorf("status %d", resp.StatusCode)
	}
}

func TestPermanentStatusNotRetried(t *testing.T) {
	srv := newCounting(t, func(w http.ResponseWriter, r *http.Request, n int64) {
		http.Error(w, "no such thing", http.StatusNotFound)
	})
	tr := newTransport(t, fast(3))
	resp, err := do(t, tr, context.Background(), "GET", srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	if resp.StatusCode != 404 || srv.requests.Load() != 1 {
		t.Errorf("status %d after %d requests", resp.StatusCode, srv.requests.Load())
	}
}

func TestRetryStatusConfigurable(t *testing.T) {
	srv := newCounting(t, func(w http.ResponseWriter, r *http.Request, n int64) {
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	for _, tc := range []struct {
		name   string
		status []int
		want   int64
	}{
		{"nil: the default", nil, 3},
		{"empty: the default", []int{}, 3},
		{"RetryStatusOff", retryhttp.RetryStatusOff, 1},
		{"a negative entry", []int{503, -1}, 1},
		{"a list without 503", []int{500}, 1},
		{"a list with 503", []int{503}, 3},
	} {
		srv.requests.Store(0)
		tr := newTransport(t, fast(3))
		tr.RetryStatus = tc.status
		resp, err := do(t, tr, context.Background(), "GET", srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		if n := srv.requests.Load(); n != tc.want {
			t.Errorf("%s: %d requests, want %d", tc.name, n, tc.want)
		}
	}
}

// observed collects the decisions of a transport.
type observed struct {
	mu sync.Mutex
	d  []retry.Decision
}

func (o *observed) observe(_ context.Context, e retry.Event) {
	o.mu.Lock()
	o.d = append(o.d, e.Decision)
	o.mu.Unlock()
}

func (o *observed) last() retry.Decision {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.d) == 0 {
		return retry.Decision{}
	}
	return o.d[len(o.d)-1]
}

func TestRetryAfter(t *testing.T) {
	future := func(d time.Duration) func() string {
		return func() string { return time.Now().Add(d).UTC().Format(http.TimeFormat) }
	}
	rfc850 := func() string { return time.Now().Add(3 * time.Second).UTC().Format(time.RFC850) }
	asctime := func() string { return time.Now().Add(3 * time.Second).UTC().Format(time.ANSIC) }
	tests := []struct {
		name   string
		value  func() string
		giveUp bool // the wait (2 s or more) does not fit in the 1.5 s deadline
	}{
		{"seconds", func() string { return "2" }, true},
		{"IMF-fixdate", future(3 * time.Second), true},
		{"RFC 850", rfc850, true},
		{"asctime", asctime, true},
		{"huge", func() string { return "99999999999999999999" }, true},
		{"none", func() string { return "" }, false},
		{"garbage", func() string { return "soon" }, false},
		{"negative", func() string { return "-5" }, false},
		{"fraction", func() string { return "1.5" }, false},
		{"zero", func() string { return "0" }, false},
		{"past date", future(-time.Hour), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newCounting(t, func(w http.ResponseWriter, r *http.Request, n int64) {
				if v := tt.value(); v != "" {
					w.Header().Set("Retry-After", v)
				}
				w.WriteHeader(http.StatusServiceUnavailable)
			})
			tr := newTransport(t, fast(3))
			// 1.5 s: shorter than every wait of the giveUp rows, and
			// room for three attempts on a busy machine (at 300 ms, under
			// -race at load 29, a first attempt took the whole deadline,
			// and three attempts did not fit).
			ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
			defer cancel()
			start := time.Now()
			resp, err := do(t, tr, ctx, "GET", srv.URL, nil)
			// Whether it returned before the deadline, read at once: a
			// transport that slept into the deadline returns after it.
			expired := ctx.Err() != nil
			elapsed := time.Since(start)
			if !tt.giveUp {
				if err != nil {
					t.Fatalf("error %v, want the last 503", err)
				}
				readAll(t, resp)
				if n := srv.requests.Load(); n != 3 {
					t.Errorf("%d requests, want 3 (value ignored, backoff used)", n)
				}
				return
			}
			if err == nil {
				readAll(t, resp)
				t.Fatalf("got a %d response, want an error carrying the hint", resp.StatusCode)
			}
			wait, ok := retryhttp.RetryAfter(err)
			if !ok || wait < time.Second {
				t.Errorf("RetryAfter(%v) = %v, %v", err, wait, ok)
			}
			// A wait longer than MaxPushback (30 s) gives up for that
			// first; a shorter one for the deadline.
			want := retry.ReasonDeadline
			if wait > retry.DefaultMaxPushback {
				want = retry.ReasonPushbackTooLong
			}
			var ex *retry.ExhaustedError
			if !errors.As(err, &ex) || ex.Reason != want {
				t.Errorf("error %v, want ExhaustedError with reason %v", err, want)
			}
			var se *retryhttp.StatusError
			if !errors.As(err, &se) || se.StatusCode != 503 {
				t.Errorf("error %v does not carry the status", err)
			}
			if n := srv.requests.Load(); n != 1 {
				t.Errorf("%d requests, want 1", n)
			}
			if expired {
				t.Errorf("gave up after %v, at the 1.5s deadline: slept into it", elapsed)
			}
		})
	}
}

// A Retry-After longer than MaxPushback is not cut short: the request
// gives up at once with the server's wait, which RetryAfter returns, rather
// than come back before the server asked.
func TestRetryAfterAboveCapGivesUp(t *testing.T) {
	var times []time.Time
	var mu sync.Mutex
	srv := newCounting(t, func(w http.ResponseWriter, r *http.Request, n int64) {
		mu.Lock()
		times = append(times, time.Now())
		mu.Unlock()
		w.Header().Set("Retry-After", "120")
		w.WriteHeader(http.StatusTooManyRequests)
	})
	p := fast(2)
	p.MaxPushback = 80 * time.Millisecond
	tr := newTransport(t, p)
	_, err := do(t, tr, context.Background(), "GET", srv.URL+"/long", nil)
	var ex *retry.ExhaustedError
	if !errors.As(err, &ex) || ex.Reason != retry.ReasonPushbackTooLong {
		t.Fatalf("error %v, want a give-up for a wait above MaxPushback", err)
	}
	if wait, ok := retryhttp.RetryAfter(err); !ok || wait != 120*time.Second {
		t.Errorf("RetryAfter(err) = %v, %v; want 2m0s, true", wait, ok)
	}
	if len(times) != 1 {
		t.Fatalf("%d requests, want 1: the server asked for 2 minutes", len(times))
	}
}

func TestDNSFailureNotRetried(t *testing.T) {
	tr := newTransport(t, fast(3))
	var o observed
	tr.Policy.Observe = o.observe
	_, err := do(t, tr, context.Background(), "POST", "http://heed-test.invalid/", strings.NewReader("x"))
	var dns *net.DNSError
	if !errors.As(err, &dns) {
		t.Fatalf("error %v, want a DNS error", err)
	}
	if d := o.last(); d.Attempt != 1 || d.Reason != retry.ReasonPermanent {
		t.Errorf("last decision %v (%v), want attempt 1, permanent", d, d.Reason)
	}
}

func TestConnectionRefusedRetriedEvenForPOST(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	tr := newTransport(t, fast(3))
	_, err = do(t, tr, context.Background(), "POST", "http://"+addr+"/", strings.NewReader("payload"))
	var ex *retry.ExhaustedError
	if !errors.As(err, &ex) || ex.Attempts != 3 || ex.Reason != retry.ReasonAttempts {
		t.Fatalf("error %v, want 3 attempts exhausted (never sent, so safe)", err)
	}
	if !errors.Is(err, retry.ErrExhausted) {
		t.Error("not ErrExhausted")
	}
}

func TestUntrustedCertificateNeverRetried(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { n.Add(1) }))
	srv.Config.ErrorLog = discardLog()
	srv.StartTLS()
	defer srv.Close()
	tr := newTransport(t, fast(3))
	var o observed
	tr.Policy.Observe = o.observe
	_, err := do(t, tr, context.Background(), "GET", srv.URL, nil)
	var cv *tls.CertificateVerificationError
	if !errors.As(err, &cv) {
		t.Fatalf("error %v, want a certificate verification error", err)
	}
	if d := o.last(); d.Attempt != 1 || d.Reason != retry.ReasonPermanent || n.Load() != 0 {
		t.Errorf("decision %v after %d requests", d, n.Load())
	}
}

// rawServer accepts TCP connections and hands each to serve.
func rawServer(t *testing.T, serve func(c net.Conn, n int64)) (addr string, conns *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns = new(atomic.Int64)
	var wg sync.WaitGroup
	done := make(chan struct{})
	var mu sync.Mutex
	var open []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			open = append(open, c)
			mu.Unlock()
			n := conns.Add(1)
			wg.Add(1)
			go func() {
				defer wg.Done()
				serve(c, n)
			}()
		}
	}()
	t.Cleanup(func() {
		close(done)
		ln.Close()
		mu.Lock()
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String(), conns
}

func TestAcceptedButNeverAnswered(t *testing.T) {
	addr, conns := rawServer(t, func(c net.Conn, _ int64) {
		io.Copy(io.Discard, c) // read forever, answer nothing
	})
	p := fast(2)
	p.AttemptTimeout = 50 * time.Millisecond
	tr := newTransport(t, p)
	// The server never answers and the call has no deadline: only the
	// attempt timeout can end each attempt, so the two decisions below
	// prove that it did, with no bound on how long the machine took.
	_, err := do(t, tr, context.Background(), "GET", "http://"+addr+"/", nil)
	var ex *retry.ExhaustedError
	if !errors.As(err, &ex) || ex.Attempts != 2 {
		t.Fatalf("error %v, want 2 attempts", err)
	}
	if ex.Trace[0].Reason != retry.ReasonTimeout {
		t.Errorf("first decision %v, want a retry for the attempt timeout", ex.Trace[0])
	}
	if ex.Trace[1].Outcome != retry.OutcomeTimeout {
		t.Errorf("last decision %v, want it to follow an attempt timeout", ex.Trace[1])
	}
	// One connection an attempt at most (a timed-out one is not reused).
	// Not exactly two: on a busy machine an attempt's 50 ms can end
	// before its dial starts, and then it makes none.
	if n := conns.Load(); n > 2 {
		t.Errorf("%d connections for 2 attempts", n)
	}
}

func TestSlowHeadersThenFast(t *testing.T) {
	srv := newCounting(t, func(w http.ResponseWriter, r *http.Request, n int64) {
		if n == 1 {
			select {
			case <-r.Context().Done():
			case <-time.After(time.Second):
			}
			return
		}
		io.WriteString(w, "fast")
	})
	p := fast(3)
	p.AttemptTimeout = 60 * time.Millisecond
	tr := newTransport(t, p)
	resp, err := do(t, tr, context.Background(), "GET", srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, resp); body != "fast" || srv.requests.Load() != 2 {
		t.Errorf("body %q after %d requests", body, srv.requests.Load())
	}
}

func TestFinalBodyReadableAfterRoundTrip(t *testing.T) {
	srv := newCounting(t, func(w http.ResponseWriter, r *http.Request, n int64) {
		io.WriteString(w, "head-")
		w.(http.Flusher).Flush()
		time.Sleep(30 * time.Millisecond)
		io.WriteString(w, "tail")
	})
	p := fast(3)
	p.AttemptTimeout = 2 * time.Second
	tr := newTransport(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp, err := do(t, tr, ctx, "GET", srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, resp); body != "head-tail" {
		t.Errorf("body %q", body)
	}
}

func TestSlowBodyCutByAttemptTimeout(t *testing.T) {
	srv := newCounting(t, func(w http.ResponseWriter, r *http.Request, n int64) {
		io.WriteString(w, "head-")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-time.After(time.Second):
		}
	})
	p := fast(3)
	p.AttemptTimeout = 80 * time.Millisecond
	tr := newTransport(t, p)
	resp, err := do(t, tr, context.Background(), "GET", srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("read error %v, want the attempt's deadline", err)
	}
}

func TestTruncatedBody(t *testing.T) {
	addr, _ := rawServer(t, func(c net.Conn, _ int64) {
		readRequest(c)
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b")
		c.Close()
	})
	tr := newTransport(t, fast(3))
	resp, err := do(t, tr, context.Background(), "GET", "http://"+addr+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "only ten b" || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("read %q, %v; want the 10 bytes and ErrUnexpectedEOF", b, err)
	}
}

// readRequest reads one HTTP request (headers and a Content-Length body)
// from c and returns its body.
func readRequest(c net.Conn) string {
	var buf []byte
	tmp := make([]byte, 4096)
	for {
		i := bytes.Index(buf, []byte("\r\n\r\n"))
		if i >= 0 {
			head := strings.ToLower(string(buf[:i]))
			n := 0
			if j := strings.Index(head, "content-length: "); j >= 0 {
				rest := head[j+len("content-length: "):]
				if k := strings.Index(rest, "\r\n"); k >= 0 {
					rest = rest[:k]
				}
				n, _ = strconv.Atoi(rest)
			}
			if len(buf)-(i+4) >= n {
				return string(buf[i+4 : i+4+n])
			}
		}
		m, err := c.Read(tmp)
		buf = append(buf, tmp[:m]...)
		if err != nil {
			return ""
		}
	}
}

// resetAfterReceiving is a server that reads a whole request, counts it,
// and resets the connection without answering: the client cannot know
// whether the request was processed.
func resetAfterReceiving(t *testing.T) (addr string, received *atomic.Int64) {
	received = new(atomic.Int64)
	addr, _ = rawServer(t, func(c net.Conn, _ int64) {
		if readRequest(c) == "pay 10" {
			received.Add(1)
		}
		c.(*net.TCPConn).SetLinger(0)
		c.Close()
	})
	return addr, received
}

// A POST without a key that may have reached the server is sent once,
// whatever ended it: a reset, a close without an answer, cut headers (all
// transient by retry.IsTransient, and all ambiguous).
func TestAmbiguousPOSTNotRetriedWithoutKey(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(c net.Conn)
	}{
		{"reset", func(c net.Conn) { c.(*net.TCPConn).SetLinger(0) }},
		{"closed without answering", func(net.Conn) {}},
		{"headers cut", func(c net.Conn) { io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: te") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			received := new(atomic.Int64)
			addr, _ := rawServer(t, func(c net.Conn, _ int64) {
				if readRequest(c) == "pay 10" {
					received.Add(1)
				}
				tc.end(c)
				c.Close()
			})
			tr := newTransport(t, fast(3))
			_, err := do(t, tr, context.Background(), "POST", "http://"+addr+"/pay", strings.NewReader("pay 10"))
			var ex *retry.ExhaustedError
			if !errors.As(err, &ex) || ex.Reason != retry.ReasonNotRepeatable || ex.Attempts != 1 {
				t.Fatalf("error %v, want 1 attempt, not safe to repeat", err)
			}
			if n := received.Load(); n != 1 {
				t.Errorf("server received %d requests, want 1", n)
			}
			if retry.IsTransient(err) {
				t.Errorf("retry.IsTransient(%v) = true: a job queue running this call would send it again", err)
			}
		})
	}
}

func TestAmbiguousPOSTRetriedWithKey(t *testing.T) {
	for _, generate := range []bool{false, true} {
		t.Run(fmt.Sprintf("generated=%v", generate), func(t *testing.T) {
			addr, received := resetAfterReceiving(t)
			tr := newTransport(t, fast(3))
			tr.GenerateKey = generate
			var hdr []string
			if !generate {
				hdr = []string{"Idempotency-Key", `"k-123"`}
			}
			// A body without GetBody: buffered so that it can be sent again.
			body := io.MultiReader(strings.NewReader("pay "), strings.NewReader("10"))
			_, err := do(t, tr, context.Background(), "POST", "http://"+addr+"/pay", body, hdr...)
			var ex *retry.ExhaustedError
			if !errors.As(err, &ex) || ex.Reason != retry.ReasonAttempts || ex.Attempts != 3 {
				t.Fatalf("error %v, want 3 attempts exhausted", err)
			}
			if n := received.Load(); n != 3 {
				t.Errorf("server received %d complete requests, want 3", n)
			}
		})
	}
}

func TestKeyedRetriesCanBeTurnedOff(t *testing.T) {
	addr, received := resetAfterReceiving(t)
	tr := newTransport(t, fast(3))
	tr.KeyedRetriesOff = true
	_, err := do(t, tr, context.Background(), "POST", "http://"+addr+"/pay", strings.NewReader("pay 10"), "Idempotency-Key", `"k"`)
	if !errors.Is(err, retry.ErrExhausted) || received.Load() != 1 {
		t.Errorf("error %v after %d requests, want 1", err, received.Load())
	}
}

func TestBodyTooLargeToBufferIsSentOnce(t *testing.T) {
	var bodies []string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	tr := newTransport(t, fast(3))
	tr.MaxBufferedBody = 4
	body := io.MultiReader(strings.NewReader("0123456789"))
	resp, err := do(t, tr, context.Background(), "PUT", srv.URL, body)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	if fmt.Sprint(bodies) != "[0123456789]" {
		t.Errorf("server got %q, want the whole body once", bodies)
	}
}

// closeRecorder is a request body that records being closed.
type closeRecorder struct {
	io.Reader
	closed atomic.Bool
}

func (c *closeRecorder) Close() error { c.closed.Store(true); return nil }

func TestRequestBodyClosed(t *testing.T) {
	srv := newCounting(t, func(w http.ResponseWriter, r *http.Request, n int64) {})
	for _, name := range []string{"sent", "canceled"} {
		t.Run(name, func(t *testing.T) {
			tr := newTransport(t, fast(3))
			body := &closeRecorder{Reader: strings.NewReader("x")}
			ctx, cancel := context.WithCancel(context.Background())
			if name == "canceled" {
				cancel()
			}
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL, body)
			resp, err := tr.RoundTrip(req)
			if err == nil {
				readAll(t, resp)
			}
			if !body.closed.Load() {
				t.Error("request body not closed")
			}
		})
	}
}

func TestUpstreamOwnsMakesOneAttempt(t *testing.T) {
	srv := newCounting(t, func(w http.ResponseWriter, r *http.Request, n int64) {
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	tr := newTransport(t, fast(3))
	resp, err := do(t, tr, deadline.WithUpstreamOwner(context.Background()), "GET", srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	if n := srv.requests.Load(); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

// TestDeadlineRunsOut runs in a synctest bubble, against a base transport
// that answers 503 at once: its figures are exact, where over loopback a
// busy machine made the attempts themselves take the deadline.
func TestDeadlineRunsOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var requests atomic.Int64
		base := roundTripper(func(r *http.Request) (*http.Response, error) {
			requests.Add(1)
			return &http.Response{StatusCode: http.StatusServiceUnavailable, Status: "503 Service Unavailable",
				Header: http.Header{}, Body: io.NopCloser(strings.NewReader("")), Request: r}, nil
		})
		// Attempts at 0, 100 and 200ms; a fourth would start at 300ms, at
		// the deadline: the transport gives up at 200ms instead of
		// sleeping into the deadline.
		p := retry.Policy{Attempts: 10, Backoff: backoff.Schedule{Kind: backoff.Constant, Base: 100 * time.Millisecond, Jitter: backoff.NoJitter}}
		tr := &retryhttp.Transport{Policy: p, Base: base, Budget: budget.Config{Ratio: -1}}
		var o observed
		tr.Policy.Observe = o.observe
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		resp, err := do(t, tr, ctx, "GET", "http://service.test/", nil)
		elapsed := time.Since(start)
		if err != nil {
			t.Fatalf("error %v, want the last 503", err)
		}
		readAll(t, resp)
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("status %d", resp.StatusCode)
		}
		if n := requests.Load(); n != 3 {
			t.Errorf("%d requests, want 3", n)
		}
		if d := o.last(); d.Action != retry.GiveUp || d.Reason != retry.ReasonDeadline || d.Delay != 100*time.Millisecond {
			t.Errorf("last decision %v (%v)", d, d.Reason)
		}
		if elapsed != 200*time.Millisecond {
			t.Errorf("returned after %v, want 200ms: the third attempt's answer, not a sleep into the deadline", elapsed)
		}
	})
}

func TestCallerCancelDuringWait(t *testing.T) {
	srv := newCounting(t, func(w http.ResponseWriter, r *http.Request, n int64) {
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	p := retry.Policy{Attempts: 3, Backoff: backoff.Schedule{Kind: backoff.Constant, Base: time.Second, Jitter: backoff.NoJitter}}
	tr := newTransport(t, p)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(30*time.Millisecond, cancel)
	_, err := do(t, tr, ctx, "GET", srv.URL, nil)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
}

func TestMaxResponseBody(t *testing.T) {
	srv := newCounting(t, func(w http.ResponseWriter, r *http.Request, n int64) {
		if r.URL.Path == "/chunked" {
			io.WriteString(w, "0123")
			w.(http.Flusher).Flush()
			io.WriteString(w, "456789")
			return
		}
		io.WriteString(w, "0123456789")
	})
	tr := newTransport(t, fast(3))
	tr.MaxResponseBody = 8
	_, err := do(t, tr, context.Background(), "GET", srv.URL+"/sized", nil)
	if !errors.Is(err, retryhttp.ErrBodyTooLarge) {
		t.Errorf("Content-Length too large: error %v", err)
	}
	resp, err := do(t, tr, context.Background(), "GET", srv.URL+"/chunked", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !errors.Is(err, retryhttp.ErrBodyTooLarge) || len(b) != 8 {
		t.Errorf("chunked: read %q, %v", b, err)
	}
	tr.MaxResponseBody = 10
	resp, err = do(t, tr, context.Background(), "GET", srv.URL+"/chunked", nil)
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, resp); body != "0123456789" {
		t.Errorf("exactly at the cap: %q", body)
	}
}

func TestBudgetPerHostShared(t *testing.T) {
	srv := newCounting(t, func(w http.ResponseWriter, r *http.Request, n int64) {
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	// A budget with no burst, no floor and 10% of requests: the first
	// requests cannot retry at all.
	tr := &retryhttp.Transport{Policy: fast(3), Budget: budget.Config{MinPerSecond: -1, Burst: -1}, Budgets: &budget.Registry{}}
	defer tr.CloseIdleConnections()
	var o observed
	tr.Policy.Observe = o.observe
	for range 5 {
		resp, err := do(t, tr, context.Background(), "GET", srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
	}
	if n := srv.requests.Load(); n != 5 {
		t.Errorf("%d requests for 5 calls: the budget allowed retries", n)
	}
	if d := o.last(); d.Reason != retry.ReasonBudget {
		t.Errorf("last decision %v", d.Reason)
	}
}

func TestBreakerPerHost(t *testing.T) {
	srv := newCounting(t, func(w http.ResponseWriter, r *http.Request, n int64) {
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	tr := newTransport(t, fast(1))
	tr.Breaker = &breaker.Config{MinCalls: 2, Cooldown: time.Minute}
	for range 2 {
		resp, err := do(t, tr, context.Background(), "GET", srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
	}
	_, err := do(t, tr, context.Background(), "GET", srv.URL, nil)
	if !errors.Is(err, breaker.ErrOpen) {
		t.Errorf("error %v, want the breaker open", err)
	}
	if n := srv.requests.Load(); n != 2 {
		t.Errorf("%d requests", n)
	}
}

func TestLogRedactsSecrets(t *testing.T) {
	srv := newCounting(t, func(w http.ResponseWriter, r *http.Request, n int64) {
		if n == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	var buf bytes.Buffer
	tr := newTransport(t, fast(3))
	tr.Logger = slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	u := strings.Replace(srv.URL, "http://", "http://alice:hunter2@", 1) + "/x?access_token=s3cr3t&page=2"
	ctx := retryhttp.WithOperation(context.Background(), "fetch-page")
	resp, err := do(t, tr, ctx, "POST", u, strings.NewReader("b"),
		"Authorization", "Bearer abcdef", "Cookie", "sid=zzz", "Idempotency-Key", "key-42")
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	out := buf.String()
	for _, secret := range []string{"hunter2", "alice", "s3cr3t", "abcdef", "zzz", "key-42"} {
		if strings.Contains(out, secret) {
			t.Errorf("log contains %q:\n%s", secret, out)
		}
	}
	for _, want := range []string{`"op":"fetch-page"`, `"attempt":1`, `"attempt":2`, `"status":503`, `"class":"retryable status"`,
		`"decision":"retry"`, `"decision":"done"`, `page=2`, `"progress":"response started"`, redact.KeyHash("key-42")} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s:\n%s", want, out)
		}
	}
	if lines := strings.Count(out, "\n"); lines != 2 {
		t.Errorf("%d records, want one per attempt", lines)
	}
}

func TestConnectionReuse(t *testing.T) {
	// Every call gets a 503 then a 200: retries over keep-alive must not
	// open a connection per attempt.
	srv := newCounting(t, func(w http.ResponseWriter, r *http.Request, n int64) {
		if n%2 == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, strings.Repeat("x", 1000)) // drained, not left in the pipe
			return
		}
		io.WriteString(w, "ok")
	})
	tr := newTransport(t, fast(3))
	const calls = 20
	for range calls {
		resp, err := do(t, tr, context.Background(), "GET", srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
	}
	if n := srv.requests.Load(); n != 2*calls {
		t.Errorf("%d requests", n)
	}
	if c := srv.conns.Load(); c != 1 {
		t.Errorf("%d TCP connections for %d sequential calls with retries, want 1", c, calls)
	}
}

func TestConnectionReuseAfterFaults(t *testing.T) {
	// A fault that kills the connection costs one connection, no more.
	srv := newCounting(t, func(w http.ResponseWriter, r *http.Request, n int64) {
		if n%2 == 1 {
			c, _, _ := w.(http.Hijacker).Hijack()
			c.Close()
			return
		}
		io.WriteString(w, "ok")
	})
	tr := newTransport(t, fast(3))
	const calls = 10
	for range calls {
		resp, err := do(t, tr, context.Background(), "GET", srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
	}
	if c := srv.conns.Load(); c > calls+calls {
		t.Errorf("%d connections for %d calls and %d killed", c, calls, calls)
	}
}

func TestNewClient(t *testing.T) {
	srv := newCounting(t, func(w http.ResponseWriter, r *http.Request, n int64) {
		if n == 1 {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		io.WriteString(w, "ok")
	})
	c := retryhttp.NewClient(fast(2))
	defer c.CloseIdleConnections()
	resp, err := c.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, resp); body != "ok" {
		t.Errorf("body %q", body)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"0", 0, true},
		{"120", 2 * time.Minute, true},
		{"007", 7 * time.Second, true},
		{"21600", 6 * time.Hour, true},
		{"21601", retryhttp.MaxRetryAfter, true},
		{"99999999999999999999999", retryhttp.MaxRetryAfter, true},
		{"Sun, 29 Nov 2026 12:00:30 GMT", 30 * time.Second, true},
		{"Sunday, 29-Nov-26 12:00:30 GMT", 30 * time.Second, true},
		{"Sun Nov 29 12:00:30 2026", 30 * time.Second, true},
		{"Sun, 29 Nov 2026 11:00:00 GMT", 0, true},
		{"Mon, 29 Nov 2027 12:00:00 GMT", retryhttp.MaxRetryAfter, true},
		{"", 0, false},
		{"-1", 0, false},
		{"+1", 0, false},
		{"1.5", 0, false},
		{"1 ", 0, false},
		{" 1", 0, false},
		{"1s", 0, false},
		{"soon", 0, false},
		{"2026-11-29T12:00:30Z", 0, false},
	}
	for _, tt := range tests {
		got, ok := retryhttp.ParseRetryAfter(tt.in, now)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"0", "120", "-1", "1.5", "Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT",
		"Sun Nov  6 08:49:37 1994", "99999999999999999999", "", "soon"} {
		f.Add(s)
	}
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		d, ok := retryhttp.ParseRetryAfter(s, now)
		if d < 0 || d > retryhttp.MaxRetryAfter {
			t.Fatalf("ParseRetryAfter(%q) = %v out of range", s, d)
		}
		if !ok && d != 0 {
			t.Fatalf("ParseRetryAfter(%q) = %v, false", s, d)
		}
		if ok && s != "" && s[0] >= '0' && s[0] <= '9' {
			for i := 0; i < len(s); i++ {
				if s[i] < '0' || s[i] > '9' {
					return // a date-like value starting with a digit
				}
			}
			n, err := strconv.ParseInt(s, 10, 64)
			if err == nil && n <= int64(retryhttp.MaxRetryAfter/time.Second) && d != time.Duration(n)*time.Second {
				t.Fatalf("ParseRetryAfter(%q) = %v", s, d)
			}
		}
	})
}

func discardLog() *log.Logger { return log.New(io.Discard, "", 0) }

func TestTimeoutRemainingIsTheAttemptsDeadline(t *testing.T) {
	var got []string
	var mu sync.Mutex
	srv := newCounting(t, func(w http.ResponseWriter, r *http.Request, n int64) {
		mu.Lock()
		got = append(got, r.Header.Get(wire.Header))
		mu.Unlock()
	})
	p := fast(3)
	p.AttemptTimeout = 500 * time.Millisecond
	tr := newTransport(t, p)
	// No caller deadline: the per-attempt timeout alone is sent.
	resp, err := do(t, tr, context.Background(), "GET", srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	// A caller deadline longer than the attempt timeout: the attempt's.
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	resp, err = do(t, tr, ctx, "GET", srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	for _, v := range got {
		d, err := wire.ParseHeader(v)
		if err != nil || d > 500*time.Millisecond-retryhttp.DefaultHeaderMargin || d < 400*time.Millisecond {
			t.Errorf("Timeout-Remaining %q (%v), want the attempt's 500ms minus the margin", v, err)
		}
	}
	// Neither: no header.
	got = nil
	tr2 := newTransport(t, fast(3))
	resp, err = do(t, tr2, context.Background(), "GET", srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	if len(got) != 1 || got[0] != "" {
		t.Errorf("without any deadline, Timeout-Remaining %q", got)
	}
}

func TestRequestTimeoutStatusRetriedForPOST(t *testing.T) {
	srv := newCounting(t, func(w http.ResponseWriter, r *http.Request, n int64) {
		switch n {
		case 1:
			w.WriteHeader(http.StatusRequestTimeout) // the server never read it all
		case 2:
			w.WriteHeader(http.StatusServiceUnavailable) // maybe processed: not repeated
		}
	})
	tr := newTransport(t, fast(3))
	var o observed
	tr.Policy.Observe = o.observe
	resp, err := do(t, tr, context.Background(), "POST", srv.URL, strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	if resp.StatusCode != 503 || srv.requests.Load() != 2 {
		t.Errorf("status %d after %d requests, want 503 after 2", resp.StatusCode, srv.requests.Load())
	}
	if d := o.last(); d.Reason != retry.ReasonNotRepeatable {
		t.Errorf("last decision %v (%v), want not safe to repeat", d, d.Reason)
	}
}

// A 409 with Retry-After to a keyed request is an idempotency server saying
// "the first request with this key is still running": repeat after the
// wait. A 409 without a key, or without Retry-After, is final.
func TestKeyedConflictIsRetried(t *testing.T) {
	for _, tc := range []struct {
		name       string
		key        bool
		retryAfter bool
		requests   int64
	}{
		{"keyed with Retry-After", true, true, 2},
		{"keyed without Retry-After", true, false, 1},
		{"no key", false, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newCounting(t, func(w http.ResponseWriter, r *http.Request, n int64) {
				if n == 1 {
					if tc.retryAfter {
						w.Header().Set("Retry-After", "0")
					}
					w.WriteHeader(http.StatusConflict)
					return
				}
				w.WriteHeader(http.StatusCreated)
			})
			tr := newTransport(t, fast(3))
			var hdr []string
			if tc.key {
				hdr = []string{"Idempotency-Key", `"k-1"`}
			}
			resp, err := do(t, tr, context.Background(), "POST", srv.URL, strings.NewReader("x"), hdr...)
			if err != nil {
				t.Fatal(err)
			}
			readAll(t, resp)
			if got := srv.requests.Load(); got != tc.requests {
				t.Fatalf("server saw %d requests, want %d (last status %d)", got, tc.requests, resp.StatusCode)
			}
		})
	}
}

// A bad breaker config fails every request, as a bad budget config does,
// instead of leaving the hosts without a breaker.
func TestInvalidBreakerConfigFails(t *testing.T) {
	for name, tr := range map[string]*retryhttp.Transport{
		"breaker": {Breaker: &breaker.Config{FailureRatio: 2}},
		"budget":  {Budget: budget.Config{Window: time.Millisecond}},
	} {
		req, _ := http.NewRequest("GET", "http://127.0.0.1:1/", nil)
		if _, err := tr.RoundTrip(req); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: RoundTrip error %v, want one naming the bad %s config", name, err, name)
		}
	}
}

// TestBudgetPerSchemeDefaultPort: a host called without a port over http
// and over https is two destinations (port 80 and port 443), each with its
// own budget, whichever is called first.
func TestBudgetPerSchemeDefaultPort(t *testing.T) {
	reg := &budget.Registry{}
	tr := &retryhttp.Transport{Policy: fast(3), Budgets: reg,
		Base: roundTripper(func(r *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: r}, nil
		})}
	for _, u := range []string{"https://x.test/a", "http://x.test/b", "https://x.test/c"} {
		resp, err := do(t, tr, context.Background(), "GET", u, nil)
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
	}
	for dest, want := range map[string]int64{"x.test:443": 2, "x.test:80": 1} {
		b, _ := reg.For(dest, budget.Config{})
		if got := b.Stats().Requests; got != want {
			t.Errorf("%s's budget counted %d requests, want %d", dest, got, want)
		}
	}
}

// roundTripper is a RoundTripper made of a function.
type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestLogRedactsErrorText: an attempt's error is logged without the
// secrets it quotes, those of the request's URL and any other.
func TestLogRedactsErrorText(t *testing.T) {
	const c = "Zq7cAnAry4secret"
	for _, msg := range []string{
		"proxy refused: Authorization: Bearer " + c,
		"proxy refused: token=" + c,
		"redirected to https://login.example.com/cb?access_token=" + c,
		"redirected to https://login.example.com/cb#id_token=" + c,
		"upstream https://bob:" + c + "@db.example.com/ down",
		`upstream said {"client_secret":"` + c + `"}`,
	} {
		var buf bytes.Buffer
		tr := newTransport(t, fast(1))
		tr.Base = roundTripper(func(*http.Request) (*http.Response, error) { return nil, errors.New(msg) })
		tr.Logger = slog.New(slog.NewJSONHandler(&buf, nil))
		_, err := do(t, tr, context.Background(), "GET", "http://alice:"+c+"@127.0.0.1:1/x?access_token="+c+"#frag-"+c, nil)
		if err == nil {
			t.Fatal("no error")
		}
		if out := buf.String(); strings.Contains(out, c) || !strings.Contains(out, `"error":`) {
			t.Errorf("log of %q shows the secret, or no error:\n%s", msg, out)
		}
		if strings.Contains(err.Error(), c) {
			t.Errorf("error of %q shows the secret: %v", msg, err)
		}
	}
}
