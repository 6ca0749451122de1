package ui_test

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
	"github.com/heed-go/heed/ui"
)

// checkPage checks what every page must have: the security headers, no
// inline script or style, and no secret.
func checkPage(t *testing.T, what, body string, hdr map[string][]string) {
	t.Helper()
	csp := strings.Join(hdr["Content-Security-Policy"], "")
	for _, want := range []string{"default-src 'none'", "script-src 'self'", "frame-ancestors 'none'", "form-action 'self'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("%s: Content-Security-Policy %q lacks %q", what, csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-inline") {
		t.Errorf("%s: Content-Security-Policy allows unsafe-inline", what)
	}
	if regexp.MustCompile(`<script>|<script [^>]*>[^<]|\sstyle=|\son[a-z]+=`).MatchString(body) {
		t.Errorf("%s: inline script, style or handler in the page", what)
	}
	for _, s := range []string{token, secretValue} {
		if strings.Contains(body, s) {
			t.Errorf("%s: the page holds the secret %q", what, s)
		}
	}
}

func TestPages(t *testing.T) {
	stores(t, func(t *testing.T, s jobstore.Store) {
		e := newEnv(t, s, ui.Config{Token: token}, 3)
		for _, tc := range []struct {
			path string
			want []string
		}{
			{"/", []string{"Overview", `data-queue="mail"`, `data-queue="billing"`, `data-queue="bulk"`, `<rect class="s-ok"`, "8</span> dead", "Sign in to act"}},
			{"/jobs", []string{"webhook", "resize", "charge"}},
			{"/jobs?state=dead&kind=email", []string{"smtp 550", "i/o timeout"}},
			{"/jobs?q=TOO+MANY", []string{fmt.Sprintf(`href="/jobs/%d"`, e.sd.budget.ID)}},
			{fmt.Sprintf("/jobs/%d", e.sd.budget.ID), []string{"Decision timeline", "the server asked to wait 4s", "no retry fits in the time budget left", "time_budget", `class="budget"`, "backoff 2.0×"}},
			{fmt.Sprintf("/jobs/%d", e.sd.retried.ID), []string{"succeeded", "connection refused", "&#43;1.1s"}},
			{fmt.Sprintf("/jobs/%d", e.sd.secret.ID), []string{"REDACTED", "Reveal"}},
			{"/dead", []string{"dial tcp &lt;addr&gt;: i/o timeout", "smtp &lt;n&gt;: mailbox &lt;addr&gt; unavailable", "8 dead jobs"}},
			{"/login", []string{`type="password"`}},
		} {
			code, body, hdr := e.get(t, tc.path)
			if code != 200 {
				t.Errorf("GET %s: %d\n%s", tc.path, code, body)
				continue
			}
			checkPage(t, "GET "+tc.path, body, hdr)
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("GET %s: no %q in the page", tc.path, w)
				}
			}
		}
		// A job that succeeded after failed attempts is listed without
		// their error, as if it were failing; its page above keeps it, on
		// its attempt. heed jobs ls shows the same (liststate.LastError).
		if _, body, _ := e.get(t, "/jobs?state=succeeded"); !strings.Contains(body, fmt.Sprintf(`href="/jobs/%d"`, e.sd.retried.ID)) ||
			strings.Contains(body, "connection refused") {
			t.Errorf("GET /jobs?state=succeeded: want job %d without its earlier attempts' error:\n%.2000s", e.sd.retried.ID, body)
		}
		if _, body, _ := e.get(t, "/jobs?state=dead&kind=charge"); !strings.Contains(body, "503 Service Unavailable") {
			t.Errorf("GET /jobs?state=dead&kind=charge: want the dead job's last error:\n%.2000s", body)
		}
		// Scheduled jobs are listed (the overview counts them and links
		// there), and cancelled ones have their column; stored words
		// read as words.
		later, _, err := e.client.Enqueue(t.Context(), "report", nil, queue.EnqueueOptions{Queue: "later", In: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if code, body, _ := e.get(t, "/jobs?state=scheduled"); code != 200 || !strings.Contains(body, fmt.Sprintf(`href="/jobs/%d"`, later.ID)) ||
			strings.Contains(body, "webhook") {
			t.Errorf("GET /jobs?state=scheduled: %d, want job %d and no job due now:\n%.500s", code, later.ID, body)
		}
		// And they are shown as scheduled, as the filter and heed jobs ls
		// call them, not as their stored state, available.
		for _, path := range []string{"/jobs?state=scheduled", fmt.Sprintf("/jobs/%d", later.ID)} {
			if _, body, _ := e.get(t, path); !strings.Contains(body, `<span class="st st-scheduled">scheduled</span>`) || strings.Contains(body, "st-available") {
				t.Errorf("GET %s: the scheduled job is not shown as scheduled", path)
			}
		}
		if _, body, _ := e.get(t, "/"); !strings.Contains(body, `<th class="num opt">Cancelled</th>`) || !strings.Contains(body, `state=scheduled`) {
			t.Errorf("GET /: no cancelled column or no link to the scheduled jobs")
		}
		if _, body, _ := e.get(t, fmt.Sprintf("/jobs/%d", e.sd.budget.ID)); !strings.Contains(body, "<b>give up</b></td><td>time budget</td>") ||
			strings.Contains(body, ">give_up<") || strings.Contains(body, ">time_budget<") {
			t.Errorf("GET /jobs/%d: stored words shown", e.sd.budget.ID)
		}
		// Text search looks in args only for a reader who may reveal them.
		if _, body, _ := e.get(t, "/jobs?q=hooks.example.com"); strings.Contains(body, "webhook") {
			t.Errorf("GET /jobs?q=...: searched the args without the token")
		}
		if _, body, _ := e.get(t, "/jobs?q=hooks.example.com", "Authorization", "Bearer "+token); !strings.Contains(body, "webhook") {
			t.Errorf("GET /jobs?q=... with the token: did not search the args")
		}
		for path, want := range map[string]int{"/jobs/999999": 404, "/jobs/x": 400, "/nope": 404, "/dead/0000": 404,
			"/jobs?state=gone": 400, "/jobs?after=-1": 400} {
			if code, body, hdr := e.get(t, path); code != want {
				t.Errorf("GET %s: %d, want %d", path, code, want)
			} else {
				checkPage(t, "GET "+path, body, hdr)
			}
		}
		// The partial page the live updates fetch is the main part only.
		if _, body, _ := e.get(t, "/", "X-Heed-Partial", "1"); strings.Contains(body, "<html") || !strings.Contains(body, `data-queue="mail"`) {
			t.Errorf("partial overview: %.200s", body)
		}
		if code, body, hdr := e.get(t, "/static/app.js"); code != 200 || !strings.Contains(body, "X-Heed-Partial") || hdr.Get("Content-Type") == "" {
			t.Errorf("GET /static/app.js: %d %q", code, hdr.Get("Content-Type"))
		}
	})
}

func TestReveal(t *testing.T) {
	stores(t, func(t *testing.T, s jobstore.Store) {
		e := newEnv(t, s, ui.Config{Token: token}, 0)
		path := fmt.Sprintf("/jobs/%d?reveal=1", e.sd.secret.ID)
		if code, body, _ := e.get(t, path); code != 403 || strings.Contains(body, secretValue) {
			t.Errorf("reveal without the token: %d (secret shown: %v)", code, strings.Contains(body, secretValue))
		}
		if code, body, _ := e.get(t, path, "Authorization", "Bearer "+token); code != 200 || !strings.Contains(body, secretValue) {
			t.Errorf("reveal with the token: %d (secret shown: %v)", code, strings.Contains(body, secretValue))
		}
	})
}

// ids reads the job IDs a jobs page links to, in order.
func ids(body string) []int64 {
	var out []int64
	for _, m := range regexp.MustCompile(`<td class="num"><a href="/jobs/(\d+)">`).FindAllStringSubmatch(body, -1) {
		n, _ := strconv.ParseInt(m[1], 10, 64)
		out = append(out, n)
	}
	return out
}

func link(body, rel string) string {
	m := regexp.MustCompile(`rel="` + rel + `" href="([^"]+)"`).FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return strings.ReplaceAll(m[1], "&amp;", "&")
}

func TestJobsPaging(t *testing.T) {
	stores(t, func(t *testing.T, s jobstore.Store) {
		e := newEnv(t, s, ui.Config{Token: token}, 120)
		for _, order := range []string{"newest", "oldest"} {
			var all []int64
			path := "/jobs?queue=bulk&order=" + order
			var pages []string
			for path != "" {
				_, body, _ := e.get(t, path)
				got := ids(body)
				if len(got) == 0 || len(got) > 50 {
					t.Fatalf("%s: %d jobs", path, len(got))
				}
				all = append(all, got...)
				pages = append(pages, path)
				path = link(body, "next")
			}
			if len(all) != 120 || len(pages) != 3 {
				t.Errorf("order %s: %d jobs on %d pages, want 120 on 3", order, len(all), len(pages))
			}
			for i := 1; i < len(all); i++ {
				if (order == "newest") != (all[i] < all[i-1]) {
					t.Fatalf("order %s: job %d after %d", order, all[i], all[i-1])
				}
			}
			// Previous from the last page is the middle page again.
			_, last, _ := e.get(t, pages[2])
			_, prev, _ := e.get(t, link(last, "prev"))
			_, mid, _ := e.get(t, pages[1])
			if fmt.Sprint(ids(prev)) != fmt.Sprint(ids(mid)) || link(mid, "prev") == "" {
				t.Errorf("order %s: previous of the last page is %v, want %v", order, ids(prev), ids(mid))
			}
		}
	})
}

func TestActions(t *testing.T) {
	stores(t, func(t *testing.T, s jobstore.Store) {
		e := newEnv(t, s, ui.Config{Token: token}, 0)
		ctx := context.Background()
		// Without the token: refused, nothing changed.
		for _, p := range []string{"/dead/confirm", "/dead/apply", fmt.Sprintf("/jobs/%d/requeue", e.sd.budget.ID)} {
			code, body, hdr := e.post(t, p, url.Values{"op": {"requeue"}, "ids": {fmt.Sprint(e.sd.budget.ID)}}, false)
			if code != 403 || !strings.Contains(body, "needs the dashboard") {
				t.Errorf("POST %s without the token: %d", p, code)
			}
			checkPage(t, "POST "+p, body, hdr)
		}
		// With the token, from another site: refused.
		if code, _, _ := e.post(t, "/dead/apply", url.Values{"op": {"requeue"}, "ids": {fmt.Sprint(e.sd.budget.ID)}}, true,
			"Sec-Fetch-Site", "cross-site"); code != 403 {
			t.Errorf("cross-site POST: %d, want 403", code)
		}
		if j, _ := e.client.Job(ctx, e.sd.budget.ID); j.State != queue.StateDead {
			t.Fatalf("a refused request changed job %d: %s", j.ID, j.State)
		}
		// The confirmation of a group states how many jobs it touches.
		_, dead, _ := e.get(t, "/dead")
		gid := ui.GroupID("email", "attempts", "dial tcp <addr>: i/o timeout")
		if !strings.Contains(dead, `data-group="`+gid+`"`) {
			t.Fatalf("no group %s on the dead-letter page", gid)
		}
		code, confirm, _ := e.post(t, "/dead/confirm", url.Values{"op": {"requeue"}, "group": {gid}}, true)
		if code != 200 || !strings.Contains(confirm, "Requeue 5 dead jobs?") {
			t.Fatalf("confirm: %d %s", code, confirm)
		}
		m := regexp.MustCompile(`name="ids" value="([0-9,]+)"`).FindStringSubmatch(confirm)
		if m == nil || len(strings.Split(m[1], ",")) != 5 {
			t.Fatalf("confirm: ids %v", m)
		}
		code, _, hdr := e.post(t, "/dead/apply", url.Values{"op": {"requeue"}, "ids": {m[1]}}, true)
		if code != 303 || !strings.Contains(hdr.Get("Location"), "done=requeue&n=5") {
			t.Fatalf("apply: %d %q", code, hdr.Get("Location"))
		}
		_, after, _ := e.get(t, hdr.Get("Location"))
		if !strings.Contains(after, "Requeued 5 jobs.") || strings.Contains(after, `data-group="`+gid+`"`) || !strings.Contains(after, "3 dead jobs") {
			t.Errorf("after requeue: the page does not show the change")
		}
		for _, j := range e.sd.refused {
			if j, _ := e.client.Job(ctx, j.ID); j.State != queue.StateAvailable || j.History[len(j.History)-1].Outcome != jobstore.OutcomeRequeued {
				t.Errorf("job %d after requeue: %s", j.ID, j.State)
			}
		}
		// A selection: delete one permanent job of its group.
		p := e.sd.permanent[0]
		gp := ui.GroupID("email", "permanent", "smtp <n>: mailbox <addr> unavailable")
		code, confirm, _ = e.post(t, "/dead/confirm", url.Values{"op": {"delete"}, "group": {gp}, "id": {fmt.Sprint(p.ID)}}, true)
		if code != 200 || !strings.Contains(confirm, "Delete 1 dead job?") {
			t.Fatalf("confirm selection: %d", code)
		}
		if code, _, hdr = e.post(t, "/dead/apply", url.Values{"op": {"delete"}, "ids": {fmt.Sprint(p.ID)}}, true); code != 303 || !strings.Contains(hdr.Get("Location"), "n=1") {
			t.Errorf("delete selection: %d %s", code, hdr.Get("Location"))
		}
		if _, err := e.client.Job(ctx, p.ID); err == nil {
			t.Errorf("job %d still exists after delete", p.ID)
		}
		// One job: requeue from its page.
		code, _, hdr = e.post(t, fmt.Sprintf("/jobs/%d/requeue", e.sd.budget.ID), nil, true)
		if code != 303 || !strings.Contains(hdr.Get("Location"), "n=1") {
			t.Errorf("requeue one: %d %s", code, hdr.Get("Location"))
		}
		if code, _, _ := e.post(t, fmt.Sprintf("/jobs/%d/explode", e.sd.budget.ID), nil, true); code != 404 {
			t.Errorf("unknown action: %d, want 404", code)
		}
		for _, form := range []url.Values{{"op": {"nuke"}, "ids": {"1"}}, {"op": {"requeue"}, "ids": {"x"}}, {"op": {"requeue"}}} {
			if code, _, _ := e.post(t, "/dead/apply", form, true); code != 400 {
				t.Errorf("apply %v: %d, want 400", form, code)
			}
		}
		if code, _, _ := e.post(t, "/dead/confirm", url.Values{"op": {"requeue"}, "id": {strings.Repeat("1,", 10001)}}, true); code != 400 {
			t.Errorf("confirm 10,001 jobs: %d, want 400", code)
		}
	})
}

func TestJobAndQueueActions(t *testing.T) {
	stores(t, func(t *testing.T, s jobstore.Store) {
		e := newEnv(t, s, ui.Config{Token: token}, 1)
		ctx := context.Background()
		later, _, err := e.client.Enqueue(t.Context(), "report", nil, queue.EnqueueOptions{Queue: "reports", In: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		// The job page offers what the job's state allows.
		for _, tc := range []struct {
			id        int64
			offer, no []string
		}{
			{later.ID, []string{"/run-now", "/cancel"}, []string{"/requeue", "/delete"}},
			{e.sd.waiting[0].ID, []string{"/cancel"}, []string{"/run-now", "/requeue", "/delete"}}, // due already
			{e.sd.retried.ID, []string{"/delete"}, []string{"/run-now", "/cancel", "/requeue"}},
			{e.sd.budget.ID, []string{"/requeue", "/delete"}, []string{"/run-now", "/cancel"}},
		} {
			_, body, _ := e.get(t, fmt.Sprintf("/jobs/%d", tc.id), "Authorization", "Bearer "+token)
			for _, o := range tc.offer {
				if !strings.Contains(body, fmt.Sprintf(`/jobs/%d%s"`, tc.id, o)) {
					t.Errorf("job %d: no %s action", tc.id, o)
				}
			}
			for _, o := range tc.no {
				if strings.Contains(body, fmt.Sprintf(`/jobs/%d%s"`, tc.id, o)) {
					t.Errorf("job %d: offers %s", tc.id, o)
				}
			}
		}
		act := func(id int64, op string, wantN int) {
			t.Helper()
			code, _, hdr := e.post(t, fmt.Sprintf("/jobs/%d/%s", id, op), nil, true)
			if code != 303 || !strings.Contains(hdr.Get("Location"), fmt.Sprintf("done=%s&n=%d", op, wantN)) {
				t.Errorf("%s job %d: %d %s", op, id, code, hdr.Get("Location"))
			}
		}
		act(later.ID, "run-now", 1)
		if j, _ := e.client.Job(ctx, later.ID); j.AvailableAt.After(time.Now()) {
			t.Errorf("run now: job %d still due at %v", j.ID, j.AvailableAt)
		}
		act(later.ID, "cancel", 1)
		if j, _ := e.client.Job(ctx, later.ID); j.State != queue.StateCancelled {
			t.Errorf("cancel: job %d is %s", j.ID, j.State)
		}
		act(later.ID, "cancel", 0) // already cancelled: nothing to do
		act(e.sd.retried.ID, "delete", 1)
		if _, err := e.client.Job(ctx, e.sd.retried.ID); err == nil {
			t.Errorf("delete: job %d still exists", e.sd.retried.ID)
		}
		act(e.sd.waiting[0].ID, "delete", 0) // available: never deleted
		// The dead-letter's delete takes dead jobs only, whatever the IDs.
		if code, _, hdr := e.post(t, "/dead/apply", url.Values{"op": {"delete"}, "ids": {fmt.Sprint(e.sd.waiting[0].ID)}}, true); code != 303 || !strings.Contains(hdr.Get("Location"), "n=0") {
			t.Errorf("dead-letter delete of a live job: %d %s", code, hdr.Get("Location"))
		}

		// Pause and resume a queue.
		code, _, hdr := e.post(t, "/queues/pause", url.Values{"queue": {"mail"}}, true)
		if code != 303 || !strings.Contains(hdr.Get("Location"), "done=pause&n=1") {
			t.Fatalf("pause: %d %s", code, hdr.Get("Location"))
		}
		if p, _ := e.client.Paused(ctx); len(p) != 1 || p[0].Queue != "mail" {
			t.Errorf("paused queues %+v, want mail", p)
		}
		_, body, _ := e.get(t, hdr.Get("Location"), "Authorization", "Bearer "+token)
		if !strings.Contains(body, `Queue &#34;mail&#34; paused.`) || !strings.Contains(body, `class="badge paused"`) || !strings.Contains(body, "Resume") {
			t.Errorf("overview after pause: no paused mark")
		}
		if code, _, hdr = e.post(t, "/queues/resume", url.Values{"queue": {"mail"}}, true); code != 303 || !strings.Contains(hdr.Get("Location"), "done=resume&n=1") {
			t.Errorf("resume: %d %s", code, hdr.Get("Location"))
		}
		if p, _ := e.client.Paused(ctx); len(p) != 0 {
			t.Errorf("paused queues after resume: %+v", p)
		}
		for _, tc := range []struct {
			path string
			form url.Values
			want int
		}{
			{"/queues/pause", url.Values{"queue": {""}}, 400},
			{"/queues/explode", url.Values{"queue": {"mail"}}, 404},
			{"/queues/pause", url.Values{"queue": {"mail"}}, 403}, // without the token, below
		} {
			code, _, _ := e.post(t, tc.path, tc.form, tc.want != 403)
			if code != tc.want {
				t.Errorf("POST %s %v: %d, want %d", tc.path, tc.form, code, tc.want)
			}
		}
	})
}

func TestLogin(t *testing.T) {
	stores(t, func(t *testing.T, s jobstore.Store) {
		e := newEnv(t, s, ui.Config{Token: token}, 0)
		if code, body, _ := e.post(t, "/login", url.Values{"token": {"wrong-token-wrong-token"}, "next": {"/dead"}}, false); code != 403 || !strings.Contains(body, "not the dashboard") {
			t.Errorf("wrong token: %d", code)
		}
		code, _, hdr := e.post(t, "/login", url.Values{"token": {token}, "next": {"//evil.example/"}}, false)
		cookie := hdr.Get("Set-Cookie")
		if code != 303 || hdr.Get("Location") != "/" || cookie == "" {
			t.Fatalf("login: %d %q %q", code, hdr.Get("Location"), cookie)
		}
		if strings.Contains(cookie, token) || !strings.Contains(cookie, "HttpOnly") || !strings.Contains(cookie, "SameSite=Strict") {
			t.Errorf("session cookie %q", cookie)
		}
		value := strings.SplitN(strings.SplitN(cookie, ";", 2)[0], "=", 2)[1]
		code, _, hdr = e.post(t, fmt.Sprintf("/jobs/%d/requeue", e.sd.budget.ID), nil, false, "Cookie", "heed_ui_session="+value)
		if code != 303 || !strings.Contains(hdr.Get("Location"), "n=1") {
			t.Errorf("requeue with the session cookie: %d %s", code, hdr.Get("Location"))
		}
		if code, _, _ := e.post(t, fmt.Sprintf("/jobs/%d/requeue", e.sd.budget.ID), nil, false, "Cookie", "heed_ui_session=forged"); code != 403 {
			t.Errorf("forged cookie: %d, want 403", code)
		}
		_, body, _ := e.get(t, "/", "Cookie", "heed_ui_session="+value)
		if !strings.Contains(body, "Sign out") {
			t.Errorf("signed in: no Sign out")
		}
	})
}

func TestReadOnly(t *testing.T) {
	stores(t, func(t *testing.T, s jobstore.Store) {
		e := newEnv(t, s, ui.Config{ReadOnly: true}, 0)
		for _, p := range []string{"/", "/dead", fmt.Sprintf("/jobs/%d", e.sd.budget.ID), fmt.Sprintf("/jobs/%d", e.sd.secret.ID)} {
			_, body, hdr := e.get(t, p)
			checkPage(t, p, body, hdr)
			if strings.Contains(body, `method="post"`) || strings.Contains(body, "Sign in") || strings.Contains(body, "Reveal") {
				t.Errorf("read-only %s: shows an action", p)
			}
		}
		for _, p := range []string{"/login", "/dead/apply", fmt.Sprintf("/jobs/%d/requeue", e.sd.budget.ID)} {
			if code, _, _ := e.post(t, p, url.Values{"token": {token}}, true); code != 404 && code != 405 {
				t.Errorf("read-only POST %s: %d, want no such route", p, code)
			}
		}
		if code, body, _ := e.get(t, fmt.Sprintf("/jobs/%d?reveal=1", e.sd.secret.ID), "Authorization", "Bearer "+token); code == 200 && strings.Contains(body, secretValue) {
			t.Errorf("read-only: revealed the args")
		}
	})
}

func TestNewErrors(t *testing.T) {
	stores(t, func(t *testing.T, s jobstore.Store) {
		c := queue.NewClient(s, queue.ClientConfig{})
		for _, cfg := range []ui.Config{{}, {Token: "short"}, {Token: token, Path: "jobs"}, {Token: token, Path: "/jobs"}, {ReadOnly: true, Refresh: -1}} {
			if h, err := ui.New(c, cfg); err == nil {
				h.Close()
				t.Errorf("New(%+v): no error", cfg)
			}
		}
		if _, err := ui.New(queue.NewClient(struct{ jobstore.Store }{s}, queue.ClientConfig{}), ui.Config{ReadOnly: true}); err == nil || !strings.Contains(err.Error(), "jobstore.Inspector") {
			t.Errorf("New over a store without Inspector: %v", err)
		}
		if _, err := ui.New(nil, ui.Config{ReadOnly: true}); err == nil {
			t.Errorf("New(nil): no error")
		}
	})
}
