package deadline_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heed-go/heed/deadline"
	"github.com/heed-go/heed/internal/wire"
)

// serve runs one request through m and reports what the handler saw.
func serve(m deadline.Middleware, remote string, hdr map[string]string) (code int, body string, called bool, left time.Duration, hasDeadline, owned bool) {
	h := m.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		called = true
		left, hasDeadline = deadline.Remaining(r.Context())
		owned = deadline.UpstreamOwns(r.Context())
	}))
	req := httptest.NewRequest("GET", "/", nil)
	req.RemoteAddr = remote
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.String(), called, left, hasDeadline, owned
}

const local = "127.0.0.1:5555"

func TestMiddlewareAdoptsHeader(t *testing.T) {
	m := deadline.Middleware{}
	code, _, called, left, ok, _ := serve(m, local, map[string]string{"Timeout-Remaining": "800ms"})
	if code != 200 || !called || !ok || left > 800*time.Millisecond || left < 700*time.Millisecond {
		t.Errorf("code %d called %v deadline %v %v", code, called, ok, left)
	}
}

func TestMiddlewareNeverBeyondOwnLimit(t *testing.T) {
	m := deadline.Middleware{Limit: 100 * time.Millisecond}
	_, _, _, left, ok, _ := serve(m, local, map[string]string{"Timeout-Remaining": "1h"})
	if !ok || left > 100*time.Millisecond {
		t.Errorf("deadline %v %v, want at most the 100ms limit", ok, left)
	}
	_, _, _, left, ok, _ = serve(m, local, nil)
	if !ok || left > 100*time.Millisecond {
		t.Errorf("no header: deadline %v %v, want the limit", ok, left)
	}
	_, _, _, left, ok, _ = serve(m, local, map[string]string{"Timeout-Remaining": "50ms"})
	if !ok || left > 50*time.Millisecond {
		t.Errorf("shorter header: deadline %v %v", ok, left)
	}
	_, _, _, _, ok, _ = serve(deadline.Middleware{}, local, nil)
	if ok {
		t.Error("no header, no limit: got a deadline")
	}
}

func TestMiddlewareTrust(t *testing.T) {
	hdr := map[string]string{"Timeout-Remaining": "500ms", "Retry-Attempt": "1"}
	for _, tt := range []struct {
		remote  string
		trusted func(*http.Request) bool
		want    bool
	}{
		{"127.0.0.1:1", nil, true},
		{"[::1]:1", nil, true},
		{"10.1.2.3:1", nil, true},
		{"192.168.0.7:1", nil, true},
		{"203.0.113.9:1", nil, false},
		{"[2001:db8::1]:1", nil, false},
		{"garbage", nil, false},
		{"203.0.113.9:1", deadline.TrustAll, true},
		{"127.0.0.1:1", func(*http.Request) bool { return false }, false},
	} {
		m := deadline.Middleware{Trusted: tt.trusted}
		code, _, called, _, ok, owned := serve(m, tt.remote, hdr)
		if code != 200 || !called || ok != tt.want || owned != tt.want {
			t.Errorf("%s: code %d, deadline %v, owned %v; want both %v", tt.remote, code, ok, owned, tt.want)
		}
	}
}

func TestMiddlewareTooLittleTime(t *testing.T) {
	for _, v := range []string{"0ms", "3ms", "9999us"} {
		code, body, called, _, _, _ := serve(deadline.Middleware{}, local, map[string]string{"Timeout-Remaining": v})
		if code != http.StatusGatewayTimeout || called || !strings.Contains(body, "not enough time") {
			t.Errorf("%s: code %d, called %v, body %q", v, code, called, body)
		}
	}
	code, _, called, _, _, _ := serve(deadline.Middleware{MinRemaining: time.Millisecond}, local, map[string]string{"Timeout-Remaining": "3ms"})
	if code != 200 || !called {
		t.Errorf("MinRemaining 1ms, 3ms left: code %d", code)
	}
	// A server limit below MinRemaining also refuses.
	code, _, called, _, _, _ = serve(deadline.Middleware{Limit: time.Millisecond}, local, nil)
	if code != http.StatusGatewayTimeout || called {
		t.Errorf("limit below minimum: code %d", code)
	}
}

func TestMiddlewareMalformed(t *testing.T) {
	for _, hdr := range []map[string]string{
		{"Timeout-Remaining": "1.5s"},
		{"Timeout-Remaining": "-1s"},
		{"Timeout-Remaining": "soon"},
		{"Retry-Attempt": "0"},
		{"Retry-Attempt": "x"},
		{"Retry-Attempt": "-1"},
		{"Retry-Attempt": "99999"},
	} {
		code, body, called, _, _, _ := serve(deadline.Middleware{}, local, hdr)
		if code != http.StatusBadRequest || called || strings.Count(body, "\n") != 1 || !strings.HasPrefix(body, "deadline: ") {
			t.Errorf("%v: code %d, called %v, body %q", hdr, code, called, body)
		}
	}
	// From a peer that is not trusted, malformed values are ignored.
	code, _, called, _, _, _ := serve(deadline.Middleware{}, "203.0.113.9:1", map[string]string{"Timeout-Remaining": "soon"})
	if code != 200 || !called {
		t.Errorf("untrusted malformed: code %d", code)
	}
}

func TestMiddlewareRetryAttempt(t *testing.T) {
	_, _, _, _, _, owned := serve(deadline.Middleware{}, local, map[string]string{"Retry-Attempt": "2"})
	if !owned {
		t.Error("Retry-Attempt did not mark the context")
	}
	_, _, _, _, _, owned = serve(deadline.Middleware{}, local, nil)
	if owned {
		t.Error("marked without Retry-Attempt")
	}
	code, _, _, _, _, owned := serve(deadline.Middleware{OwnershipOff: true}, local, map[string]string{"Retry-Attempt": "x"})
	if owned || code != 200 {
		t.Errorf("OwnershipOff: code %d, owned %v", code, owned)
	}
}

func TestMiddlewareOverServer(t *testing.T) {
	srv := httptest.NewServer(deadline.Middleware{Limit: time.Second}.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		left, _ := deadline.Remaining(r.Context())
		io.WriteString(w, wire.FormatHeader(left.Round(100*time.Millisecond)))
	})))
	defer srv.Close()
	req, _ := http.NewRequest("GET", srv.URL, nil)
	req.Header.Set(wire.Header, "300ms")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "300ms" {
		t.Errorf("handler saw %q left", b)
	}
	http.DefaultClient.CloseIdleConnections()
}

func TestParseRetryAttempt(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int
	}{{"1", 1}, {"12", 12}, {"9999", 9999}} {
		if n, err := wire.ParseRetryAttempt(tt.in); n != tt.want || err != nil {
			t.Errorf("ParseRetryAttempt(%q) = %d, %v", tt.in, n, err)
		}
	}
	for _, in := range []string{"", "0", "01", "+1", "-1", "1.0", " 1", "10000", "x"} {
		if _, err := wire.ParseRetryAttempt(in); !errors.Is(err, wire.ErrBadHeader) {
			t.Errorf("ParseRetryAttempt(%q) error %v", in, err)
		}
	}
	for _, n := range []int{-5, 0, 1, 42, 9999, 1 << 40} {
		if got, err := wire.ParseRetryAttempt(wire.FormatRetryAttempt(n)); err != nil || got < 1 {
			t.Errorf("round trip of %d: %d, %v", n, got, err)
		}
	}
}

func FuzzParseRetryAttempt(f *testing.F) {
	for _, s := range []string{"1", "9999", "0", "", "-1", "1e3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := wire.ParseRetryAttempt(s)
		if err != nil {
			if !errors.Is(err, wire.ErrBadHeader) || n != 0 {
				t.Fatalf("ParseRetryAttempt(%q) = %d, %v", s, n, err)
			}
			return
		}
		if n < 1 || n > 9999 || wire.FormatRetryAttempt(n) != s {
			t.Fatalf("ParseRetryAttempt(%q) = %d does not round-trip", s, n)
		}
	})
}

// TestMiddlewareUpstreamOpen: a handler whose dependency's breaker refused
// a call (MarkUpstreamOpen) answers with Upstream-Breaker: open, for
// trusted peers only; UpstreamOpen recognises it on a 5xx.
func TestMiddlewareUpstreamOpen(t *testing.T) {
	for _, tt := range []struct {
		remote string
		mark   bool
		want   string
	}{
		{local, true, "open"},
		{local, false, ""},
		{"203.0.113.9:5555", true, ""},
	} {
		h := deadline.Middleware{}.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if tt.mark {
				marked := deadline.MarkUpstreamOpen(r.Context())
				if want := tt.remote == local; marked != want {
					t.Errorf("%s: MarkUpstreamOpen = %v, want %v", tt.remote, marked, want)
				}
			}
			http.Error(w, "dependency unavailable", http.StatusServiceUnavailable)
		}))
		req := httptest.NewRequest("GET", "/", nil)
		req.RemoteAddr = tt.remote
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		resp := rec.Result()
		if got := resp.Header.Get(wire.UpstreamBreakerHeader); got != tt.want {
			t.Errorf("%s mark %v: header %q, want %q", tt.remote, tt.mark, got, tt.want)
		}
		if wire.UpstreamOpen(resp) != (tt.want == "open") {
			t.Errorf("%s mark %v: UpstreamOpen = %v", tt.remote, tt.mark, !(tt.want == "open"))
		}
	}
	if deadline.MarkUpstreamOpen(context.Background()) {
		t.Error("MarkUpstreamOpen outside the middleware reported a request")
	}
	ok := &http.Response{StatusCode: 200, Header: http.Header{wire.UpstreamBreakerHeader: {"open"}}}
	if wire.UpstreamOpen(ok) {
		t.Error("UpstreamOpen on a 200")
	}
}

// A request's Retry-Attempt is kept in its context from a trusted peer,
// for clients that pass the caller's claim on.
func TestUpstreamAttempt(t *testing.T) {
	var got []int
	h := deadline.Middleware{Trusted: deadline.TrustAll}.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, wire.UpstreamAttempt(r.Context()))
	}))
	for _, v := range []string{"", "1", "3"} {
		r := httptest.NewRequest("GET", "/", nil)
		if v != "" {
			r.Header.Set(wire.RetryAttemptHeader, v)
		}
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
	if want := []int{0, 1, 3}; !slices.Equal(got, want) {
		t.Errorf("UpstreamAttempt = %v, want %v", got, want)
	}
	if n := wire.UpstreamAttempt(deadline.WithUpstreamOwner(context.Background())); n != 0 {
		t.Errorf("UpstreamAttempt of a context only marked as owned = %d, want 0", n)
	}
}
