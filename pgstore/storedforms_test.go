package pgstore

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/clock/clocktest"
	"github.com/heed-go/heed/internal/schema"
	"github.com/heed-go/heed/queue/jobstore"
	"github.com/heed-go/heed/retry"
	"github.com/jackc/pgx/v5/pgxpool"
)

// TestStoredFormsMigration writes a dead job in the stored forms of schema
// 4 (enum numbers, durations in nanoseconds, "give up"), migrates, and
// checks the rows hold the new forms (the history byte for byte; the
// policy is jsonb, which keeps no key order) and read back as the same
// job.
func TestStoredFormsMigration(t *testing.T) {
	t.Parallel()
	_, u := testSchema(t)
	ctx := t.Context()
	pool, err := pgxpool.New(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := migrate(ctx, pool, migrations[:4], time.Now()); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 5, 4, 3, 2, 1, 0, time.UTC)
	for _, q := range []struct{ policy, history string }{{schema.OldJob.Policy, schema.OldJob.History}, {`{}`, `[]`}} {
		if _, err := pool.Exec(ctx, `INSERT INTO heed_jobs (kind, queue, args, state, attempt, policy, available_at, created_at, finished_at, dead_reason, history)
			VALUES ('k', 'q', '{}', 'dead', 2, $1, $2, $2, $2, 'permanent', $3)`, q.policy, t0, q.history); err != nil {
			t.Fatal(err)
		}
	}
	clk := clocktest.New(time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC))
	s, err := OpenWith(ctx, u, OpenOptions{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var history string
	var same bool
	if err := pool.QueryRow(ctx, `SELECT history::text, policy = $1::jsonb FROM heed_jobs ORDER BY id LIMIT 1`, schema.OldJob.NewPolicy).Scan(&history, &same); err != nil {
		t.Fatal(err)
	}
	if !same || history != schema.OldJob.NewHistory {
		t.Errorf("after migrating: policy as wanted %v, history\n %s\nwant\n %s", same, history, schema.OldJob.NewHistory)
	}
	var applied time.Time
	if err := pool.QueryRow(ctx, `SELECT applied_at FROM heed_migrations WHERE version = 5`).Scan(&applied); err != nil || !applied.Equal(clk.Now()) {
		t.Errorf("migration 5 applied_at %v (%v), want the store clock's %v", applied, err, clk.Now())
	}
	jobs, err := s.JobList(ctx, jobstore.JobFilter{})
	if err != nil || len(jobs) != 2 {
		t.Fatalf("JobList = %v, %v", jobs, err)
	}
	j := jobs[0]
	want := backoff.Schedule{Kind: backoff.Linear, Base: time.Second, Cap: time.Minute, Jitter: backoff.EqualJitter}
	if j.Policy.Backoff == nil || *j.Policy.Backoff != want || j.Policy.TimeBudget != 5*time.Second || j.Policy.AttemptTimeout != 1500*time.Millisecond {
		t.Errorf("policy read back %+v", j.Policy)
	}
	if len(j.History) != 2 || j.History[0].Delay != 4*time.Second || j.History[1].Action != retry.GiveUp.Key() {
		t.Errorf("history read back %+v", j.History)
	}
	if j := jobs[1]; !j.Policy.IsZero() || len(j.History) != 0 {
		t.Errorf("empty job read back %+v", j)
	}
}

// TestOutcomeWordsMigration writes, at schema 7, a job whose history says
// "ok" for a success and one without it, migrates, and checks that the
// first now says "success" (byte for byte) and the second is untouched.
func TestOutcomeWordsMigration(t *testing.T) {
	t.Parallel()
	_, u := testSchema(t)
	ctx := t.Context()
	pool, err := pgxpool.New(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := migrate(ctx, pool, migrations[:7], time.Now()); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 5, 4, 3, 2, 1, 0, time.UTC)
	for _, h := range []string{schema.OKJob.History, schema.OKJob.Untouched} {
		if _, err := pool.Exec(ctx, `INSERT INTO heed_jobs (kind, queue, args, state, attempt, policy, available_at, created_at, finished_at, history)
			VALUES ('k', 'q', '{}', 'succeeded', 2, '{}', $1, $1, $1, $2)`, t0, h); err != nil {
			t.Fatal(err)
		}
	}
	s, err := OpenWith(ctx, u, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for id, want := range map[int64]string{1: schema.OKJob.NewHistory, 2: schema.OKJob.Untouched} {
		var history string
		if err := pool.QueryRow(ctx, `SELECT history::text FROM heed_jobs WHERE id = $1`, id).Scan(&history); err != nil {
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

// TestEncodeEntry: an entry is stored as json.Marshal writes it, HTML
// escapes included.
func TestEncodeEntry(t *testing.T) {
	a := jobstore.Attempt{Attempt: 2, Worker: "w<1>", StartedAt: t0, FinishedAt: t0.Add(time.Second), Outcome: "transient",
		Error: "a & b <c> \"d\" \u2028 \x00", Action: "retry", Reason: "x", Delay: 1500 * time.Millisecond}
	got, err := encodeEntry(a)
	if err != nil {
		t.Fatal(err)
	}
	a.StartedAt, a.FinishedAt = truncUTC(a.StartedAt), truncUTC(a.FinishedAt) // as stored
	want, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("encodeEntry = %s\nwant %s", got, want)
	}
}

// TestDeferralCountsMigration writes, at schema 9, a job whose history
// holds a run of deferrals (one entry each) and one without deferrals,
// migrates, and checks that the run is now one entry with a count (byte
// for byte) and the other history is untouched.
func TestDeferralCountsMigration(t *testing.T) {
	t.Parallel()
	_, u := testSchema(t)
	ctx := t.Context()
	pool, err := pgxpool.New(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := migrate(ctx, pool, migrations[:9], time.Now()); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 5, 4, 3, 2, 1, 0, time.UTC)
	for _, h := range []string{schema.DeferredJob.History, schema.DeferredJob.Untouched} {
		if _, err := pool.Exec(ctx, `INSERT INTO heed_jobs (kind, queue, args, state, attempt, policy, available_at, created_at, finished_at, history)
			VALUES ('k', 'q', '{}', 'succeeded', 2, '{}', $1, $1, $1, $2)`, t0, h); err != nil {
			t.Fatal(err)
		}
	}
	s, err := OpenWith(ctx, u, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for id, want := range map[int64]string{1: schema.DeferredJob.NewHistory, 2: schema.DeferredJob.Untouched} {
		var history string
		if err := pool.QueryRow(ctx, `SELECT history::text FROM heed_jobs WHERE id = $1`, id).Scan(&history); err != nil {
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
