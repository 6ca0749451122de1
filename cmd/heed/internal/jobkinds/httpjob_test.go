package jobkinds

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/internal/redact"
	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/retry"
	"github.com/heed-go/heed/sqlitestore"
)

// request is what a test server saw of one request.
type request struct {
	method, body, key, contentType, auth string
}

// answering returns a server that answers the statuses in turn (the last
// one for ever after) and records every request.
func answering(t *testing.T, statuses ...int) (*httptest.Server, func() []request) {
	var mu sync.Mutex
	var seen []request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, request{r.Method, string(b), r.Header.Get("Idempotency-Key"), r.Header.Get("Content-Type"), r.Header.Get("Authorization")})
		code := statuses[min(len(seen), len(statuses))-1]
		mu.Unlock()
		w.WriteHeader(code)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []request {
		mu.Lock()
		defer mu.Unlock()
		return append([]request(nil), seen...)
	}
}

// runJob enqueues an http job with args as heed jobs enqueue does
// (Prepare), drains a worker with the built-in kinds over a fresh SQLite
// store, and returns the job as it ended.
func runJob(t *testing.T, args string) *queue.Job {
	t.Helper()
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "heed.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	raw, err := Prepare("http", json.RawMessage(args))
	if err != nil {
		t.Fatal(err)
	}
	c := queue.NewClient(st, queue.ClientConfig{})
	j, _, err := c.Enqueue(ctx, "http", raw, queue.EnqueueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := queue.NewWorker(st, queue.WorkerConfig{PollInterval: 10 * time.Millisecond,
		Policy: retry.Policy{Backoff: backoff.Schedule{Base: time.Millisecond, Cap: 2 * time.Millisecond}}})
	if err != nil {
		t.Fatal(err)
	}
	Register(w, Config{})
	if _, err := w.Drain(ctx, queue.DrainOptions{}); err != nil {
		t.Fatal(err)
	}
	j, err = c.Job(ctx, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// A POST job with a JSON body, against a server that answers 503 and then
// 201: the job's Idempotency-Key, made at enqueue, makes the POST safe to
// repeat, so it succeeds on its second request, which carries the same
// body and the same key.
func TestHTTPPostJobRetriedWithItsKey(t *testing.T) {
	srv, seen := answering(t, 503, 201)
	body := `{"order": 7, "note": "two \"quoted\" words"}`
	args, _ := json.Marshal(map[string]any{"url": srv.URL + "/orders", "method": "POST", "body": body,
		"headers": map[string]string{"Content-Type": "application/json", "Authorization": "Bearer s3cr3t-t0ken"}})
	j := runJob(t, string(args))
	reqs := seen()
	if j.State != queue.StateSucceeded || j.Attempt != 2 || len(reqs) != 2 {
		t.Fatalf("job %s after %d attempts, %d requests; want succeeded after 2 attempts and 2 requests", j.State, j.Attempt, len(reqs))
	}
	for i, r := range reqs {
		if r.method != "POST" || r.body != body || r.contentType != "application/json" || r.auth != "Bearer s3cr3t-t0ken" {
			t.Errorf("request %d: %+v, want the job's body and headers", i+1, r)
		}
	}
	if k := reqs[0].key; len(k) != 38 || k[0] != '"' || reqs[1].key != k {
		t.Errorf("Idempotency-Keys %q and %q, want one quoted UUID on both", reqs[0].key, reqs[1].key)
	}
	// The key and the credential are stored with the job, and never shown.
	shown := string(redact.JSON(j.Args))
	if strings.Contains(shown, "s3cr3t") || strings.Contains(shown, strings.Trim(reqs[0].key, `"`)) || !strings.Contains(shown, `"order\": 7`) {
		t.Errorf("the job's arguments as shown: %s", shown)
	}
}

// Without keys the POST is sent once: keyed_retries_off (a server that
// ignores Idempotency-Key) sends the key but lets retryhttp decide that a
// POST answered 503 is not safe to repeat, and the job goes to the
// dead-letter after one request.
func TestHTTPPostJobKeyedRetriesOff(t *testing.T) {
	srv, seen := answering(t, 503, 201)
	j := runJob(t, `{"url": "`+srv.URL+`", "method": "POST", "body": "x", "keyed_retries_off": true}`)
	if reqs := seen(); j.State != queue.StateDead || len(reqs) != 1 || reqs[0].body != "x" {
		t.Errorf("job %s (%s) after %d requests %+v; want dead after 1", j.State, j.DeadReason, len(reqs), reqs)
	}
}

func TestPrepare(t *testing.T) {
	key := func(raw json.RawMessage) string {
		var a httpArgs
		if err := json.Unmarshal(raw, &a); err != nil {
			t.Fatal(err)
		}
		v, _ := headerIn(a.Headers, "Idempotency-Key")
		return v
	}
	for _, tt := range []struct {
		args string
		want string // the key: "new" for a generated one
	}{
		{`{"url": "https://x/", "method": "POST"}`, "new"},
		{`{"url": "https://x/", "method": "PATCH", "headers": {"Accept": "*/*"}}`, "new"},
		{`{"url": "https://x/", "method": "POST", "headers": {"idempotency-key": "mine"}}`, "mine"},
		{`{"url": "https://x/"}`, ""},
		{`{"url": "https://x/", "method": "PUT"}`, ""},
	} {
		raw, err := Prepare("http", json.RawMessage(tt.args))
		if err != nil {
			t.Fatalf("Prepare(%s): %v", tt.args, err)
		}
		got := key(raw)
		if tt.want == "new" && (len(got) != 38 || got == key(must(Prepare("http", json.RawMessage(tt.args))))) ||
			tt.want != "new" && got != tt.want {
			t.Errorf("Prepare(%s) = %s: key %q, want %s", tt.args, raw, got, tt.want)
		}
		if err := Validate("http", raw); err != nil {
			t.Errorf("Prepare(%s) = %s, which Validate refuses: %v", tt.args, raw, err)
		}
	}
	if raw, err := Prepare("noop", nil); err != nil || raw != nil {
		t.Errorf("Prepare(noop) = %s, %v; want the arguments unchanged", raw, err)
	}
	if _, err := Prepare("http", json.RawMessage(`{}`)); err == nil {
		t.Error("Prepare of invalid arguments: no error")
	}
}

func must(raw json.RawMessage, err error) json.RawMessage {
	if err != nil {
		panic(err)
	}
	return raw
}
