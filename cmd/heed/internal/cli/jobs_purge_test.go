package cli

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/heed-go/heed/cmd/heed/internal/storeurl"
	"github.com/heed-go/heed/queue"
)

// heed jobs purge deletes succeeded jobs older than the age given, and
// nothing else.
func TestJobsPurgeSucceeded(t *testing.T) {
	path := jobsTestDB(t)
	mustHeed(t, 0, "jobs", "enqueue", "noop", "{}")                  // 1: succeeds
	mustHeed(t, 0, "jobs", "enqueue", "noop", "{}")                  // 2: succeeds
	mustHeed(t, 0, "jobs", "enqueue", "fail", `{"permanent": true}`) // 3: dead
	mustHeed(t, 0, "jobs", "work", "--poll", "10ms", "--until-empty", "--for", "20s")
	mustHeed(t, 0, "jobs", "enqueue", "noop", "{}", "--queue", "other") // 4: available (no worker for it)

	if out := mustHeed(t, 0, "jobs", "purge", "--succeeded-older-than", "1h"); out != "purged 0 jobs that succeeded more than 1h0m0s ago\n" {
		t.Errorf("purge of nothing that old: %q", out)
	}
	// Age the finished jobs explicitly, rather than sleeping past a small
	// age: every job finished 2 h ago (the dead one too, which the purge
	// must keep however old it is).
	backdateFinished(t, path, 2*time.Hour)
	if out := mustHeed(t, 0, "jobs", "purge", "--succeeded-older-than", "3h"); out != "purged 0 jobs that succeeded more than 3h0m0s ago\n" {
		t.Errorf("purge of nothing that old, after aging: %q", out)
	}
	if out := mustHeed(t, 0, "jobs", "purge", "--succeeded-older-than", "1h"); out != "purged 2 jobs that succeeded more than 1h0m0s ago\n" {
		t.Errorf("purge: %q", out)
	}
	if out := mustHeed(t, 0, "jobs", "purge", "--succeeded-older-than", "1ms"); out != "purged 0 jobs that succeeded more than 1ms ago\n" {
		t.Errorf("second purge: %q", out)
	}

	d, err := openDB(context.Background(), path, storeurl.Write)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for id, want := range map[int64]queue.State{3: queue.StateDead, 4: queue.StateAvailable} {
		if j, err := d.Jobs().JobGet(context.Background(), id); err != nil || j.State != want {
			t.Errorf("job %d after purge: %+v, %v; want %s", id, j, err, want)
		}
	}
	for _, id := range []int64{1, 2} {
		if _, err := d.Jobs().JobGet(context.Background(), id); !errors.Is(err, queue.ErrNotFound) {
			t.Errorf("succeeded job %d not purged: %v", id, err)
		}
	}
}

// backdateFinished moves the finished_at of every finished job in the
// SQLite database at path back by age, so that a test states how old its
// jobs are instead of sleeping until they are.
func backdateFinished(t *testing.T, path string, age time.Duration) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res, err := db.Exec(`UPDATE heed_jobs SET finished_at = finished_at - ? WHERE finished_at IS NOT NULL`, age.Microseconds())
	if err != nil {
		t.Fatal(err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		t.Fatalf("backdating finished jobs: %d rows, %v", n, err)
	}
}
