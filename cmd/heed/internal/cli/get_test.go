package cli

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// getServer is a test server whose handler gets the request number.
func getServer(t *testing.T, h func(w http.ResponseWriter, r *http.Request, n int64)) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h(w, r, n.Add(1))
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func TestGetSuccess(t *testing.T) {
	srv, n := getServer(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
		io.WriteString(w, "hello "+r.Method+" "+r.Header.Get("Retry-Attempt"))
	})
	code, stdout, stderr := heed(t, "", "get", srv.URL)
	if code != 0 || stdout != "hello GET 1" || stderr != "" || n.Load() != 1 {
		t.Errorf("exit %d, stdout %q, stderr %q, %d requests", code, stdout, stderr, n.Load())
	}
}

func TestGetRetriesWithVerboseDecisions(t *testing.T) {
	srv, n := getServer(t, func(w http.ResponseWriter, r *http.Request, n int64) {
		if n == 1 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok")
	})
	// Flags after the URL work too, as with curl.
	code, stdout, stderr := heed(t, "", "get", srv.URL, "-v", "--base", "1ms")
	if code != 0 || stdout != "ok" || n.Load() != 2 {
		t.Fatalf("exit %d, stdout %q, %d requests", code, stdout, n.Load())
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "heed: attempt 1: 503 Service Unavailable, retry in ") || lines[1] != "heed: attempt 2: ok" {
		t.Errorf("stderr:\n%s", stderr)
	}
}

func TestGetHTTPError(t *testing.T) {
	srv, n := getServer(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
		http.Error(w, "nope", http.StatusNotFound)
	})
	code, stdout, _ := heed(t, "", "get", srv.URL)
	if code != exitHTTPError || stdout != "nope\n" || n.Load() != 1 {
		t.Errorf("exit %d, stdout %q, %d requests", code, stdout, n.Load())
	}
	srv, n = getServer(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
		http.Error(w, "down", http.StatusBadGateway)
	})
	code, stdout, _ = heed(t, "", "get", "--attempts", "2", "--base", "1ms", srv.URL)
	if code != exitHTTPError || stdout != "down\n" || n.Load() != 2 {
		t.Errorf("after retries: exit %d, stdout %q, %d requests", code, stdout, n.Load())
	}
}

func TestGetTransportFailure(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	code, _, stderr := heed(t, "", "get", "-v", "--base", "1ms", "http://"+addr+"/")
	if code != exitTransport || strings.Count(stderr, "heed: attempt") != 3 || !strings.Contains(stderr, "connection refused") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
	code, _, _ = heed(t, "", "get", "http://heed-test.invalid/")
	if code != exitTransport {
		t.Errorf("unknown host: exit %d", code)
	}
}

// resetServer reads a whole request, counts it, and resets the connection.
func resetServer(t *testing.T) (url string, received *atomic.Int64) {
	t.Helper()
	received = new(atomic.Int64)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 0, 4096)
			tmp := make([]byte, 4096)
			for !strings.HasSuffix(string(buf), "order=1") {
				m, err := c.Read(tmp)
				buf = append(buf, tmp[:m]...)
				if err != nil {
					break
				}
			}
			if strings.HasSuffix(string(buf), "order=1") {
				received.Add(1)
			}
			c.(*net.TCPConn).SetLinger(0)
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return "http://" + ln.Addr().String() + "/orders", received
}

func TestGetAmbiguousPOST(t *testing.T) {
	u, received := resetServer(t)
	code, _, stderr := heed(t, "", "get", "-d", "order=1", "--base", "1ms", u)
	if code != exitTransport || received.Load() != 1 || !strings.Contains(stderr, "not safe to repeat") {
		t.Errorf("without a key: exit %d, %d received, stderr %q", code, received.Load(), stderr)
	}
	u, received = resetServer(t)
	code, _, _ = heed(t, "", "get", "-d", "order=1", "--idempotency-key", "auto", "--base", "1ms", u)
	if code != exitTransport || received.Load() != 3 {
		t.Errorf("with a key: exit %d, %d received, want 3", code, received.Load())
	}
}

func TestGetRequestFlags(t *testing.T) {
	var got struct {
		method, body, ctype, custom, key string
	}
	srv, _ := getServer(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
		b, _ := io.ReadAll(r.Body)
		got.method, got.body = r.Method, string(b)
		got.ctype, got.custom, got.key = r.Header.Get("Content-Type"), r.Header.Get("X-Custom"), r.Header.Get("Idempotency-Key")
		w.Header().Set("X-Reply", "yes")
		io.WriteString(w, "done")
	})
	file := filepath.Join(t.TempDir(), "body.json")
	os.WriteFile(file, []byte(`{"a":1}`), 0o600)
	out := filepath.Join(t.TempDir(), "out")
	code, stdout, stderr := heed(t, "", "get", "-X", "put", "-d", "@"+file, "-H", "Content-Type: application/json",
		"-H", "X-Custom:  v ", "--idempotency-key", "k1", "-o", out, srv.URL)
	if code != 0 || stdout != "" || stderr != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if got.method != "PUT" || got.body != `{"a":1}` || got.ctype != "application/json" || got.custom != "v" || got.key != "k1" {
		t.Errorf("server got %+v", got)
	}
	if b, _ := os.ReadFile(out); string(b) != "done" {
		t.Errorf("-o file holds %q", b)
	}
	code, stdout, _ = heed(t, "stdin body", "get", "-i", "-d", "@-", srv.URL)
	if code != 0 || !strings.HasPrefix(stdout, "HTTP/1.1 200 OK\r\n") || !strings.Contains(stdout, "X-Reply: yes\r\n") ||
		!strings.HasSuffix(stdout, "\r\n\r\ndone") || got.method != "POST" || got.body != "stdin body" {
		t.Errorf("-i: exit %d, stdout %q, server got %+v", code, stdout, got)
	}
}

func TestGetDeadline(t *testing.T) {
	// The server answers only after the client has gone (or, if a
	// deadline did not end the request, after a minute, which fails the
	// exit code): the command's deadline is the only way out, however
	// slow the machine.
	gone := make(chan struct{}, 3)
	srv, _ := getServer(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
		select {
		case <-r.Context().Done():
			gone <- struct{}{}
		case <-time.After(time.Minute):
		}
	})
	code, _, stderr := heed(t, "", "get", "--max-time", "100ms", srv.URL)
	if code != exitTimeout {
		t.Fatalf("--max-time: exit %d, stderr %q", code, stderr)
	}
	<-gone // the request was cancelled, not answered
	code, _, _ = heed(t, "", "get", "--timeout", "30ms", "--attempts", "2", "--base", "1ms", srv.URL)
	if code != exitTimeout {
		t.Fatalf("--timeout: exit %d", code)
	}
	<-gone

	srv, n := getServer(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
		w.Header().Set("Retry-After", "60")
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	code, _, stderr = heed(t, "", "get", "--max-time", "2s", srv.URL)
	if code != exitTimeout || n.Load() != 1 || !strings.Contains(stderr, "retry in 1m0s") {
		t.Errorf("Retry-After past the deadline: exit %d after %d requests, stderr %q", code, n.Load(), stderr)
	}
}

// A server that answers in 2 s, under --max-time 3s, answers the first
// request: no attempt is cut to leave time for a retry.
func TestGetSlowServer(t *testing.T) {
	srv, n := getServer(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
		select {
		case <-r.Context().Done():
		case <-time.After(2 * time.Second):
			io.WriteString(w, "slow but sure")
		}
	})
	code, stdout, stderr := heed(t, "", "get", "--max-time", "3s", srv.URL)
	if code != 0 || stdout != "slow but sure" || n.Load() != 1 {
		t.Errorf("exit %d, stdout %q, stderr %q after %d requests, want the answer after 1", code, stdout, stderr, n.Load())
	}
}

func TestGetUsage(t *testing.T) {
	for _, args := range [][]string{
		{"get"},
		{"get", "http://a/", "http://b/"},
		{"get", "ftp://a/"},
		{"get", "-H", "no colon", "http://a/"},
		{"get", "--attempts", "0", "http://a/"},
		{"get", "--max-time", "-1s", "http://a/"},
		{"get", "-d", "@/nonexistent/file", "http://a/"},
		{"get", "--nope", "http://a/"},
	} {
		code, stdout, stderr := heed(t, "", args...)
		if code != exitUsage || stdout != "" || !strings.Contains(stderr, "heed get --help") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, stdout, stderr)
		}
	}
	code, stdout, _ := heed(t, "", "get", "--help")
	if code != 0 || !strings.Contains(stdout, "Exit codes:") || !strings.Contains(stdout, "-X METHOD") {
		t.Errorf("--help: exit %d, stdout %q", code, stdout)
	}
}

// --hedge sends a second copy of a slow GET; the hedge's answer wins and
// -v says so.
func TestGetHedge(t *testing.T) {
	// The first attempt is the slow one, known by its Retry-Attempt, not by
	// the order the server sees them in: on a busy machine the hedge can
	// arrive first, or alone (the first cancelled before its request got
	// through).
	srv, n := getServer(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
		if a := r.Header.Get("Retry-Attempt"); a != "2" {
			<-r.Context().Done() // slow until the client leaves
			return
		}
		io.WriteString(w, "fast "+r.Header.Get("Retry-Attempt"))
	})
	code, stdout, stderr := heed(t, "", "get", "-v", "--hedge", "20ms", srv.URL)
	if code != 0 || stdout != "fast 2" || n.Load() < 1 || n.Load() > 2 {
		t.Fatalf("exit %d, stdout %q, stderr %q, %d requests", code, stdout, stderr, n.Load())
	}
	if strings.TrimSpace(stderr) != "heed: attempt 2: ok (1 hedged, a hedge won)" {
		t.Errorf("stderr:\n%s", stderr)
	}
	if code, _, stderr := heed(t, "", "get", "--hedge", "-1s", srv.URL); code != 2 {
		t.Errorf("--hedge -1s: exit %d, stderr %q; want a usage error", code, stderr)
	}
}
