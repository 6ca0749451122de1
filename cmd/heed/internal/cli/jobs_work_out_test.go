package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// workUntil runs heed with args in-process until one of its lines (stdout
// or stderr, as stream says) contains want, then interrupts it, and returns
// its exit code and both outputs. It fails t when the command ends before.
func workUntil(t *testing.T, stream, want string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	var other strings.Builder
	var out, errOut io.Writer = pw, &syncWriter{w: &other}
	if stream == "stderr" {
		out, errOut = errOut, pw
	}
	done := make(chan int, 1)
	go func() {
		code := Main(ctx, args, strings.NewReader(""), out, errOut)
		pw.Close()
		done <- code
	}()
	var watched strings.Builder
	found := false
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		watched.WriteString(sc.Text() + "\n")
		if !found && strings.Contains(sc.Text(), want) {
			found = true
			cancel()
		}
	}
	code = <-done
	if !found {
		t.Fatalf("heed %s ended (exit %d) before a line with %q:\n%s\n%s", strings.Join(args, " "), code, want, watched.String(), other.String())
	}
	if stream == "stderr" {
		return code, other.String(), watched.String()
	}
	return code, watched.String(), other.String()
}

// The worker's human lines go to stdout, and its own messages to stderr in
// one format: heed's lines, or JSON objects with --log-format json.
func TestJobsWorkLogFormats(t *testing.T) {
	jobsTestDB(t)
	mustHeed(t, 0, "jobs", "enqueue", "fail", `{"times": 1}`)
	code, stdout, stderr := heed(t, "", "jobs", "work", "--base", "1ms", "--until-empty")
	if code != 0 || !strings.Contains(stdout, "job 1 fail: attempt 2: ok") {
		t.Fatalf("text: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	for _, l := range strings.Split(strings.TrimSuffix(stderr, "\n"), "\n") {
		if !strings.HasPrefix(l, "heed jobs work: ") {
			t.Errorf("text: a stderr line not in heed's format: %q", l)
		}
	}
	if !strings.Contains(stderr, "heed jobs work: stopped: 2 attempts") {
		t.Errorf("text: stderr:\n%s", stderr)
	}

	mustHeed(t, 0, "jobs", "enqueue", "fail", `{"times": 1}`)
	code, stdout, stderr = heed(t, "", "jobs", "work", "--base", "1ms", "--until-empty", "--log-format", "json")
	if code != 0 || !strings.Contains(stdout, "job 2 fail: attempt 2: ok") {
		t.Fatalf("json: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	var msgs []string
	jobEvents := 0
	for _, l := range strings.Split(strings.TrimSuffix(stderr, "\n"), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("json: a stderr line is not JSON: %q", l)
		}
		msgs = append(msgs, rec["msg"].(string))
		if rec["job_id"] == 2.0 {
			jobEvents++
		}
	}
	if !strings.HasPrefix(msgs[0], "worker ") || !strings.HasPrefix(msgs[len(msgs)-1], "stopped: 2 attempts") || jobEvents < 3 {
		t.Errorf("json: messages %q, %d job records", msgs, jobEvents)
	}
	if code, _, stderr := heed(t, "", "jobs", "work", "--log-format", "xml"); code != exitUsage || !strings.Contains(stderr, `"xml" is not text or json`) {
		t.Errorf("--log-format xml: exit %d, stderr %q", code, stderr)
	}
}

// --quiet drops the line per attempt, not the sign of life: a summary line
// every --summary-every.
func TestJobsWorkQuietSummary(t *testing.T) {
	jobsTestDB(t)
	mustHeed(t, 0, "jobs", "migrate")
	code, stdout, _ := workUntil(t, "stdout", "summary of the last 50ms: 0 attempts",
		"jobs", "work", "--quiet", "--summary-every", "0.05", "--poll", "10ms")
	if code != 0 || strings.Contains(stdout, "job ") {
		t.Errorf("exit %d, stdout:\n%s", code, stdout)
	}
}

// An exec job on a worker that does not allow exec jobs stays available for
// one that does, its attempt not counted, and the worker warns once.
func TestJobsWorkExecNotAllowed(t *testing.T) {
	jobsTestDB(t)
	mustHeed(t, 0, "jobs", "enqueue", "exec", `{"argv": ["true"]}`)
	_, _, stderr := workUntil(t, "stderr", "exec job 1 given back", "jobs", "work", "--poll", "10ms")
	if !strings.Contains(stderr, "heed jobs work: warning: exec job 1 given back: this worker does not run exec jobs (start one with --allow-exec)") {
		t.Errorf("stderr:\n%s", stderr)
	}
	out := mustHeed(t, 0, "jobs", "show", "1")
	if !strings.Contains(out, "state      scheduled") || !strings.Contains(out, "attempts   0") {
		t.Errorf("the job is not waiting for another worker:\n%s", out)
	}
	if out := mustHeed(t, 0, "jobs", "ls", "--state", "dead"); out != "" {
		t.Errorf("dead jobs:\n%s", out)
	}
}

// --until-empty with an exec job this worker may not run (no
// --allow-exec) returns at once, naming the job, instead of waiting for it
// every minute for ever; the job stays for a worker that allows it.
func TestJobsWorkUntilEmptyExecNotAllowed(t *testing.T) {
	jobsTestDB(t)
	mustHeed(t, 0, "jobs", "enqueue", "exec", `{"argv": ["true"]}`)
	mustHeed(t, 0, "jobs", "enqueue", "noop", `{}`)
	start := time.Now()
	code, stdout, stderr := heed(t, "", "jobs", "work", "--until-empty", "--for", "30s")
	if took := time.Since(start); code != 0 || took >= 30*time.Second {
		t.Fatalf("exit %d after %v (the limit is 30s); stderr:\n%s", code, took, stderr)
	}
	for _, want := range []string{
		"exec job 1 (queue default) not run: exec jobs are disabled on this worker (start it with heed jobs work --allow-exec); it stays available for another worker",
		"stopped: 2 attempts",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "scheduled for later") {
		t.Errorf("the declined job is counted as scheduled too:\n%s", stderr)
	}
	if !strings.Contains(stdout, "job 2 noop: attempt 1: ok") {
		t.Errorf("stdout:\n%s", stdout)
	}
	if out := mustHeed(t, 0, "jobs", "show", "1"); !strings.Contains(out, "attempts   0") {
		t.Errorf("the exec job:\n%s", out)
	}
}

// ls lists newest first with --newest, and tells scheduled and retrying
// jobs from the ones due now.
func TestJobsLsNewestAndStates(t *testing.T) {
	jobsTestDB(t)
	mustHeed(t, 0, "jobs", "enqueue", "fail", `{"times": 5}`) // 1: fails, then waits an hour
	workUntil(t, "stdout", "job 1 fail: attempt 1", "jobs", "work", "--base", "1h", "--cap", "1h", "--jitter", "none", "--poll", "10ms")
	mustHeed(t, 0, "jobs", "enqueue", "noop", "{}", "--in", "1h") // 2: scheduled
	mustHeed(t, 0, "jobs", "enqueue", "noop", "{}")               // 3: due now
	ids := func(args ...string) string {
		out := mustHeed(t, 0, append([]string{"jobs", "ls", "--json"}, args...)...)
		var jobs []struct {
			ID int64 `json:"id"`
		}
		if err := json.Unmarshal([]byte(out), &jobs); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		var s []string
		for _, j := range jobs {
			s = append(s, strconv.FormatInt(j.ID, 10))
		}
		return strings.Join(s, ",")
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, "1,2,3"},
		{[]string{"--newest"}, "3,2,1"},
		{[]string{"--newest", "--limit", "2"}, "3,2"},
		{[]string{"--newest", "--before", "3"}, "2,1"},
		{[]string{"--state", "available"}, "3"},
		{[]string{"--state", "scheduled"}, "1,2"},
		{[]string{"--state", "retrying"}, "1"},
	} {
		if got := ids(tt.args...); got != tt.want {
			t.Errorf("ls %v: %s, want %s", tt.args, got, tt.want)
		}
	}
	_, _, stderr := heed(t, "", "jobs", "ls", "--newest", "--limit", "1")
	if !strings.Contains(stderr, "more with: heed jobs ls --newest --before 3") {
		t.Errorf("paging hint: %q", stderr)
	}
	if code, _, stderr := heed(t, "", "jobs", "ls", "--state", "later"); code != exitUsage || !strings.Contains(stderr, "scheduled, retrying") {
		t.Errorf("--state later: exit %d, stderr %q", code, stderr)
	}
}

// syncWriter serialises writes to w.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *syncWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
