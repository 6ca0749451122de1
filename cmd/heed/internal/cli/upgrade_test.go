//go:build unix

package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// previousRelease is the commit of heed's previous release, whose
// binary TestUpgradeOldWorkerKeepsDraining builds, and whose database
// testdata/upgrade/heed-969481a.db is.
const previousRelease = "969481a"

// copyFixture copies the previous release's database to a temporary
// directory and returns its path.
func copyFixture(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "upgrade", "heed-"+previousRelease+".db"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "heed.db")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// statsCounts returns heed jobs stats --json's counts over all queues.
func statsCounts(t *testing.T, out string) map[string]int {
	t.Helper()
	var st struct {
		Queues []map[string]any `json:"queues"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("stats --json: %v\n%s", err, out)
	}
	total := map[string]int{}
	for _, q := range st.Queues {
		for k, v := range q {
			if n, ok := v.(float64); ok {
				total[k] += int(n)
			}
		}
	}
	return total
}

// keep are the worker flags that keep finished jobs, so that the counts
// of a fixture written long ago stay as they were.
var keep = []string{"--retain-succeeded", "-1", "--retain-dead", "-1", "--retain-cancelled", "-1"}

// The previous release's database, as it wrote it, is read by this heed,
// migrated, and worked: its available jobs drain, its dead, cancelled,
// scheduled and paused jobs stay as they were.
func TestUpgradeFixture(t *testing.T) {
	path := copyFixture(t)
	t.Setenv(envDB, path)
	before := statsCounts(t, mustHeed(t, 0, "jobs", "stats", "--json"))
	want := map[string]int{"available": 4, "scheduled": 1, "running": 0, "succeeded": 3, "dead": 1, "cancelled": 1}
	for k, v := range want {
		if before[k] != v {
			t.Errorf("before migrate: %s %d, want %d (%v)", k, before[k], v, before)
		}
	}
	if out := mustHeed(t, 0, "jobs", "show", "4"); !strings.Contains(out, "no such user") {
		t.Errorf("the dead job's error:\n%s", out)
	}
	// Every migration since is an expand step: migrate says what each
	// changes, and that it leaves nobody behind.
	out := mustHeed(t, 0, "jobs", "migrate")
	if !strings.Contains(out, "up to date") || strings.Contains(out, "refuse") ||
		strings.Contains(out, "applied") && !strings.Contains(out, "Nothing is left behind") {
		t.Errorf("migrate:\n%s", out)
	}
	code, _, stderr := heed(t, "", append([]string{"jobs", "work", "--until-empty"}, keep...)...)
	if code != 0 || !strings.Contains(stderr, "3 succeeded") {
		t.Fatalf("work --until-empty: exit %d\n%s", code, stderr)
	}
	after := statsCounts(t, mustHeed(t, 0, "jobs", "stats", "--json"))
	want = map[string]int{"available": 1, "scheduled": 1, "succeeded": 6, "dead": 1, "cancelled": 1}
	for k, v := range want {
		if after[k] != v {
			t.Errorf("after the drain: %s %d, want %d (%v)", k, after[k], v, after)
		}
	}
}

// oldHeed builds the heed binary of the previous release from this
// repository's history (git archive of the commit, go build), once per
// machine, or skips the test when the history is not there.
func oldHeed(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the previous release's binary")
	}
	dir := filepath.Join(os.TempDir(), "heed-release-"+previousRelease)
	bin := filepath.Join(dir, "heed")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	if err := exec.Command("git", "cat-file", "-e", previousRelease+"^{commit}").Run(); err != nil {
		t.Skipf("the previous release's commit %s is not in this checkout: %v", previousRelease, err)
	}
	src := t.TempDir()
	archive := exec.Command("git", "archive", previousRelease)
	archive.Dir = filepath.Join("..", "..", "..", "..") // the whole tree, not this directory's
	untar := exec.Command("tar", "-x", "-C", src)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	untar.Stdin = pipe
	if err := untar.Start(); err != nil {
		t.Fatal(err)
	}
	if err := archive.Run(); err != nil {
		t.Fatalf("git archive %s: %v", previousRelease, err)
	}
	if err := untar.Wait(); err != nil {
		t.Fatalf("tar: %v", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := bin + fmt.Sprint(os.Getpid())
	build := exec.Command("go", "build", "-o", tmp, "./cmd/heed")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build of %s: %v\n%s", previousRelease, err, out)
	}
	if err := os.Rename(tmp, bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

// A worker of the previous release, running on a database, keeps draining
// it after this release's heed jobs migrate: it works the jobs this heed
// enqueues after the migration, then stops gracefully on SIGTERM. The
// previous release's binary also drains its own database once this heed
// migrated it. On SQLite, and on PostgreSQL when HEED_TEST_POSTGRES_URL is
// set.
func TestUpgradeOldWorkerKeepsDraining(t *testing.T) {
	old, cur := oldHeed(t), heedBinary(t)
	t.Run("sqlite", func(t *testing.T) {
		oldWorkerKeepsDraining(t, old, cur, filepath.Join(t.TempDir(), "heed.db"))
		// The previous release's own database, migrated by this heed, is
		// drained by the previous release's worker.
		env := append(os.Environ(), envDB+"="+copyFixture(t))
		for _, bin := range []string{cur, old} {
			cmd := exec.Command(bin, append([]string{"jobs", "work", "--until-empty"}, keep...)...)
			if bin == cur {
				cmd = exec.Command(bin, "jobs", "migrate")
			}
			cmd.Env = env
			out, err := cmd.CombinedOutput()
			if err != nil || bin == old && !strings.Contains(string(out), "3 succeeded") {
				t.Errorf("%v: %v\n%s", cmd.Args, err, out)
			}
		}
	})
	t.Run("postgres", func(t *testing.T) {
		base := os.Getenv("HEED_TEST_POSTGRES_URL")
		if base == "" {
			t.Skip("HEED_TEST_POSTGRES_URL is not set")
		}
		oldWorkerKeepsDraining(t, old, cur, pgTestSchema(t, base))
	})
}

// oldWorkerKeepsDraining runs the previous release's worker (old) on the
// database db, migrates it with this release's heed (cur), and wants the
// old worker to run the jobs enqueued after.
func oldWorkerKeepsDraining(t *testing.T, old, cur, db string) {
	env := append(os.Environ(), envDB+"="+db)
	run := func(bin string, args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", filepath.Base(filepath.Dir(bin)), args, err, out)
		}
		return string(out)
	}
	run(old, "jobs", "migrate")
	run(old, "jobs", "enqueue", "noop", "{}")

	// The old worker runs, and reports each job it finishes.
	worker := exec.Command(old, "jobs", "work", "--poll", "50ms")
	worker.Env = env
	stderr, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	worker.Stdout, worker.Stderr = w, w
	if err := worker.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	var mu sync.Mutex
	var log strings.Builder
	done := make(chan struct{})
	succeeded := make(chan struct{}, 100)
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			mu.Lock()
			log.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if strings.HasSuffix(sc.Text(), ": ok") {
				succeeded <- struct{}{}
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	defer func() {
		worker.Process.Kill()
		<-done
	}()
	wait := func(n int) {
		t.Helper()
		for range n {
			select {
			case <-succeeded:
			case <-time.After(60 * time.Second):
				mu.Lock()
				defer mu.Unlock()
				t.Fatalf("the old worker did not finish its jobs in 60 s:\n%s", log.String())
			}
		}
	}
	wait(1)

	if out := run(cur, "jobs", "migrate"); !strings.Contains(out, "up to date") {
		t.Errorf("this heed's migrate:\n%s", out)
	}
	for range 5 {
		run(cur, "jobs", "enqueue", "noop", "{}")
	}
	wait(5) // the old worker keeps draining

	if err := worker.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-done
	err = worker.Wait()
	mu.Lock()
	defer mu.Unlock()
	if err != nil || !strings.Contains(log.String(), "6 succeeded") {
		t.Errorf("the old worker: %v\n%s", err, log.String())
	}
	if st := statsCounts(t, run(cur, "jobs", "stats", "--json")); st["succeeded"] != 6 || st["available"] != 0 {
		t.Errorf("after the drain: %v", st)
	}
}
