//go:build unix

package crashtest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/heed-go/heed/pgstore"
	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
)

// TestAttemptLimitThroughServerCrash stops the PostgreSQL server with
// -m immediate (a crash: what its workers committed with
// synchronous_commit=off and the server had not flushed is lost) several
// times while three `heed jobs work` processes run http jobs that always
// fail, with --attempts 3, and counts the requests each job made on a
// loopback server: none may make more than 3, and every job must end dead.
//
// It needs a server of its own, since it stops it: HEED_CRASH_PG_URL
// names it and HEED_CRASH_PG_RESTART is a shell command that stops it
// with -m immediate and starts it again (see internal/crashtest's README
// note in the test log). HEED_CRASH_JOBS (default 20,000) and
// HEED_CRASH_STOPS (default 3) size the run.
func TestAttemptLimitThroughServerCrash(t *testing.T) {
	base, restart := os.Getenv("HEED_CRASH_PG_URL"), os.Getenv("HEED_CRASH_PG_RESTART")
	if base == "" || restart == "" {
		t.Skip("HEED_CRASH_PG_URL and HEED_CRASH_PG_RESTART not set: skipping the server crash test (it stops the server)")
	}
	if testing.Short() {
		t.Skip("server crash test: a few minutes")
	}
	n, stops := envInt("HEED_CRASH_JOBS", 20000), envInt("HEED_CRASH_STOPS", 3)
	const workers, attempts = 3, 3
	bin := buildHeed(t)
	dsn := freshSchema(t, base)
	ctx := context.Background()
	st, err := pgstore.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	// Every request fails with 500, after a few milliseconds, so that the
	// stops find attempts running; each job's requests are counted.
	var mu sync.Mutex
	hits := make([]int, n)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/j/"))
		if err != nil || i < 0 || i >= n {
			http.Error(w, "no such job", http.StatusNotFound)
			return
		}
		mu.Lock()
		hits[i]++
		mu.Unlock()
		time.Sleep(3 * time.Millisecond)
		http.Error(w, "failing on purpose", http.StatusInternalServerError)
	}))
	defer srv.Close()

	start := time.Now()
	tx, err := st.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, _, err := st.EnqueueTx(ctx, tx, "http", map[string]any{"url": fmt.Sprintf("%s/j/%d", srv.URL, i)}, queue.EnqueueOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("enqueued %d jobs in %v", n, time.Since(start).Round(time.Millisecond))

	args := []string{"jobs", "work", "--db", dsn, "--quiet", "--concurrency", "16", "--lease", "2s",
		"--poll", "50ms", "--attempts", strconv.Itoa(attempts), "--base", "10ms", "--cap", "50ms", "--grace", "5s"}
	var logMu sync.Mutex
	var logs strings.Builder
	type proc struct {
		cmd  *exec.Cmd
		done chan struct{}
	}
	startWorker := func() *proc {
		cmd := exec.Command(bin, args...)
		w := &lockedWriter{mu: &logMu, b: &logs}
		cmd.Stdout, cmd.Stderr = w, w
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		p := &proc{cmd: cmd, done: make(chan struct{})}
		go func() { cmd.Wait(); close(p.done) }()
		return p
	}
	procs := make([]*proc, workers)
	for i := range procs {
		procs[i] = startWorker()
	}
	// keep restarts a worker that exited (a worker may give up on a server
	// that is down for longer than it waits).
	keep := func() int {
		restarted := 0
		for i, p := range procs {
			select {
			case <-p.done:
				procs[i] = startWorker()
				restarted++
			default:
			}
		}
		return restarted
	}
	stats := func() (dead, other int) {
		s, err := st.Stats(ctx, time.Now())
		if err != nil {
			return -1, -1
		}
		for _, q := range s.Queues {
			dead += q.Dead
			other += q.Available + q.Running + q.Scheduled
		}
		return dead, other
	}
	restarts := 0
	for k := range stops {
		time.Sleep(2 * time.Second)
		dead, _ := stats()
		out, err := exec.Command("sh", "-c", restart).CombinedOutput()
		if err != nil {
			t.Fatalf("stop %d: %v\n%s", k+1, err, out)
		}
		t.Logf("stop %d (-m immediate) at %v, %d jobs dead before it", k+1, time.Since(start).Round(time.Millisecond), dead)
		restarts += keep()
	}
	deadline := time.Now().Add(10 * time.Minute)
	for {
		restarts += keep()
		dead, other := stats()
		if dead == n && other == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("after 10 minutes: %d dead, %d not finished", dead, other)
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	for _, p := range procs {
		p.cmd.Process.Signal(syscall.SIGTERM)
		<-p.done
	}
	took := time.Since(start)

	mu.Lock()
	defer mu.Unlock()
	over, under, total := 0, 0, 0
	for i, h := range hits {
		total += h
		switch {
		case h > attempts:
			over++
			if over <= 10 {
				t.Errorf("job %d made %d requests, more than its %d attempts", i, h, attempts)
			}
		case h == 0:
			under++
		}
	}
	all, err := st.JobList(ctx, queue.JobFilter{})
	if err != nil {
		t.Fatal(err)
	}
	lost, notDead := 0, 0
	for _, j := range all {
		if j.State != queue.StateDead {
			notDead++
		}
		for _, h := range j.History {
			if h.Outcome == jobstore.OutcomeLost {
				lost++
			}
		}
	}
	if len(all) != n || notDead > 0 {
		t.Errorf("%d jobs in the database (want %d), %d of them not dead", len(all), n, notDead)
	}
	t.Logf("%d jobs, %d stops, %d worker restarts, in %v: %d requests in all; %d jobs made more than %d, %d made none; %d attempts recorded as lost",
		n, stops, restarts, took.Round(time.Millisecond), total, over, attempts, under, lost)
	if t.Failed() {
		logMu.Lock()
		t.Logf("worker output:\n%s", tailOf(logs.String(), 4000))
		logMu.Unlock()
	}
}

// lockedWriter appends to b under mu: the three workers share one log.
type lockedWriter struct {
	mu *sync.Mutex
	b  *strings.Builder
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}
