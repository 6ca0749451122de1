package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/heed-go/heed/internal/leakcheck"
	"github.com/jackc/pgx/v5"

	"github.com/heed-go/heed/cmd/heed/internal/jobtext"
	"github.com/heed-go/heed/cmd/heed/internal/storeurl"
	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
)

// jobsDB points HEED_DB at a new SQLite file for t and returns its path.
func jobsTestDB(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "jobs.db")
	t.Setenv(envDB, path)
	return path
}

func TestJobsHelp(t *testing.T) {
	check := func(args []string, usage string) {
		t.Helper()
		code, stdout, stderr := heed(t, "", args...)
		if code != 0 || stderr != "" {
			t.Errorf("%v: exit %d, stderr %q", args, code, stderr)
		}
		for _, want := range []string{usage, "Exit codes"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("%v: help does not contain %q:\n%s", args, want, stdout)
			}
		}
		if strings.Contains(stdout, "Other flags") {
			t.Errorf("%v: help has flags in no group:\n%s", args, stdout)
		}
	}
	check([]string{"jobs", "--help"}, "Usage: heed jobs COMMAND")
	check([]string{"help", "jobs"}, "Usage: heed jobs COMMAND")
	check([]string{"jobs", "help", "work"}, "Usage: heed jobs work")
	for _, c := range jobsCommands {
		check([]string{"jobs", c.name, "--help"}, "Usage: heed jobs "+c.name)
	}
	for _, c := range deadCommands {
		check([]string{"jobs", "dead", c.name, "--help"}, "Usage: heed jobs dead "+c.name)
	}
	check([]string{"demo", "--help"}, "Usage: heed demo")
	_, stdout, _ := heed(t, "", "jobs", "--help")
	for _, k := range []string{"noop", "sleep", "fail", "http", "exec"} {
		if !strings.Contains(stdout, "  "+k+" ") {
			t.Errorf("heed jobs --help does not document kind %q", k)
		}
	}
}

// Bad input gets a clear message and a non-zero exit, and changes nothing:
// not even creating the database file.
func TestJobsBadInput(t *testing.T) {
	path := jobsTestDB(t)
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"jobs"}, 2, "Usage: heed jobs"},
		{[]string{"jobs", "nope"}, 2, `unknown command "nope"`},
		{[]string{"jobs", "dead"}, 2, "Usage: heed jobs dead"},
		{[]string{"jobs", "dead", "nope"}, 2, `unknown command "nope"`},
		{[]string{"jobs", "enqueue"}, 2, "no job kind"},
		{[]string{"jobs", "enqueue", "fail"}, 2, "give a JSON object"},
		{[]string{"jobs", "enqueue", "nope", "{}"}, 2, `unknown job kind "nope"`},
		{[]string{"jobs", "enqueue", "fail", "{"}, 2, "not valid JSON"},
		{[]string{"jobs", "enqueue", "fail", `{"tims": 2}`}, 2, `unknown field "tims"`},
		{[]string{"jobs", "enqueue", "fail", `{"times": -1}`}, 2, `"times" is -1`},
		{[]string{"jobs", "enqueue", "sleep", `[]`}, 2, "invalid arguments for sleep job"},
		{[]string{"jobs", "enqueue", "http", `{"url": "ftp://x"}`}, 2, "http or https"},
		{[]string{"jobs", "enqueue", "exec", `{"argv": []}`}, 2, `"argv"`},
		{[]string{"jobs", "enqueue", "noop", "{}", "--in", "-1s"}, 2, "--in"},
		{[]string{"jobs", "enqueue", "noop", "{}", "--attempts", "0"}, 2, "--attempts"},
		{[]string{"jobs", "enqueue", "noop", "{}", "--at", "tomorrow"}, 2, "--at"},
		{[]string{"jobs", "enqueue", "noop", "{}", "--in", "1s", "--at", "2030-01-01T00:00:00Z"}, 2, "set one"},
		{[]string{"jobs", "enqueue", "noop", "{}", "extra"}, 2, "unexpected argument"},
		{[]string{"jobs", "ls"}, 1, "does not exist"},
		{[]string{"jobs", "ls", "--state", "done"}, 2, "--state"},
		{[]string{"jobs", "show"}, 2, "give one job ID"},
		{[]string{"jobs", "show", "x"}, 2, "not a job ID"},
		{[]string{"jobs", "show", "1"}, 1, "does not exist"},
		{[]string{"jobs", "stats"}, 1, "does not exist"},
		{[]string{"jobs", "dead", "ls"}, 1, "does not exist"},
		{[]string{"jobs", "dead", "requeue"}, 2, "or --all"},
		{[]string{"jobs", "dead", "requeue", "1", "--all"}, 2, "not both"},
		{[]string{"jobs", "dead", "delete"}, 2, "or --all"},
		{[]string{"jobs", "dead", "purge"}, 2, "--older-than"},
		{[]string{"jobs", "purge"}, 2, "--succeeded-older-than"},
		{[]string{"jobs", "purge", "--succeeded-older-than", "-1s"}, 2, "--succeeded-older-than"},
		{[]string{"jobs", "purge", "--succeeded-older-than", "soon"}, 2, "succeeded-older-than"},
		{[]string{"jobs", "purge", "--older-than", "1h"}, 2, "older-than"},
		{[]string{"jobs", "purge", "--succeeded-older-than", "1h", "extra"}, 2, "unexpected argument"},
		{[]string{"jobs", "work", "--concurrency", "0"}, 2, "--concurrency"},
		{[]string{"jobs", "work", "--queues", "a=0"}, 2, "--queues"},
		{[]string{"jobs", "work", "--cap", "1s", "--base", "2s"}, 2, "--cap"},
		{[]string{"jobs", "work", "--lease", "0s"}, 2, "--lease"},
		{[]string{"jobs", "work", "--lease", "500ms"}, 2, "below the minimum of 1s"},
		{[]string{"jobs", "bench", "--jobs", "0"}, 2, "--jobs"},
		{[]string{"demo", "--reset", "--db", "postgres://127.0.0.1:1/x"}, 2, "--reset works on SQLite files only"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, stdout, stderr := heed(t, "", tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, want %d; stderr does not contain %q:\n%s", code, tt.code, tt.want, stderr)
			}
			if stdout != "" {
				t.Errorf("stdout not empty: %q", stdout)
			}
		})
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("bad input created the database %s (%v)", path, err)
	}
}

func TestJobsUnreachablePostgresHidesPassword(t *testing.T) {
	t.Setenv(envDB, "")
	for _, args := range [][]string{
		{"jobs", "stats", "--db", "postgres://heed:s3cretpw@127.0.0.1:1/heed?connect_timeout=2"},
		{"jobs", "enqueue", "noop", "{}", "--db", "postgresql://heed:s3cretpw@127.0.0.1:1/heed?connect_timeout=2"},
	} {
		code, stdout, stderr := heed(t, "", args...)
		if code != 1 || !strings.Contains(stderr, "cannot open postgres") || stdout != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, stdout, stderr)
		}
		if strings.Contains(stderr, "s3cretpw") {
			t.Errorf("the password is printed: %s", stderr)
		}
	}
	if got := storeurl.Name("postgres://u:pw@h/db?password=pw2"); strings.Contains(got, "pw@") || strings.Contains(got, "pw2") {
		t.Errorf("storeurl.Name = %q", got)
	}
}

// The jobs tour of docs/queue.md: enqueue, work, ls, show, dead ls/show/requeue/
// delete/purge, stats.
func TestJobsTour(t *testing.T) {
	// The worker, the store and the demo's server leave no goroutine
	// behind once the command returns.
	leakcheck.Check(t)
	jobsTour(t, jobsTestDB(t))
}

// The same tour on PostgreSQL, in a schema of its own.
func TestJobsTourPostgres(t *testing.T) {
	base := os.Getenv("HEED_TEST_POSTGRES_URL")
	if base == "" {
		t.Skip("HEED_TEST_POSTGRES_URL not set: skipping the PostgreSQL tour")
	}
	dsn := pgTestSchema(t, base)
	t.Setenv(envDB, dsn)
	jobsTour(t, dsn)
}

// pgTestSchema creates a schema for t, dropped when t ends, and returns a
// URL whose connections use it.
func pgTestSchema(t *testing.T, base string) string {
	t.Helper()
	var b [6]byte
	rand.Read(b[:])
	schema := "heed_cli_" + hex.EncodeToString(b[:])
	exec := func(sql string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Fatalf("connect to HEED_TEST_POSTGRES_URL: %v", err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Errorf("%s: %v", sql, err)
		}
	}
	exec("CREATE SCHEMA " + schema)
	t.Cleanup(func() { exec("DROP SCHEMA " + schema + " CASCADE") })
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// mustHeed runs heed with args and fails the test unless it exits with
// want; it returns the standard output.
func mustHeed(t *testing.T, want int, args ...string) string {
	t.Helper()
	code, stdout, stderr := heed(t, "", args...)
	if code != want {
		t.Fatalf("%v: exit %d, want %d\nstdout: %s\nstderr: %s", args, code, want, stdout, stderr)
	}
	return stdout
}

func jobsTour(t *testing.T, dsn string) {
	out := mustHeed(t, 0, "jobs", "enqueue", "fail", `{"times": 1}`)
	if out != "enqueued job 1 (fail) on queue default, to run now\n" {
		t.Errorf("enqueue: %q", out)
	}
	mustHeed(t, 0, "jobs", "enqueue", "fail", `{"permanent": true, "message": "bad address"}`)
	mustHeed(t, 0, "jobs", "enqueue", "fail", `{"times": 99}`, "--attempts", "2")
	mustHeed(t, 0, "jobs", "enqueue", "noop", "{}", "--queue", "other", "--in", "1h", "--key", "k")
	out = mustHeed(t, 0, "jobs", "enqueue", "noop", "{}", "--queue", "other", "--key", "k")
	if !strings.Contains(out, "already scheduled") {
		t.Errorf("enqueue with a held key: %q", out)
	}
	// --db wins over HEED_DB.
	mustHeed(t, 0, "jobs", "migrate", "--db", filepath.Join(t.TempDir(), "other.db"))

	out = mustHeed(t, 0, "jobs", "work", "--base", "1ms", "--cap", "5ms", "--poll", "10ms", "--until-empty", "--for", "20s")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	line := regexp.MustCompile(`^\d\d:\d\d:\d\d\.\d{3} job \d+ fail: attempt \d: `)
	for _, l := range lines {
		if !line.MatchString(l) {
			t.Errorf("not a decision line: %q", l)
		}
	}
	for _, want := range []string{
		"job 1 fail: attempt 1: scripted failure (transient, 1 of 1), retry in ",
		"job 1 fail: attempt 2: ok",
		"job 2 fail: attempt 1: bad address (permanent), gave up: permanent error -> dead-letter",
		"job 3 fail: attempt 2: scripted failure (transient, 2 of 99), gave up: attempts exhausted -> dead-letter",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("work output lacks %q:\n%s", want, out)
		}
	}
	if len(lines) != 5 {
		t.Errorf("%d decision lines, want 5:\n%s", len(lines), out)
	}

	// Job 1 succeeded after a failed attempt: its row shows no error, as if
	// it were failing (heed jobs show keeps it, on attempt 1); dead job
	// 3's row shows its last one.
	rows := map[string]string{}
	for _, l := range strings.Split(mustHeed(t, 0, "jobs", "ls"), "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			rows[f[0]] = l
		}
	}
	if !strings.Contains(rows["1"], "succeeded") || strings.Contains(rows["1"], "scripted failure") || !strings.Contains(rows["3"], "scripted failure") {
		t.Errorf("ls: job 1 should show no error, job 3 its last:\n%s\n%s", rows["1"], rows["3"])
	}
	if out := mustHeed(t, 0, "jobs", "show", "1"); !strings.Contains(out, "scripted failure") {
		t.Errorf("show 1 lost attempt 1's error:\n%s", out)
	}

	out = mustHeed(t, 0, "jobs", "ls", "--state", "dead")
	if !strings.Contains(out, "dead (permanent)") || !strings.Contains(out, "dead (attempts)") || strings.Contains(out, "succeeded") {
		t.Errorf("ls --state dead:\n%s", out)
	}
	out = mustHeed(t, 0, "jobs", "show", "3")
	for _, want := range []string{"state      dead (attempts)", "attempts   2 (limit: 2)", "retry (transient)", "give up (attempts)", "heed jobs dead requeue 3"} {
		if !strings.Contains(out, want) {
			t.Errorf("show 3 lacks %q:\n%s", want, out)
		}
	}
	var j jobtext.JSON
	if err := json.Unmarshal([]byte(mustHeed(t, 0, "jobs", "show", "1", "--json")), &j); err != nil || j.State != queue.StateSucceeded || len(j.History) != 2 {
		t.Errorf("show --json: %+v, %v", j, err)
	}
	mustHeed(t, 3, "jobs", "show", "99")
	mustHeed(t, 3, "jobs", "dead", "show", "1") // succeeded, not dead
	out = mustHeed(t, 0, "jobs", "dead", "show", "2")
	if !strings.Contains(out, "bad address (permanent)") {
		t.Errorf("dead show 2:\n%s", out)
	}
	out = mustHeed(t, 0, "jobs", "dead", "ls", "--reason", "attempts")
	if !strings.Contains(out, "dead (attempts)") || strings.Contains(out, "permanent") {
		t.Errorf("dead ls --reason attempts:\n%s", out)
	}
	// Requeue: an ID that is not dead changes nothing.
	mustHeed(t, 3, "jobs", "dead", "requeue", "2", "1")
	mustHeed(t, 3, "jobs", "dead", "requeue", "2", "99")
	if out := mustHeed(t, 0, "jobs", "dead", "requeue", "--all", "--dry-run"); out == "" {
		t.Errorf("dry run printed nothing")
	}
	out = mustHeed(t, 0, "jobs", "dead", "requeue", "3")
	if out != "requeued 1 job (attempts reset, history kept)\n" {
		t.Errorf("requeue: %q", out)
	}
	mustHeed(t, 0, "jobs", "dead", "purge", "--older-than", "1h") // nothing that old
	out = mustHeed(t, 0, "jobs", "dead", "delete", "--all", "--kind", "fail")
	if out != "deleted 1 job\n" {
		t.Errorf("delete: %q", out)
	}

	d, err := openDB(context.Background(), dsn, storeurl.Write)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	st := d.Jobs()
	j3, err := st.JobGet(context.Background(), 3)
	if err != nil || j3.State != queue.StateAvailable || j3.Attempt != 0 || j3.History[len(j3.History)-1].Outcome != jobstore.OutcomeRequeued {
		t.Errorf("job 3 after requeue: %+v, %v", j3, err)
	}
	if _, err := st.JobGet(context.Background(), 2); err == nil {
		t.Errorf("job 2 was not deleted")
	}

	var stats struct {
		Queues []struct {
			Queue                                          string
			Available, Scheduled, Running, Succeeded, Dead int
		}
		Dead int
	}
	if err := json.Unmarshal([]byte(mustHeed(t, 0, "jobs", "stats", "--json")), &stats); err != nil {
		t.Fatal(err)
	}
	if len(stats.Queues) != 2 || stats.Queues[0].Available != 1 || stats.Queues[0].Succeeded != 1 ||
		stats.Queues[1].Scheduled != 1 || stats.Dead != 0 {
		t.Errorf("stats: %+v", stats)
	}
	if out := mustHeed(t, 0, "jobs", "stats"); !strings.Contains(out, "dead-letter: empty") {
		t.Errorf("stats:\n%s", out)
	}
}

func TestJobsWorkFor(t *testing.T) {
	jobsTestDB(t)
	heed(t, "", "jobs", "migrate")
	start := time.Now()
	code, stdout, stderr := heed(t, "", "jobs", "work", "--for", "200ms", "--poll", "50ms")
	if code != 0 || stdout != "" || !strings.Contains(stderr, "stopped: 0 attempts") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if d := time.Since(start); d < 200*time.Millisecond || d > 5*time.Second {
		t.Errorf("ran for %v, want about 200ms", d)
	}
}

func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("the demo takes about 2 s")
	}
	leakcheck.Check(t)
	db := filepath.Join(t.TempDir(), "demo.db")
	code, stdout, stderr := heed(t, "", "demo", "--db", db)
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	if n := strings.Count(stdout, "  ok\n"); n != 5 {
		t.Errorf("%d jobs ok, want 5:\n%s", n, stdout)
	}
	for _, want := range []string{
		"gave up: permanent error -> dead-letter",
		"gave up: attempts exhausted -> dead-letter",
		"gave up: no retry fits in the time budget left -> dead-letter",
		"(server pushback)",
		"heed jobs dead requeue 3 --db " + db + "   # its error was transient",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("demo output lacks %q:\n%s", want, stdout)
		}
	}
	// Not on a database with jobs, unless --reset.
	code, _, stderr = heed(t, "", "demo", "--db", db, "--quiet")
	if code != 1 || !strings.Contains(stderr, "already has jobs; the demo needs an empty database: heed demo --reset --db "+db+" deletes it first") {
		t.Errorf("second run: exit %d, stderr %q", code, stderr)
	}
	if code, _, stderr = heed(t, "", "demo", "--db", db, "--quiet", "--reset"); code != 0 {
		t.Errorf("second run with --reset: exit %d, stderr %q", code, stderr)
	}
}
