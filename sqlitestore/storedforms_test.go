package sqlitestore

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/clock/clocktest"
	"github.com/heed-go/heed/internal/schema"
	"github.com/heed-go/heed/queue/jobstore"
	"github.com/heed-go/heed/retry"
)

// TestStoredFormsMigration writes a dead job in the stored forms of schema
// 4 (enum numbers, durations in nanoseconds, "give up"), migrates, and
// checks the rows hold the new forms byte for byte and read back as the
// same job.
func TestStoredFormsMigration(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	old, err := OpenWith(ctx, path, OpenOptions{MigrateOff: true, CreateEmpty: true, stopAt: 4})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 5, 4, 3, 2, 1, 0, time.UTC).UnixMicro()
	for _, q := range []struct{ policy, history string }{{schema.OldJob.Policy, schema.OldJob.History}, {`{}`, `[]`}} {
		if _, err := old.w.ExecContext(ctx, `INSERT INTO heed_jobs (kind, queue, args, state, attempt, policy, available_at, created_at, finished_at, dead_reason, history)
			VALUES ('k', 'q', '{}', 'dead', 2, ?, ?, ?, ?, 'permanent', ?)`, q.policy, t0, t0, t0, q.history); err != nil {
			t.Fatal(err)
		}
	}
	old.Close()

	clk := clocktest.New(time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC))
	s, err := OpenWith(ctx, path, OpenOptions{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var policy, history string
	if err := s.r.QueryRowContext(ctx, `SELECT policy, history FROM heed_jobs WHERE id = 1`).Scan(&policy, &history); err != nil {
		t.Fatal(err)
	}
	if policy != schema.OldJob.NewPolicy || history != schema.OldJob.NewHistory {
		t.Errorf("after migrating:\n policy  %s\n history %s\nwant\n %s\n %s", policy, history, schema.OldJob.NewPolicy, schema.OldJob.NewHistory)
	}
	var applied sql.NullInt64
	if err := s.r.QueryRowContext(ctx, `SELECT applied_at FROM heed_schema_migrations WHERE version = 5`).Scan(&applied); err != nil ||
		applied.Int64 != clk.Now().UnixMicro() {
		t.Errorf("migration 5 applied_at %v (%v), want the store clock's %d", applied, err, clk.Now().UnixMicro())
	}
	j, err := s.JobGet(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := jobstore.JobPolicy{Backoff: &backoff.Schedule{Kind: backoff.Linear, Base: time.Second, Cap: time.Minute, Jitter: backoff.EqualJitter},
		TimeBudget: 5 * time.Second, AttemptTimeout: 1500 * time.Millisecond}
	if j.Policy.Backoff == nil || *j.Policy.Backoff != *want.Backoff || j.Policy.TimeBudget != want.TimeBudget || j.Policy.AttemptTimeout != want.AttemptTimeout {
		t.Errorf("policy read back %+v", j.Policy)
	}
	if len(j.History) != 2 || j.History[0].Delay != 4*time.Second || j.History[1].Action != retry.GiveUp.Key() {
		t.Errorf("history read back %+v", j.History)
	}
	if j, err := s.JobGet(ctx, 2); err != nil || !j.Policy.IsZero() || len(j.History) != 0 {
		t.Errorf("empty job read back %+v, %v", j, err)
	}
}

// TestOutcomeWordsMigration writes, at schema 7, a job whose history says
// "ok" for a success and one without it, migrates, and checks that the
// first now says "success" (byte for byte) and the second is untouched.
func TestOutcomeWordsMigration(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	old, err := OpenWith(ctx, path, OpenOptions{MigrateOff: true, CreateEmpty: true, stopAt: 7})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 5, 4, 3, 2, 1, 0, time.UTC).UnixMicro()
	for _, h := range []string{schema.OKJob.History, schema.OKJob.Untouched} {
		if _, err := old.w.ExecContext(ctx, `INSERT INTO heed_jobs (kind, queue, args, state, attempt, policy, available_at, created_at, finished_at, history)
			VALUES ('k', 'q', '{}', 'succeeded', 2, '{}', ?, ?, ?, ?)`, t0, t0, t0, h); err != nil {
			t.Fatal(err)
		}
	}
	old.Close()

	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for id, want := range map[int64]string{1: schema.OKJob.NewHistory, 2: schema.OKJob.Untouched} {
		var history string
		if err := s.r.QueryRowContext(ctx, `SELECT history FROM heed_jobs WHERE id = ?`, id).Scan(&history); err != nil {
			t.Fatal(err)
		}
		if history != want {
			t.Errorf("job %d after migrating:\n %s\nwant\n %s", id, history, want)
		}
	}
	j, err := s.JobGet(ctx, 1)
	if err != nil || j.History[1].Outcome != retry.OutcomeSuccess.Key() {
		t.Errorf("JobGet = %+v, %v", j, err)
	}
}

// TestDeferralCountsMigration writes, at schema 9, a job whose history
// holds a run of deferrals (one entry each) and one without deferrals,
// migrates, and checks that the run is now one entry with a count (byte
// for byte) and the other history is untouched.
func TestDeferralCountsMigration(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	old, err := OpenWith(ctx, path, OpenOptions{MigrateOff: true, CreateEmpty: true, stopAt: 9})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 5, 4, 3, 2, 1, 0, time.UTC).UnixMicro()
	for _, h := range []string{schema.DeferredJob.History, schema.DeferredJob.Untouched} {
		if _, err := old.w.ExecContext(ctx, `INSERT INTO heed_jobs (kind, queue, args, state, attempt, policy, available_at, created_at, finished_at, history)
			VALUES ('k', 'q', '{}', 'succeeded', 2, '{}', ?, ?, ?, ?)`, t0, t0, t0, h); err != nil {
			t.Fatal(err)
		}
	}
	old.Close()

	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for id, want := range map[int64]string{1: schema.DeferredJob.NewHistory, 2: schema.DeferredJob.Untouched} {
		var history string
		if err := s.r.QueryRowContext(ctx, `SELECT history FROM heed_jobs WHERE id = ?`, id).Scan(&history); err != nil {
			t.Fatal(err)
		}
		if history != want {
			t.Errorf("job %d after migrating:\n %s\nwant\n %s", id, history, want)
		}
	}
	j, err := s.JobGet(ctx, 1)
	if err != nil || len(j.History) != 4 || j.History[1].Count != 3 {
		t.Errorf("JobGet = %+v, %v", j, err)
	}
}
