package ui_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/heed-go/heed/clock/clocktest"
	"github.com/heed-go/heed/queue/jobstore"
	"github.com/heed-go/heed/ui"
)

// signIn signs in with the token and returns the session cookie's value.
func signIn(t *testing.T, e *env) string {
	t.Helper()
	code, _, hdr := e.post(t, "/login", url.Values{"token": {token}, "next": {"/dead"}}, false)
	cookie := hdr.Get("Set-Cookie")
	if code != 303 || cookie == "" {
		t.Fatalf("login: %d %q", code, cookie)
	}
	return strings.SplitN(strings.SplitN(cookie, ";", 2)[0], "=", 2)[1]
}

// acts reports whether a request with the session cookie may act: a
// requeue of a job that is not dead answers 303 when allowed, 403 when not.
func acts(t *testing.T, e *env, session string) bool {
	t.Helper()
	code, _, _ := e.post(t, fmt.Sprintf("/jobs/%d/requeue", e.sd.budget.ID), nil, false, "Cookie", "heed_ui_session="+session)
	if code != 303 && code != 403 {
		t.Fatalf("requeue: %d", code)
	}
	return code == 303
}

// TestRebindingHost: a page whose owner points its name at 127.0.0.1 gets
// 421 for every page, while the names the dashboard was started for are
// served.
func TestRebindingHost(t *testing.T) {
	stores(t, func(t *testing.T, s jobstore.Store) {
		e := newEnv(t, s, ui.Config{Token: token, Hosts: []string{"dash.internal"}}, 0)
		for host, want := range map[string]int{
			"evil.example":           421,
			"evil.example:8080":      421,
			"127.0.0.1.evil.example": 421,
			"dash.internal.evil":     421,
			"localhost.evil.example": 421,
			"10.0.0.5:8080":          421, // not loopback, and Hosts has no unspecified address
			"dash.internal":          200,
			"DASH.internal:8080":     200,
			"localhost:8080":         200,
			"app.localhost":          200,
			"127.0.0.1:9":            200,
			"[::1]:9":                200,
		} {
			for _, p := range []string{"/", "/dead", "/static/app.css", "/login"} {
				req, _ := http.NewRequest("GET", e.srv.URL+p, nil)
				req.Host = host
				code, body, _ := e.do(t, req)
				if code != want && !(want == 200 && code != 421) {
					t.Errorf("GET %s with Host %s: %d, want %d", p, host, code, want)
				}
				if want == 421 && strings.Contains(body, "heed") && strings.Contains(body, "<html") {
					t.Errorf("GET %s with Host %s served a page", p, host)
				}
			}
		}
		if _, err := ui.New(e.client, ui.Config{ReadOnly: true, Hosts: []string{"dash.internal:8080"}}); err == nil {
			t.Error("a host with a port was accepted in Config.Hosts")
		}
		any := newEnv(t, s, ui.Config{ReadOnly: true, Hosts: []string{"0.0.0.0"}}, 0)
		req, _ := http.NewRequest("GET", any.srv.URL+"/", nil)
		req.Host = "10.0.0.5:8080"
		if code, _, _ := any.do(t, req); code != 200 {
			t.Errorf("an address with --addr 0.0.0.0: %d, want 200", code)
		}
		req.Host = "evil.example"
		if code, _, _ := any.do(t, req); code != 421 {
			t.Errorf("a name with --addr 0.0.0.0: %d, want 421", code)
		}
	})
}

// TestStrictNext: sign-in returns only to a page of the dashboard.
func TestStrictNext(t *testing.T) {
	stores(t, func(t *testing.T, s jobstore.Store) {
		e := newEnv(t, s, ui.Config{Token: token}, 0)
		for next, want := range map[string]string{
			"/dead":                 "/dead",
			"/jobs?state=dead&q=x":  "/jobs?state=dead&q=x",
			"/\t/evil.example/":     "/",
			"/\n/evil.example/":     "/",
			"/\x00/evil.example/":   "/",
			"//evil.example/":       "/",
			"/\\evil.example/":      "/",
			"/\\/evil.example/":     "/",
			"/%09/evil.example/":    "/%09/evil.example/", // decoded once: a path, not a tab
			"https://evil.example/": "/",
			"evil.example":          "/",
			"":                      "/",
			"/\x7f/evil.example/":   "/",
		} {
			code, _, hdr := e.post(t, "/login", url.Values{"token": {token}, "next": {next}}, false)
			if code != 303 || hdr.Get("Location") != want {
				t.Errorf("next %q: %d, Location %q, want %q", next, code, hdr.Get("Location"), want)
			}
			// The sign-in page carries it the same way.
			_, body, _ := e.get(t, "/login?next="+url.QueryEscape(next))
			if want == "/" && !strings.Contains(body, `name="next" value="/">`) {
				t.Errorf("sign-in page for next %q keeps it", next)
			}
		}
	})
}

// TestSignOutEndsSession: a copy of the cookie stops working when its
// session signs out, and a new handler (a restart with another token)
// knows no earlier session.
func TestSignOutEndsSession(t *testing.T) {
	stores(t, func(t *testing.T, s jobstore.Store) {
		e := newEnv(t, s, ui.Config{Token: token}, 0)
		a, b := signIn(t, e), signIn(t, e)
		if a == b || len(a) < 40 {
			t.Fatalf("session IDs %q and %q", a, b)
		}
		if !acts(t, e, a) || !acts(t, e, b) {
			t.Fatal("signed-in sessions cannot act")
		}
		code, _, hdr := e.post(t, "/logout", nil, false, "Cookie", "heed_ui_session="+a)
		if code != 303 || !strings.Contains(hdr.Get("Set-Cookie"), "Max-Age=0") {
			t.Errorf("logout: %d %q", code, hdr.Get("Set-Cookie"))
		}
		if acts(t, e, a) {
			t.Error("a copy of the cookie still acts after sign-out")
		}
		if _, body, _ := e.get(t, "/", "Cookie", "heed_ui_session="+a); strings.Contains(body, "Sign out") {
			t.Error("a signed-out session's page offers Sign out")
		}
		if !acts(t, e, b) {
			t.Error("signing out one session ended another")
		}
		// Another token, another handler: the old cookie is refused.
		other := newEnv(t, s, ui.Config{Token: token + "-changed"}, 0)
		if acts(t, other, b) {
			t.Error("a session of the old token acts on the new handler")
		}
	})
}

// TestSessionLifetime: a session ends on the server after 12 hours,
// whatever the browser does with the cookie.
func TestSessionLifetime(t *testing.T) {
	stores(t, func(t *testing.T, s jobstore.Store) {
		clk := clocktest.New(time.Now())
		e := newEnv(t, s, ui.Config{Token: token, Clock: clk}, 0)
		id := signIn(t, e)
		clk.Advance(12*time.Hour - time.Second)
		if !acts(t, e, id) {
			t.Fatal("the session ended before 12 hours")
		}
		clk.Advance(time.Second)
		if acts(t, e, id) {
			t.Error("the session still acts after 12 hours")
		}
	})
}

// TestTokenGuessesThrottled: after ten wrong tokens in a minute, an
// address is refused any token, the right one too, by the sign-in form
// and by a bearer header, until the minute has passed; other addresses
// are not.
func TestTokenGuessesThrottled(t *testing.T) {
	stores(t, func(t *testing.T, s jobstore.Store) {
		clk := clocktest.New(time.Now())
		e := newEnv(t, s, ui.Config{Token: token, Clock: clk}, 0)
		for i := range 10 {
			if code, _, _ := e.post(t, "/login", url.Values{"token": {fmt.Sprintf("guess-%02d-0123456789abcdef", i)}}, false); code != 403 {
				t.Fatalf("guess %d: %d, want 403", i, code)
			}
		}
		code, body, hdr := e.post(t, "/login", url.Values{"token": {token}}, false)
		if code != 429 || hdr.Get("Retry-After") == "" || !strings.Contains(body, "Too many wrong tokens") {
			t.Errorf("right token while throttled: %d, Retry-After %q", code, hdr.Get("Retry-After"))
		}
		if code, _, _ := e.post(t, fmt.Sprintf("/jobs/%d/requeue", e.sd.budget.ID), nil, true); code != 403 {
			t.Errorf("bearer token while throttled: %d, want 403", code)
		}
		clk.Advance(time.Minute)
		if code, _, _ := e.post(t, "/login", url.Values{"token": {token}}, false); code != 303 {
			t.Errorf("right token a minute later: %d, want 303", code)
		}
	})
}

// TestCookieSecureBehindProxy: behind a proxy that ends TLS and says so,
// the session cookie is Secure; over plain HTTP it is not.
func TestCookieSecureBehindProxy(t *testing.T) {
	stores(t, func(t *testing.T, s jobstore.Store) {
		e := newEnv(t, s, ui.Config{Token: token}, 0)
		for proto, want := range map[string]bool{"https": true, "HTTPS": true, "": false, "http": false} {
			_, _, hdr := e.post(t, "/login", url.Values{"token": {token}}, false, "X-Forwarded-Proto", proto)
			c := hdr.Get("Set-Cookie")
			if c == "" || strings.Contains(c, "; Secure") != want {
				t.Errorf("X-Forwarded-Proto %q: Set-Cookie %q, want Secure %v", proto, c, want)
			}
		}
	})
}
