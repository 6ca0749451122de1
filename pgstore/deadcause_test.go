package pgstore

import (
	"errors"
	"testing"
	"time"

	"github.com/heed-go/heed/queue/jobstore"
	"github.com/jackc/pgx/v5/pgxpool"
)

// TestDeadCauseMigration: migration 11 is expand only. A database one
// release behind, opened to read, says its index of causes is missing;
// migrating computes the causes of the jobs already dead; a worker one
// release behind, which never names the column, writes dead jobs whose
// cause the database computes.
func TestDeadCauseMigration(t *testing.T) {
	testURL(t)
	t.Parallel()
	_, u := testSchema(t)
	ctx := t.Context()
	pool, err := pgxpool.New(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := migrate(ctx, pool, migrations[:10], time.Now()); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 5, 4, 3, 2, 1, 0, time.UTC)
	dead := func(history string) {
		t.Helper()
		if _, err := pool.Exec(ctx, `INSERT INTO heed_jobs (kind, queue, args, state, attempt, available_at, created_at, finished_at, dead_reason, history)
			VALUES ('k', 'q', '{}', 'dead', 1, $1, $1, $1, 'permanent', $2)`, t0, history); err != nil {
			t.Fatal(err)
		}
	}
	dead(`[{"attempt":1,"error":"HTTP 404 for order 17"}]`)
	old, err := OpenWith(ctx, u, OpenOptions{MigrateOff: true, ReadBehind: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.DeadCauseCounts(ctx, 0); !errors.Is(err, jobstore.ErrSchemaTooOld) {
		t.Errorf("DeadCauseCounts before migration 11: %v, want ErrSchemaTooOld", err)
	}
	old.Close()
	s, err := Open(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	dead(`[{"attempt":1,"error":"HTTP 404 for order 46"}]`) // as a worker one release behind writes it
	got, err := s.DeadCauseCounts(ctx, 0)
	if err != nil || len(got) != 1 || got[0].Count != 2 || got[0].Cause != "HTTP 000 for order 00" {
		t.Errorf("DeadCauseCounts after migration 11 = %+v, %v; want one cause of 2 jobs", got, err)
	}
	// Out of the dead-letter (as a worker one release behind requeues),
	// a job has no cause.
	if _, err := pool.Exec(ctx, `UPDATE heed_jobs SET state = 'available', finished_at = NULL WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	var causes int
	if err := pool.QueryRow(ctx, `SELECT count(dead_cause) FROM heed_jobs`).Scan(&causes); err != nil || causes != 1 {
		t.Errorf("after requeueing one of 2 dead jobs: %d causes (%v), want 1", causes, err)
	}
}
