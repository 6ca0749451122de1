package cli

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// curl's -m, -A, -u and -I work as in curl, and a flag error names the
// flag as the user typed it.
func TestGetCurlShortFlags(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, _ := r.BasicAuth()
		w.Header().Set("X-Seen", r.Method+" "+r.UserAgent()+" "+user+":"+pass)
		w.Write([]byte("body\n"))
	}))
	defer srv.Close()
	code, stdout, stderr := heed(t, "", "get", "-m", "5", "-A", "probe/1", "-u", "bob:hunter2", "-i", srv.URL)
	if code != exitOK || !strings.Contains(stdout, "X-Seen: GET probe/1 bob:hunter2") || !strings.HasSuffix(stdout, "body\n") {
		t.Errorf("-m -A -u: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr = heed(t, "", "get", "-sI", srv.URL)
	if code != exitOK || !strings.HasPrefix(stdout, "HTTP/1.1 200 OK") || !strings.Contains(stdout, "X-Seen: HEAD heed-get :") || strings.Contains(stdout, "body") {
		t.Errorf("-I: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, tc := range []struct{ args []string }{
		{[]string{"get", "-q", srv.URL}},
		{[]string{"get", "--nope=1", srv.URL}},
		{[]string{"get", "-m", srv.URL}},
	} {
		code, _, stderr := heed(t, "", tc.args...)
		typed, _, _ := strings.Cut(tc.args[1], "=")
		if code != exitUsage || !strings.Contains(stderr, " "+typed) || strings.Contains(stderr, "-"+typed) {
			t.Errorf("heed %v: exit %d, stderr %q: does not name %s as typed", tc.args, code, stderr, typed)
		}
	}
}

// A timeout that cuts a body exits 124, as the help says: --max-time
// (and -m) ends a body that trickles for longer.
func TestGetMaxTimeCutsBody(t *testing.T) {
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		for range 30 {
			w.Write([]byte("x"))
			w.(http.Flusher).Flush()
			select {
			case <-stop:
				return
			case <-r.Context().Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}))
	defer srv.Close()
	defer close(stop)
	for _, flag := range []string{"--max-time", "-m"} {
		code, _, stderr := heed(t, "", "get", flag, "1", srv.URL)
		if code != exitTimeout {
			t.Errorf("%s 1 on a 3 s body: exit %d, want %d; stderr %q", flag, code, exitTimeout, stderr)
		}
	}
}

// --retry-max-time lets heed get wait for a Retry-After up to it; without
// it, a longer Retry-After than 30 s is not waited for, and the response
// stands (exit 22, not a deadline's 124).
func TestGetRetryMaxTime(t *testing.T) {
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n++
		if n == 1 {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "later", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok\n"))
	}))
	defer srv.Close()
	code, stdout, stderr := heed(t, "", "get", "--retry-max-time", "5s", srv.URL)
	if code != exitOK || stdout != "ok\n" || n != 2 {
		t.Errorf("--retry-max-time 5s with Retry-After 1: exit %d, %d requests, stdout %q, stderr %q", code, n, stdout, stderr)
	}
	n = 0
	code, _, stderr = heed(t, "", "get", "--retry-max-time", "500ms", srv.URL)
	if code != exitHTTPError || n != 1 || !strings.Contains(stderr, "longer than --retry-max-time") {
		t.Errorf("--retry-max-time 500ms with Retry-After 1: exit %d, %d requests, stderr %q", code, n, stderr)
	}
}
