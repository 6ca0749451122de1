package ui_test

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
	"github.com/heed-go/heed/ui"
)

// xss are what an attacker who controls a job's data (its kind, queue,
// arguments, error text) puts there to run script in an operator's
// browser.
var xss = []string{
	`"><img src=x onerror=alert(1)>`,
	`</script><script>alert(1)</script>`,
	`javascript:alert(1)`,
	`'-alert(1)-'`,
	`<svg/onload=alert(1)>`,
}

// hostile matches what must never appear unescaped in a page.
var hostile = regexp.MustCompile(`(?i)<img src=x|<script>alert|<svg/onload|href="javascript:|onerror=alert\(1\)>`)

// TestProbeHostileJobs plays an attacker who controls what jobs hold, and
// reads every page (full and partial, signed in and not) for script that
// would run or a secret that shows.
func TestProbeHostileJobs(t *testing.T) {
	stores(t, func(t *testing.T, s jobstore.Store) {
		e := newEnv(t, s, ui.Config{Token: token}, 0)
		base := time.Now().UTC().Add(-10 * time.Minute)
		var jobs []*queue.Job
		for i, x := range xss {
			shortSecret := fmt.Sprintf("hunter%d", i)
			errText := x + " login failed: pwd=" + shortSecret + " Authorization: Bearer " + shortSecret
			args := fmt.Sprintf(`{"note":%q,"password":%q}`, x, shortSecret)
			for _, kq := range [][2]string{{x, "mail"}, {"email", "q" + fmt.Sprint(i)}} {
				in, err := queue.NewJobInsert(kq[0], []byte(args), queue.EnqueueOptions{Queue: kq[1]}, base)
				if err != nil {
					t.Logf("kind %q queue %q refused: %v", kq[0], kq[1], err)
					continue
				}
				_ = in
				j := script(t, s, base, kq[0], kq[1], args, queue.JobPolicy{},
					step{took: time.Millisecond, outcome: "permanent", action: "give_up", reason: "permanent", err: errText})
				jobs = append(jobs, j)
			}
		}
		paths := []string{"/", "/jobs", "/jobs?state=dead", "/dead", "/periodic", "/login",
			"/jobs?q=" + url.QueryEscape(xss[0]), "/jobs?kind=" + url.QueryEscape(xss[0]), "/jobs?queue=" + url.QueryEscape(xss[1]),
			"/login?next=" + url.QueryEscape(`/"><script>alert(1)</script>`),
			"/?done=pause&n=1&queue=" + url.QueryEscape(xss[0]),
			"/nope/" + url.PathEscape(xss[0]),
			"/jobs?state=" + url.QueryEscape(xss[1]), "/jobs?after=" + url.QueryEscape(xss[0]), "/jobs?order=" + url.QueryEscape(xss[0]),
			"/jobs/" + url.PathEscape(xss[0]), "/dead/" + url.PathEscape(xss[1]),
		}
		for _, j := range jobs {
			paths = append(paths, fmt.Sprintf("/jobs/%d", j.ID))
		}
		_, body, _ := e.get(t, "/dead")
		for _, m := range regexp.MustCompile(`href="/dead/([^"]+)"`).FindAllStringSubmatch(body, -1) {
			paths = append(paths, "/dead/"+m[1])
		}
		if _, body, _ := e.get(t, "/jobs"); !strings.Contains(body, "&lt;/script&gt;&lt;script&gt;alert(1)") {
			t.Errorf("the hostile kinds do not reach the jobs page, so this test could not see them:\n%.2000s", body)
		}
		for _, p := range paths {
			for _, hdr := range [][]string{nil, {"X-Heed-Partial", "1"}, {"Authorization", "Bearer " + token}} {
				code, body, h := e.get(t, p, hdr...)
				if code >= 500 {
					t.Errorf("GET %s %v: %d", p, hdr, code)
				}
				if m := hostile.FindString(body); m != "" {
					t.Errorf("GET %s %v: unescaped %q in the page", p, hdr, m)
				}
				for i := range xss {
					if s := fmt.Sprintf("hunter%d", i); strings.Contains(body, s) {
						t.Errorf("GET %s %v: the secret %q shows", p, hdr, s)
					}
				}
				if h.Get("X-Content-Type-Options") != "nosniff" || !strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
					t.Errorf("GET %s %v: security headers missing: %v", p, hdr, h)
				}
			}
		}
	})
}

// TestProbeAttacks plays an outside attacker against a running dashboard:
// traversal in the static route, forged cross-site posts, method tricks
// on a read-only dashboard, hostile Host headers and sign-in redirects.
func TestProbeAttacks(t *testing.T) {
	stores(t, func(t *testing.T, s jobstore.Store) {
		e := newEnv(t, s, ui.Config{Token: token, Hosts: []string{"dash.internal"}}, 0)
		// Traversal: nothing outside the embedded assets is served.
		for _, p := range []string{"/static/../ui.go", "/static/..%2fui.go", "/static/%2e%2e/ui.go", "/static/..%5cui.go",
			"/static/./../templates/base.html", "/static//etc/passwd", "/static/%2e%2e%2f%2e%2e%2fetc%2fpasswd", "/static/", "/static/..",
			"/static/app.js%00.html", "/static/templates/base.html", "/static/%252e%252e/ui.go"} {
			req, _ := http.NewRequest("GET", e.srv.URL+"/", nil)
			req.URL.Opaque = p
			code, body, _ := e.do(t, req)
			if code == 200 && (strings.Contains(body, "package ui") || strings.Contains(body, "root:") || strings.Contains(body, "{{define")) {
				t.Errorf("GET %s: %d served a file outside the assets", p, code)
			}
			if code == 200 && !strings.HasPrefix(p, "/static/app") {
				t.Errorf("GET %s: %d", p, code)
			}
		}
		// CSRF: a cross-site form post, with the session cookie a browser
		// would send, is refused, whatever it targets.
		session := signIn(t, e)
		targets := map[string]url.Values{
			fmt.Sprintf("/jobs/%d/requeue", e.sd.budget.ID): nil,
			fmt.Sprintf("/jobs/%d/delete", e.sd.budget.ID):  nil,
			"/queues/pause": {"queue": {"mail"}},
			"/dead/confirm": {"op": {"delete"}},
			"/dead/apply":   {"op": {"delete"}},
			"/bulk/confirm": {"op": {"delete"}},
			"/bulk/apply":   {"op": {"delete"}},
			"/logout":       nil,
			"/login":        {"token": {token}},
		}
		for p, form := range targets {
			for _, forged := range [][]string{
				{"Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example"},
				{"Sec-Fetch-Site", "same-site", "Origin", "https://a.localhost"},
				{"Sec-Fetch-Site", "", "Origin", "https://evil.example"},
				{"Sec-Fetch-Site", "", "Origin", "null"},
			} {
				hdr := append([]string{"Cookie", "heed_ui_session=" + session}, forged...)
				code, _, _ := e.post(t, p, form, false, hdr...)
				if code != 403 {
					t.Errorf("POST %s forged %v: %d, want 403", p, forged, code)
				}
			}
		}
		if !acts(t, e, session) {
			t.Error("a forged logout ended the session")
		}
		// A session cookie is HttpOnly, SameSite and limited to the path.
		_, _, hdr := e.post(t, "/login", url.Values{"token": {token}}, false)
		c := hdr.Get("Set-Cookie")
		for _, want := range []string{"HttpOnly", "SameSite=Strict", "Path=/", "Max-Age="} {
			if !strings.Contains(c, want) {
				t.Errorf("session cookie %q lacks %s", c, want)
			}
		}
		// A wrong token, of any length, and a token in a query, do not act.
		for _, a := range []string{"Bearer " + token[:len(token)-1], "Bearer " + token + "x", "bearer " + token, "Basic " + token, token, "Bearer  " + token} {
			code, _, _ := e.post(t, fmt.Sprintf("/jobs/%d/requeue", e.sd.budget.ID), nil, false, "Authorization", a)
			if code != 403 {
				t.Errorf("Authorization %q: %d, want 403", a, code)
			}
		}
		if code, _, _ := e.post(t, fmt.Sprintf("/jobs/%d/requeue?token=%s", e.sd.budget.ID, token), url.Values{"token": {token}}, false); code != 403 {
			t.Errorf("token in the query or form: %d, want 403", code)
		}
		// Redirects after sign-in stay on the dashboard.
		for _, next := range []string{"//evil.example", "/\\evil.example", "/%2F%2Fevil.example", "/%09/evil.example", "/%252F%252Fevil.example",
			"/\u3000/evil.example", "/\uff0f\uff0fevil.example", "/.//evil.example", "/..//evil.example", "/./\\evil.example", "\\\\evil.example",
			"https:evil.example", "/\r\nLocation: https://evil.example", " //evil.example", "/#//evil.example", "/?//evil.example", "///evil.example",
			"/%5Cevil.example", "/%2F/evil.example", "%2F%2Fevil.example"} {
			code, _, h := e.post(t, "/login", url.Values{"token": {token}, "next": {next}}, false)
			loc := h.Get("Location")
			if code != 303 || !strings.HasPrefix(loc, "/") || strings.HasPrefix(loc, "//") || strings.HasPrefix(loc, "/\\") || strings.ContainsAny(loc, "\\\t\r\n") {
				t.Errorf("next %q: %d Location %q", next, code, loc)
			}
			if u, err := url.Parse(loc); err != nil || u.Host != "" || u.Scheme != "" {
				t.Errorf("next %q: Location %q leaves the dashboard", next, loc)
			}
		}

		// Read-only: no method, no override, no path trick writes.
		ro := newEnv(t, s, ui.Config{ReadOnly: true}, 0)
		before, _ := ro.client.Job(t.Context(), ro.sd.budget.ID)
		for _, m := range []string{"POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "GET"} {
			for _, p := range []string{fmt.Sprintf("/jobs/%d/delete", ro.sd.budget.ID), fmt.Sprintf("/jobs/%d/requeue", ro.sd.budget.ID),
				"/queues/pause", "/bulk/apply", "/dead/apply", "/login", fmt.Sprintf("/jobs/%d?reveal=1", ro.sd.secret.ID)} {
				req, _ := http.NewRequest(m, ro.srv.URL+p, strings.NewReader("op=delete&queue=billing&token="+token))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				req.Header.Set("X-HTTP-Method-Override", "POST")
				req.Header.Set("X-Method-Override", "POST")
				req.Header.Set("Authorization", "Bearer "+token)
				code, body, _ := ro.do(t, req)
				if code < 400 && code != 0 && m != "GET" && m != "HEAD" {
					t.Errorf("read-only %s %s: %d", m, p, code)
				}
				if strings.Contains(body, secretValue) {
					t.Errorf("read-only %s %s shows the secret", m, p)
				}
			}
		}
		after, err := ro.client.Job(t.Context(), ro.sd.budget.ID)
		if err != nil || after.State != before.State {
			t.Errorf("read-only: the job changed: %v -> %v (%v)", before.State, after.State, err)
		}
	})
}
