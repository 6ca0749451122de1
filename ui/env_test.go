package ui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heed-go/heed/internal/leakcheck"
	"github.com/heed-go/heed/pgstore"
	"github.com/heed-go/heed/pgstore/pgstoretest"
	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
	"github.com/heed-go/heed/sqlitestore"
	"github.com/heed-go/heed/ui"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

const token = "test-token-0123456789abcdef"

// stores runs fn over a fresh SQLite store and, when
// HEED_TEST_POSTGRES_URL is set, a fresh PostgreSQL schema.
func stores(t *testing.T, fn func(t *testing.T, s jobstore.Store)) {
	t.Run("sqlite", func(t *testing.T) {
		s, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "heed.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		fn(t, s)
	})
	t.Run("postgres", func(t *testing.T) {
		if os.Getenv("HEED_TEST_POSTGRES_URL") == "" {
			t.Skip("HEED_TEST_POSTGRES_URL is not set: the PostgreSQL handler tests are skipped")
		}
		_, u := pgstoretest.Schema(t)
		s, err := pgstore.Open(t.Context(), u)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		fn(t, s)
	})
}

// step is one attempt of a scripted job: it starts at offset at (from
// the job's enqueue) and takes took, then the decision.
type step struct {
	at, took time.Duration
	outcome  string
	action   string // "done", "retry", "give_up"
	reason   string
	delay    time.Duration
	err      string
}

// script enqueues a job at base and runs its steps through the store.
func script(t testing.TB, s jobstore.Store, base time.Time, kind, q, args string, policy queue.JobPolicy, steps ...step) *queue.Job {
	t.Helper()
	ctx := context.Background()
	in, err := queue.NewJobInsert(kind, json.RawMessage(args), queue.EnqueueOptions{Queue: q, Policy: policy}, base)
	if err != nil {
		t.Fatal(err)
	}
	j, _, err := s.JobInsert(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	for i, st := range steps {
		start := base.Add(st.at)
		cl, err := s.JobClaim(ctx, jobstore.ClaimParams{Queue: q, Limit: 1, Now: start, LeaseUntil: start.Add(time.Minute), Worker: "worker-1"})
		if err != nil || len(cl) != 1 || cl[0].ID != j.ID {
			t.Fatalf("job %d step %d: claim at %v: %v, %v", j.ID, i, start, cl, err)
		}
		c := cl[0]
		fin := start.Add(st.took)
		tr := jobstore.Transition{ID: c.ID, LeaseToken: c.LeaseToken, Attempt: c.Attempt,
			Entry: queue.Attempt{Attempt: c.Attempt, Worker: "worker-1", StartedAt: start, FinishedAt: fin,
				Outcome: st.outcome, Error: st.err, Action: st.action, Reason: st.reason, Delay: st.delay}}
		switch st.action {
		case "done":
			tr.State, tr.FinishedAt = queue.StateSucceeded, fin
		case "retry":
			tr.State, tr.AvailableAt = queue.StateAvailable, fin.Add(st.delay)
		default:
			tr.State, tr.FinishedAt, tr.DeadReason = queue.StateDead, fin, st.reason
		}
		if err := s.JobTransition(ctx, tr); err != nil {
			t.Fatal(err)
		}
	}
	j, err = s.JobGet(ctx, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// seeded are the jobs seed made.
type seeded struct {
	retried   *queue.Job   // succeeded on attempt 3
	budget    *queue.Job   // dead: time budget, after pushback
	permanent []*queue.Job // dead: permanent, one group
	refused   []*queue.Job // dead: attempts, one group of 5 (addresses differ)
	secret    *queue.Job   // available, with a secret in its args
	waiting   []*queue.Job // available in queue bulk
}

const secretValue = "sk_live_9f8e7d6c5b4a3f2e1d0c"

// seed fills s with the jobs of seeded, their attempts within the last
// hour before now.
func seed(t testing.TB, s jobstore.Store, now time.Time, bulk int) seeded {
	var sd seeded
	base := now.Add(-50 * time.Minute)
	tr := func(at, took, delay time.Duration, err string) step {
		return step{at: at, took: took, outcome: "transient", action: "retry", reason: "transient", delay: delay, err: err}
	}
	sd.retried = script(t, s, base, "email", "mail", `{"to":"ann@example.com"}`, queue.JobPolicy{},
		tr(0, 80*time.Millisecond, time.Second, "dial tcp 10.0.0.7:25: connect: connection refused"),
		tr(1100*time.Millisecond, 90*time.Millisecond, 2*time.Second, "dial tcp 10.0.0.7:25: connect: connection refused"),
		step{at: 3300 * time.Millisecond, took: 120 * time.Millisecond, outcome: "ok", action: "done"})
	sd.budget = script(t, s, base.Add(2*time.Minute), "charge", "billing", `{"order":1042,"amount":1999}`, queue.JobPolicy{TimeBudget: 10 * time.Second},
		tr(0, 200*time.Millisecond, 500*time.Millisecond, "POST https://pay.example.com/charges: 502 Bad Gateway"),
		tr(700*time.Millisecond, 250*time.Millisecond, time.Second, "POST https://pay.example.com/charges: 502 Bad Gateway"),
		step{at: 1950 * time.Millisecond, took: 300 * time.Millisecond, outcome: "pushback", action: "retry", reason: "pushback", delay: 4 * time.Second, err: "POST https://pay.example.com/charges: 429 Too Many Requests"},
		tr(6250*time.Millisecond, 400*time.Millisecond, 2*time.Second, "POST https://pay.example.com/charges: 503 Service Unavailable"),
		step{at: 8650 * time.Millisecond, took: 350 * time.Millisecond, outcome: "transient", action: "give_up", reason: "time_budget", err: "POST https://pay.example.com/charges: 503 Service Unavailable"})
	for i := range 2 {
		sd.permanent = append(sd.permanent, script(t, s, base.Add(time.Duration(10+i)*time.Minute), "email", "mail",
			fmt.Sprintf(`{"to":"user%d@example.com"}`, i), queue.JobPolicy{},
			step{took: 40 * time.Millisecond, outcome: "permanent", action: "give_up", reason: "permanent",
				err: fmt.Sprintf("smtp 550: mailbox user%d@example.com unavailable", i)}))
	}
	for i := range 5 {
		steps := []step{}
		for a := range 3 {
			steps = append(steps, tr(time.Duration(a)*2*time.Second, 30*time.Millisecond, time.Second, fmt.Sprintf("dial tcp 10.0.3.%d:25: i/o timeout", i+1)))
		}
		steps[2].action, steps[2].reason, steps[2].delay = "give_up", "attempts", 0
		sd.refused = append(sd.refused, script(t, s, base.Add(time.Duration(20+i*5)*time.Minute), "email", "mail",
			fmt.Sprintf(`{"to":"bob%d@example.com"}`, i), queue.JobPolicy{}, steps...))
	}
	sd.secret = script(t, s, now.Add(-time.Minute), "webhook", "hooks", `{"url":"https://hooks.example.com/in","api_key":"`+secretValue+`"}`, queue.JobPolicy{})
	for i := range bulk {
		sd.waiting = append(sd.waiting, script(t, s, now.Add(-time.Duration(bulk-i)*time.Second), "resize", "bulk", fmt.Sprintf(`{"image":%d}`, i), queue.JobPolicy{}))
	}
	return sd
}

// env is a dashboard over a seeded store, served on loopback.
type env struct {
	srv    *httptest.Server
	client *queue.Client
	h      *ui.Handler
	sd     seeded
}

func newEnv(t *testing.T, s jobstore.Store, cfg ui.Config, bulk int) *env {
	t.Helper()
	e := &env{client: queue.NewClient(s, queue.ClientConfig{Operator: "test"})}
	e.sd = seed(t, s, time.Now().UTC(), bulk)
	h, err := ui.New(e.client, cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.h = h
	e.srv = httptest.NewServer(h)
	t.Cleanup(func() {
		e.srv.Close()
		h.Close()
	})
	return e
}

// get fetches path and returns the status and body.
func (e *env) get(t *testing.T, path string, hdr ...string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest("GET", e.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return e.do(t, req)
}

// post sends a form to path, as a same-origin browser would, with the
// token when auth, and does not follow redirects.
func (e *env) post(t *testing.T, path string, form url.Values, auth bool, hdr ...string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest("POST", e.srv.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	if auth {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return e.do(t, req)
}

func (e *env) do(t *testing.T, req *http.Request) (int, string, http.Header) {
	t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b), resp.Header
}
