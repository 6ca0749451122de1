package ui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
	"github.com/heed-go/heed/sqlitestore"
	"github.com/heed-go/heed/ui"
)

// killMany enqueues n jobs of kind in queue q and sends each to the
// dead-letter on its first attempt, at now, with the error text errOf(i).
func killMany(t testing.TB, s jobstore.Store, now time.Time, n int, kind, q string, errOf func(i int) string) {
	t.Helper()
	ctx := t.Context()
	ins := make([]jobstore.JobInsert, n)
	for i := range ins {
		in, err := queue.NewJobInsert(kind, json.RawMessage(`{}`), queue.EnqueueOptions{Queue: q}, now)
		if err != nil {
			t.Fatal(err)
		}
		ins[i] = in
	}
	if _, err := s.(jobstore.BatchInserter).JobInsertMany(ctx, ins); err != nil {
		t.Fatal(err)
	}
	for done := 0; done < n; {
		cl, err := s.JobClaim(ctx, jobstore.ClaimParams{Queue: q, Limit: 500, Now: now, LeaseUntil: now.Add(time.Minute), Worker: "worker-1"})
		if err != nil || len(cl) == 0 {
			t.Fatalf("claim: %d jobs, %v", len(cl), err)
		}
		ts := make([]jobstore.Transition, len(cl))
		for i, c := range cl {
			ts[i] = jobstore.Transition{ID: c.ID, LeaseToken: c.LeaseToken, Attempt: c.Attempt, State: queue.StateDead, FinishedAt: now, DeadReason: "permanent",
				Entry: queue.Attempt{Attempt: c.Attempt, Worker: "worker-1", StartedAt: now, FinishedAt: now,
					Outcome: "permanent", Error: errOf(done + i), Action: "give_up", Reason: "permanent"}}
		}
		errs, err := s.(jobstore.TransitionBatcher).JobTransitions(ctx, ts)
		if err != nil {
			t.Fatal(err)
		}
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		done += len(cl)
	}
}

// TestDeadCausesAll: 1,000 jobs dead with one cause and then 2,500 with
// another: the dead-letter shows both causes with their counts (it
// groups every dead job, not the newest 2,000), each links to its jobs,
// and an action on a group states how many jobs it takes.
func TestDeadCausesAll(t *testing.T) {
	stores(t, func(t *testing.T, s jobstore.Store) {
		now := time.Now().UTC()
		killMany(t, s, now.Add(-time.Hour), 1000, "charge", "billing", func(i int) string {
			return fmt.Sprintf("POST https://pay.example.com/charges/%d: 402 card declined (request req_%08x)", i, i*7919)
		})
		killMany(t, s, now.Add(-time.Minute), 2500, "notify", "mail", func(i int) string {
			return fmt.Sprintf("smtp 550: mailbox user%d@example.com unavailable", i)
		})
		e := newEnv(t, s, ui.Config{Token: token}, 0)
		code, body, hdr := e.get(t, "/dead")
		if code != 200 {
			t.Fatalf("GET /dead: %d\n%s", code, body)
		}
		checkPage(t, "GET /dead", body, hdr)
		for _, want := range []string{"3,508 dead jobs", "All grouped",
			`>2,500</a></td><td>notify</td><td>permanent</td>`, "smtp &lt;n&gt;: mailbox &lt;addr&gt; unavailable",
			`>1,000</a></td><td>charge</td><td>permanent</td>`, "&lt;url&gt;: &lt;n&gt; card declined"} {
			if !strings.Contains(body, want) {
				t.Errorf("GET /dead: no %q in the page:\n%s", want, body)
			}
		}
		m := regexp.MustCompile(`<a href="/dead/([0-9a-f]+)">2,500</a>`).FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("no link to the group of 2,500")
		}
		code, group, _ := e.get(t, "/dead/"+m[1])
		if code != 200 || !strings.Contains(group, "2,500 dead notify jobs") || strings.Count(group, `<td class="num"><a href="/jobs/`) != 200 {
			t.Errorf("GET /dead/%s: %d, %d jobs listed\n%.2000s", m[1], code, strings.Count(group, `<td class="num"><a href="/jobs/`), group)
		}
		code, confirm, _ := e.post(t, "/dead/confirm", map[string][]string{"op": {"requeue"}, "group": {m[1]}}, true)
		if code != 200 || !strings.Contains(confirm, "Requeue 2,500 dead jobs?") {
			t.Errorf("confirm the group: %d\n%.1500s", code, confirm)
		}
	})
}

// behindStore is a store one release behind: it has no index of causes.
type behindStore struct{ *sqlitestore.Store }

func (behindStore) DeadCauseCounts(context.Context, int) ([]jobstore.DeadCauseCount, error) {
	return nil, fmt.Errorf("no such column: dead_cause: %w", jobstore.ErrSchemaTooOld)
}

// TestDeadCausesBehind: over a database one release behind, the
// dead-letter groups the newest dead jobs, and says why.
func TestDeadCausesBehind(t *testing.T) {
	s, err := sqlitestore.Open(t.Context(), filepath.Join(t.TempDir(), "heed.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	e := newEnv(t, behindStore{s}, ui.Config{Token: token}, 0)
	code, body, _ := e.get(t, "/dead")
	if code != 200 || !strings.Contains(body, "8 dead jobs") || !strings.Contains(body, "one release behind") ||
		!strings.Contains(body, "dial tcp &lt;addr&gt;: i/o timeout") {
		t.Fatalf("GET /dead: %d\n%s", code, body)
	}
	gid := regexp.MustCompile(`<a href="/dead/([0-9a-f]+)">5</a>`).FindStringSubmatch(body)
	if gid == nil {
		t.Fatal("no group of 5")
	}
	if code, group, _ := e.get(t, "/dead/"+gid[1]); code != 200 || strings.Count(group, `<td class="num"><a href="/jobs/`) != 5 {
		t.Errorf("GET /dead/%s: %d\n%s", gid[1], code, group)
	}
}
