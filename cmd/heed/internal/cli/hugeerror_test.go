package cli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/cmd/heed/internal/jobtext"
	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
	"github.com/heed-go/heed/retry"
	"github.com/heed-go/heed/sqlitestore"
)

// hugeErrorAttempts is how many attempts the job with a 10 MB error makes.
const hugeErrorAttempts = 3

// hugeErrorDB makes a SQLite database holding one dead job whose handler
// failed hugeErrorAttempts times with a 10 MB error, and returns its path
// and its size before and after the attempts: the database file with the
// store closed (SQLite then checkpoints and removes its WAL), and, while
// the store was open, the database and its WAL file.
func hugeErrorDB(tb testing.TB) (path string, before, after, afterWAL int64) {
	tb.Helper()
	ctx := context.Background()
	path = filepath.Join(tb.TempDir(), "jobs.db")
	st, err := sqlitestore.Open(ctx, path)
	if err != nil {
		tb.Fatal(err)
	}
	defer st.Close()
	c := queue.NewClient(st, queue.ClientConfig{})
	if _, _, err := c.Enqueue(ctx, "huge", nil, queue.EnqueueOptions{MaxAttempts: hugeErrorAttempts}); err != nil {
		tb.Fatal(err)
	}
	if err := st.Close(); err != nil {
		tb.Fatal(err)
	}
	before = dbSize(tb, path)
	if st, err = sqlitestore.Open(ctx, path); err != nil {
		tb.Fatal(err)
	}

	huge := errors.New("boom: " + strings.Repeat("x", 10<<20))
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	w, err := queue.NewWorker(st, queue.WorkerConfig{
		Policy:       retry.Policy{Backoff: backoff.Schedule{Kind: backoff.Immediate}},
		PollInterval: 5 * time.Millisecond,
		Observe: func(_ context.Context, e queue.Event) {
			if e.Kind == queue.EventDead {
				stop()
			}
		},
	})
	if err != nil {
		tb.Fatal(err)
	}
	queue.Handle(w, "huge", func(context.Context, *queue.Job, struct{}) error { return huge })
	if err := w.Run(wctx); err != nil && !errors.Is(err, context.Canceled) {
		tb.Fatal(err)
	}
	afterWAL = dbSize(tb, path)
	if err := st.Close(); err != nil {
		tb.Fatal(err)
	}
	return path, before, dbSize(tb, path), afterWAL
}

// dbSize is the size of the SQLite database at path, its WAL included.
func dbSize(tb testing.TB, path string) int64 {
	var n int64
	for _, p := range []string{path, path + "-wal"} {
		if fi, err := os.Stat(p); err == nil {
			n += fi.Size()
		} else if !errors.Is(err, os.ErrNotExist) {
			tb.Fatal(err)
		}
	}
	return n
}

// A handler's 10 MB error: the database grows by less than 100 KB per
// attempt, and neither heed jobs ls, show nor a worker line prints it
// whole.
func TestHugeErrorIsBounded(t *testing.T) {
	path, before, after, afterWAL := hugeErrorDB(t)
	perAttempt, perAttemptWAL := (after-before)/hugeErrorAttempts, (afterWAL-before)/hugeErrorAttempts
	t.Logf("database: %d bytes before, %d after %d attempts (%d with the WAL, store open): %d bytes per attempt (%d with the WAL)",
		before, after, hugeErrorAttempts, afterWAL, perAttempt, perAttemptWAL)
	if perAttempt >= 100_000 || perAttemptWAL >= 100_000 {
		t.Errorf("the database grew by %d bytes per attempt (%d with the WAL), want < 100 KB", perAttempt, perAttemptWAL)
	}
	for _, args := range [][]string{{"jobs", "ls"}, {"jobs", "ls", "--json"}, {"jobs", "show", "1"}, {"jobs", "show", "--json", "1"}} {
		code, stdout, stderr := heed(t, "", append(args, "--db", path)...)
		if code != 0 || len(stdout) > hugeErrorAttempts*(jobstore.MaxErrorText+2048) || !strings.Contains(stdout, " MB cut]") && !strings.Contains(stdout, "…") {
			t.Errorf("heed %s: exit %d, %d bytes of output: %.300s%s", strings.Join(args, " "), code, len(stdout), stdout, stderr)
		}
	}
	line := workerDecision(retry.Decision{Attempt: 1, Action: retry.Retry, Err: errors.New(strings.Repeat("y", 10<<20))})
	if len(line) > maxLine || !strings.Contains(line, " MB cut]") {
		t.Errorf("worker line: %d bytes, ending %q", len(line), line[max(0, len(line)-30):])
	}
}

// BenchmarkJobsLsHugeError measures heed jobs ls (the whole command:
// opening the database, listing, printing) over a job whose handler
// failed three times with a 10 MB error. The target: under 100 ms.
func BenchmarkJobsLsHugeError(b *testing.B) {
	path, _, _, _ := hugeErrorDB(b)
	ctx := context.Background()
	for b.Loop() {
		var out, errOut strings.Builder
		if code := Main(ctx, []string{"jobs", "ls", "--db", path}, strings.NewReader(""), &out, &errOut); code != 0 {
			b.Fatalf("exit %d: %s", code, errOut.String())
		}
	}
}

// heed jobs show says where a long history was cut.
func TestJobsShowCutHistory(t *testing.T) {
	var b strings.Builder
	j := &queue.Job{ID: 1, Kind: "k", Queue: "q", Args: []byte(`{}`), State: queue.StateAvailable, History: []queue.Attempt{
		{Attempt: 1, Outcome: "transient", Action: "retry"},
		{Outcome: jobstore.OutcomeCut, Action: "cut", Cut: 57},
		{Attempt: 59, Outcome: "transient", Action: "retry"},
	}}
	jobtext.Write(&b, j, time.Now())
	if !strings.Contains(b.String(), "... 57 entries cut (the history keeps the first and the last 100)") {
		t.Errorf("no cut line:\n%s", b.String())
	}
}

// Rows written before the caps are printed cut as the queue cuts today.
func TestRedactJobCutsLegacyHistory(t *testing.T) {
	j := &queue.Job{ID: 1, Args: []byte(`{"token":"x"}`), History: []queue.Attempt{{Attempt: 1, Error: "ok"}, {Attempt: 2, Error: strings.Repeat("e", 10<<20)}}}
	c := jobtext.Redact(j, true)
	if len(c.History[1].Error) > jobstore.MaxErrorText || len(j.History[1].Error) != 10<<20 || c.History[0].Error != "ok" || string(c.Args) != `{"token":"x"}` {
		t.Errorf("jobtext.Redact(reveal): %d bytes of error, args %s", len(c.History[1].Error), c.Args)
	}
	if c := jobtext.Redact(j, false); string(c.Args) != `{"token":"REDACTED"}` {
		t.Errorf("redactJob: args %s", c.Args)
	}
}
