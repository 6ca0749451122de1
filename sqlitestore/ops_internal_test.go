package sqlitestore

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
)

// Migration 6 rebuilds heed_jobs: every row survives as it was, and IDs
// keep increasing past the highest ever given (a deleted job's ID is not
// reused).
func TestMigrateCancelledKeepsJobs(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	old, err := OpenWith(ctx, path, OpenOptions{MigrateOff: true, CreateEmpty: true, stopAt: 5})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	// Rows as the schema of migration 5 holds them, written in its SQL (the
	// current insert names columns that later migrations add).
	var jobs []*jobstore.Job
	for i := range 3 {
		var id int64
		err := old.w.QueryRowContext(ctx, `INSERT INTO heed_jobs (kind, queue, args, state, available_at, created_at, unique_key)
			VALUES ('k', 'q', '{"i":1}', 'available', ?, ?, ?) RETURNING id`,
			now.UnixMicro(), now.UnixMicro(), string(rune('a'+i))).Scan(&id)
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, &jobstore.Job{ID: id})
	}
	// A running job, as the old binary's claim left it.
	if _, err := old.w.ExecContext(ctx, `UPDATE heed_jobs SET state = 'running', lease_token = 'tok', lease_until = ?,
		attempt = 1 WHERE id = ?`, now.Add(time.Minute).UnixMicro(), jobs[0].ID); err != nil {
		t.Fatal(err)
	}
	if _, err := old.w.ExecContext(ctx, `DELETE FROM heed_jobs WHERE id = ?`, jobs[2].ID); err != nil {
		t.Fatal(err)
	}
	old.Close()

	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	running, err := s.JobGet(ctx, jobs[0].ID)
	if err != nil || running.State != jobstore.StateRunning || running.LeaseToken != "tok" || running.UniqueKey != "a" {
		t.Errorf("running job after the migration: %+v, %v", running, err)
	}
	in, _ := queue.NewJobInsert("k", nil, queue.EnqueueOptions{Queue: "q", UniqueKey: "b"}, now)
	if j, inserted, err := s.JobInsert(ctx, in); err != nil || inserted || j.ID != jobs[1].ID {
		t.Errorf("the unique index after the migration: %+v, %v, %v", j, inserted, err)
	}
	in.UniqueKey = ""
	j, _, err := s.JobInsert(ctx, in)
	if err != nil || j.ID <= jobs[2].ID {
		t.Errorf("new job's ID %d after the migration, want above %d (deleted)", j.ID, jobs[2].ID)
	}
	if n, err := s.JobCancel(ctx, jobstore.OpParams{Filter: jobstore.JobFilter{}, Now: now, Entry: jobstore.Attempt{Outcome: jobstore.OutcomeCancelled}}); err != nil || n != 3 {
		t.Errorf("JobCancel after the migration = %d, %v", n, err)
	}
}
