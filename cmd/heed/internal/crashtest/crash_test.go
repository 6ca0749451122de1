//go:build unix

// Package crashtest is the reliability test of heed's job queue (issue 4):
// it runs `heed jobs work` as a separate process over a few thousand jobs
// with scripted fates, kills it with SIGKILL several times mid-run,
// restarts it, and checks that every job ended as its script intends: none
// lost, none stuck running, every lost attempt recorded.
//
// It runs on SQLite always, and on PostgreSQL when HEED_TEST_POSTGRES_URL is
// set (in a schema of its own, dropped afterwards). It is skipped with
// -short. HEED_CRASH_JOBS sets the number of jobs (default 2000) and
// HEED_CRASH_KILLS the number of kills (default 5).
package crashtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	mrand "math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/heed-go/heed/pgstore"
	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
	"github.com/heed-go/heed/sqlitestore"
	"github.com/jackc/pgx/v5"
)

const envPostgres = "HEED_TEST_POSTGRES_URL"

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// buildHeed builds the heed binary into a temporary directory.
func buildHeed(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "heed")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/heed-go/heed/cmd/heed").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// fate is what a job's script intends.
type fate struct {
	state  queue.State
	reason string
}

// script is one job: its fail arguments, attempt limit and intended fate.
type script struct {
	args        map[string]any
	maxAttempts int
	want        fate
}

// scripts makes n jobs: half succeed after 0 to 3 transient failures, a
// fifth die permanently (after 0 or 1 transient failure), the rest fail
// until their 3 attempts run out. Each attempt takes 5 to 30 ms, so that
// the kills find jobs running.
func scripts(n int, r *mrand.Rand) []script {
	s := make([]script, n)
	for i := range s {
		ms := 5 + r.IntN(26)
		switch x := r.IntN(10); {
		case x < 5:
			s[i] = script{args: map[string]any{"times": r.IntN(4), "ms": ms}, want: fate{queue.StateSucceeded, ""}}
		case x < 7:
			s[i] = script{args: map[string]any{"times": r.IntN(2), "permanent": true, "ms": ms}, want: fate{queue.StateDead, "permanent"}}
		default:
			s[i] = script{args: map[string]any{"times": 1000, "ms": ms}, maxAttempts: 3, want: fate{queue.StateDead, "attempts"}}
		}
	}
	return s
}

func TestCrashSQLite(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test: builds heed and runs it for about 20 s")
	}
	dsn := filepath.Join(t.TempDir(), "crash.db")
	st, err := sqlitestore.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	crash(t, st, dsn, nil)
}

func TestCrashPostgres(t *testing.T) {
	base := os.Getenv(envPostgres)
	if base == "" {
		t.Skip(envPostgres + " not set: skipping the PostgreSQL crash test")
	}
	if testing.Short() {
		t.Skip("crash test: builds heed and runs it for about 30 s")
	}
	dsn := freshSchema(t, base)
	ctx := context.Background()
	st, err := pgstore.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// One transaction for all the inserts: PostgreSQL commits are slow
	// (an fsync each), and this test is about the worker.
	crash(t, st, dsn, func(jobs []script) ([]int64, error) {
		tx, err := st.Pool().Begin(ctx)
		if err != nil {
			return nil, err
		}
		defer tx.Rollback(ctx)
		ids := make([]int64, len(jobs))
		for i, s := range jobs {
			j, _, err := st.EnqueueTx(ctx, tx, "fail", s.args, queue.EnqueueOptions{MaxAttempts: s.maxAttempts})
			if err != nil {
				return nil, err
			}
			ids[i] = j.ID
		}
		return ids, tx.Commit(ctx)
	})
}

// freshSchema creates a schema of its own for t, dropped when t ends, and
// returns a URL whose connections use it.
func freshSchema(t *testing.T, base string) string {
	t.Helper()
	var b [6]byte
	rand.Read(b[:])
	schema := "heed_crash_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect to %s: %v", envPostgres, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("%s is not a URL: %v", envPostgres, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// crash enqueues the scripted jobs into st (with insert, or one Enqueue
// each), runs heed jobs work on dsn, killing it several times, and checks
// every job's fate.
func crash(t *testing.T, st jobstore.Store, dsn string, insert func([]script) ([]int64, error)) {
	bin := buildHeed(t)
	ctx := context.Background()
	n, kills := envInt("HEED_CRASH_JOBS", 2000), envInt("HEED_CRASH_KILLS", 5)
	seed := uint64(time.Now().UnixNano())
	r := mrand.New(mrand.NewPCG(seed, 1))
	t.Logf("%d jobs, %d kills, seed %d", n, kills, seed)
	jobs := scripts(n, r)

	start := time.Now()
	var ids []int64
	if insert != nil {
		var err error
		if ids, err = insert(jobs); err != nil {
			t.Fatal(err)
		}
	} else {
		c := queue.NewClient(st, queue.ClientConfig{})
		for _, s := range jobs {
			j, _, err := c.Enqueue(ctx, "fail", s.args, queue.EnqueueOptions{MaxAttempts: s.maxAttempts})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, j.ID)
		}
	}
	t.Logf("enqueued %d jobs in %v", n, time.Since(start).Round(time.Millisecond))

	// Short leases, so that a killed worker's jobs are rescued about a
	// second after the restart; 12 attempts leave room for the lost ones.
	args := []string{"jobs", "work", "--db", dsn, "--quiet", "--concurrency", "16", "--lease", "1s",
		"--poll", "50ms", "--attempts", "12", "--base", "10ms", "--cap", "50ms", "--grace", "5s"}
	var logs bytes.Buffer
	run := func(extra ...string) *exec.Cmd {
		cmd := exec.Command(bin, append(args, extra...)...)
		cmd.Stdout, cmd.Stderr = &logs, &logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	for i := range kills {
		cmd := run()
		time.Sleep(time.Duration(600+r.IntN(900)) * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
		s, err := st.Stats(ctx, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		var done, running int
		for _, q := range s.Queues {
			done += q.Succeeded + q.Dead
			running += q.Running
		}
		t.Logf("kill %d at %v: %d of %d jobs done, %d left running (leased to the dead worker)",
			i+1, time.Since(start).Round(time.Millisecond), done, n, running)
	}
	final := run("--until-empty")
	waited := make(chan error, 1)
	go func() { waited <- final.Wait() }()
	select {
	case err := <-waited:
		if err != nil {
			t.Fatalf("last worker: %v\n%s", err, logs.String())
		}
	case <-time.After(90 * time.Second):
		final.Process.Signal(syscall.SIGKILL)
		<-waited
		t.Fatalf("the last worker did not drain the queue within 90s\n%s", logs.String())
	}
	took := time.Since(start)

	// Every job exactly as its script intends.
	all, err := st.JobList(ctx, queue.JobFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != n {
		t.Errorf("%d jobs in the database, want %d", len(all), n)
	}
	byID := map[int64]*queue.Job{}
	for _, j := range all {
		byID[j.ID] = j
	}
	var lost, lostJobs, attempts, bad int
	counts := map[fate]int{}
	for i, id := range ids {
		j := byID[id]
		if j == nil {
			t.Errorf("job %d is missing", id)
			bad++
			continue
		}
		got := fate{j.State, j.DeadReason}
		counts[got]++
		jl := 0
		for _, h := range j.History {
			if h.Outcome == jobstore.OutcomeLost {
				jl++
			}
		}
		lost += jl
		if jl > 0 {
			lostJobs++
		}
		attempts += j.Attempt
		// Every attempt recorded exactly once, in order: none lost, none
		// written twice (a killed worker writes nothing after its death).
		seq := len(j.History) == j.Attempt
		for k, h := range j.History {
			seq = seq && h.Attempt == k+1
		}
		if !seq {
			bad++
			if bad <= 10 {
				h, _ := json.Marshal(j.History)
				t.Errorf("job %d: attempt %d, history not 1..%d: %s", id, j.Attempt, j.Attempt, h)
			}
		}
		if got != jobs[i].want {
			bad++
			if bad <= 10 {
				h, _ := json.Marshal(j.History)
				t.Errorf("job %d %s: %s %q, want %s %q; history %s", id, j.Args, got.state, got.reason,
					jobs[i].want.state, jobs[i].want.reason, h)
			}
		}
	}
	if bad > 10 {
		t.Errorf("... %d jobs in all did not end as scripted", bad)
	}
	t.Logf("all %d jobs done in %v: %d succeeded, %d dead (permanent), %d dead (attempts); %d attempts in all",
		n, took.Round(time.Millisecond), counts[fate{queue.StateSucceeded, ""}], counts[fate{queue.StateDead, "permanent"}],
		counts[fate{queue.StateDead, "attempts"}], attempts)
	t.Logf("re-executed because of the %d kills: %d attempts (history outcome %q) in %d jobs", kills, lost, jobstore.OutcomeLost, lostJobs)
	if lost == 0 {
		t.Errorf("no attempt was lost: the kills did not hit running jobs")
	}
	if t.Failed() {
		t.Logf("worker output:\n%s", tailOf(logs.String(), 4000))
	}
}

func tailOf(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return fmt.Sprintf("...%s", s[len(s)-n:])
}
