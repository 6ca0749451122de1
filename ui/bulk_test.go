package ui_test

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/heed-go/heed/queue/jobstore"
	"github.com/heed-go/heed/ui"
)

// TestBulk: an action on a filtered list or a selection is confirmed on
// a page that says how many jobs it takes, and applied to those only,
// with the token, from the dashboard's own pages; a read-only dashboard
// has none.
func TestBulk(t *testing.T) {
	stores(t, func(t *testing.T, s jobstore.Store) {
		e := newEnv(t, s, ui.Config{Token: token}, 3)
		ctx := t.Context()
		auth := []string{"Authorization", "Bearer " + token}
		if _, body, _ := e.get(t, "/jobs?state=dead"); strings.Contains(body, "bulk/confirm") {
			t.Errorf("GET /jobs without the token shows bulk actions")
		}
		_, list, hdr := e.get(t, "/jobs?state=dead&kind=email", auth...)
		checkPage(t, "GET /jobs", list, hdr)
		for _, want := range []string{`action="/bulk/confirm"`, `name="state" value="dead"`, `name="kind" value="email"`,
			`value="retry"`, `value="cancel"`, `value="delete"`, "the jobs with kind email, state dead", `name="id" value="`} {
			if !strings.Contains(list, want) {
				t.Errorf("GET /jobs?state=dead&kind=email: no %q", want)
			}
		}
		for _, tc := range []struct {
			form url.Values
			want []string
		}{
			{url.Values{"op": {"retry"}, "state": {"dead"}, "kind": {"email"}}, []string{"Retry 7 jobs?", "selects 7 jobs;", "all are dead"}},
			{url.Values{"op": {"retry"}}, []string{"Retry 8 jobs?", "The filter (every job) selects 13 jobs", "8 are dead", "leaves the other 5 alone"}},
			{url.Values{"op": {"cancel"}, "queue": {"bulk"}}, []string{"Cancel 3 jobs?", "available or running"}},
			{url.Values{"op": {"delete"}, "state": {"succeeded"}}, []string{"Delete 1 job?", "cannot be undone"}},
			{url.Values{"op": {"cancel"}, "id": {fmt.Sprint(e.sd.retried.ID)}}, []string{"Cancel 0 jobs?", "You selected 1 job", "none is available or running", "Back to the list"}},
		} {
			code, body, hdr := e.post(t, "/bulk/confirm", tc.form, true)
			if code != 200 {
				t.Errorf("confirm %v: %d\n%s", tc.form, code, body)
				continue
			}
			checkPage(t, "POST /bulk/confirm", body, hdr)
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("confirm %v: no %q in\n%s", tc.form, w, body)
				}
			}
		}
		// Apply the confirmed retry: exactly the confirmed jobs, back to
		// the list with its filter and the count.
		_, confirm, _ := e.post(t, "/bulk/confirm", url.Values{"op": {"retry"}, "state": {"dead"}, "kind": {"email"}}, true)
		m := regexp.MustCompile(`name="ids" value="([0-9,]+)"`).FindStringSubmatch(confirm)
		b := regexp.MustCompile(`name="back" value="([^"]+)"`).FindStringSubmatch(confirm)
		if m == nil || b == nil {
			t.Fatalf("no ids or back in the confirmation:\n%s", confirm)
		}
		back := strings.ReplaceAll(b[1], "&amp;", "&")
		for _, bad := range []struct {
			form url.Values
			auth bool
			hdr  []string
		}{
			{url.Values{"op": {"retry"}, "ids": {m[1]}}, false, nil},
			{url.Values{"op": {"retry"}, "ids": {m[1]}}, true, []string{"Sec-Fetch-Site", "cross-site"}},
			{url.Values{"op": {"requeue"}, "ids": {m[1]}}, true, nil},
			{url.Values{"op": {"retry"}}, true, nil},
		} {
			if code, _, _ := e.post(t, "/bulk/apply", bad.form, bad.auth, bad.hdr...); code != 403 && code != 400 {
				t.Errorf("POST /bulk/apply %v (token %v, %v): %d, want refused", bad.form, bad.auth, bad.hdr, code)
			}
		}
		if st, _ := e.client.Stats(ctx); st.Dead != 8 {
			t.Fatalf("a refused request changed the dead-letter: %d dead", st.Dead)
		}
		code, _, hdr := e.post(t, "/bulk/apply", url.Values{"op": {"retry"}, "ids": {m[1]}, "back": {back}}, true)
		loc := hdr.Get("Location")
		if code != 303 || !strings.Contains(loc, "n=7") || !strings.Contains(loc, "state=dead") || !strings.Contains(loc, "kind=email") {
			t.Fatalf("POST /bulk/apply: %d %s", code, loc)
		}
		if _, after, _ := e.get(t, loc); !strings.Contains(after, "Requeued 7 jobs.") {
			t.Errorf("after the retry: no flash")
		}
		if st, _ := e.client.Stats(ctx); st.Dead != 1 {
			t.Errorf("after retrying 7 of 8 dead jobs: %d dead", st.Dead)
		}
		// A back link that is not a list's query is not followed.
		_, _, hdr = e.post(t, "/bulk/apply", url.Values{"op": {"cancel"}, "ids": {fmt.Sprint(e.sd.waiting[0].ID)}, "back": {"//evil.example/x?state=dead"}}, true)
		if loc := hdr.Get("Location"); !strings.HasPrefix(loc, "/jobs?") || strings.Contains(loc, "evil") || !strings.Contains(loc, "n=1") {
			t.Errorf("POST /bulk/apply with a foreign back: Location %q", loc)
		}
		// Read-only: no such routes, no buttons.
		ro := newEnv(t, s, ui.Config{ReadOnly: true}, 0)
		if code, _, _ := ro.post(t, "/bulk/confirm", url.Values{"op": {"delete"}}, true); code == 200 || code == 303 {
			t.Errorf("read-only POST /bulk/confirm: %d", code)
		}
		if code, _, _ := ro.post(t, "/bulk/apply", url.Values{"op": {"delete"}, "ids": {fmt.Sprint(e.sd.retried.ID)}}, true); code == 200 || code == 303 {
			t.Errorf("read-only POST /bulk/apply: %d", code)
		}
		if _, body, _ := ro.get(t, "/jobs", auth...); strings.Contains(body, "bulk/confirm") {
			t.Errorf("read-only /jobs shows bulk actions")
		}
	})
}
