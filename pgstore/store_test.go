package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heed-go/heed/internal/sqlfilter"
	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
	"github.com/jackc/pgx/v5/pgconn"
)

var t0 = time.Date(2030, 1, 2, 3, 4, 5, 123456789, time.UTC)

func newInsert(t testing.TB, kind string, opts queue.EnqueueOptions) jobstore.JobInsert {
	t.Helper()
	in, err := queue.NewJobInsert(kind, json.RawMessage(`{"n": 1,  "s":"x"}`), opts, t0)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func TestInsertGetRoundTrip(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := t.Context()
	in := newInsert(t, "email", queue.EnqueueOptions{Queue: "mail", Priority: 3, MaxAttempts: 7, UniqueKey: "k1",
		Policy: jobstore.JobPolicy{TimeBudget: time.Hour}})
	job, inserted, err := s.JobInsert(ctx, in)
	if err != nil || !inserted {
		t.Fatalf("JobInsert = %v, %v", inserted, err)
	}
	got, err := s.JobGet(ctx, job.ID)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Args) != `{"n": 1,  "s":"x"}` {
		t.Errorf("Args = %s, want byte for byte as enqueued", got.Args)
	}
	if got.Kind != "email" || got.Queue != "mail" || got.Priority != 3 || got.MaxAttempts != 7 ||
		got.UniqueKey != "k1" || got.State != jobstore.StateAvailable || got.Policy.TimeBudget != time.Hour {
		t.Errorf("job = %+v", got)
	}
	if want := t0.Truncate(time.Microsecond); !got.AvailableAt.Equal(want) || got.AvailableAt.Location() != time.UTC {
		t.Errorf("AvailableAt = %v, want %v UTC", got.AvailableAt, want)
	}
	if _, err := s.JobGet(ctx, job.ID+1000); !errors.Is(err, jobstore.ErrNotFound) {
		t.Errorf("JobGet(unknown) = %v, want ErrNotFound", err)
	}
}

func TestInsertRejectsNUL(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	in := newInsert(t, "kind", queue.EnqueueOptions{})
	in.Kind = "k\x00ind"
	_, _, err := s.JobInsert(t.Context(), in)
	// Refused by queue's validation, as every store refuses it, before
	// PostgreSQL sees it.
	if want := `queue: JobInsert.Kind has the control character U+0000: "k\x00ind"`; !errors.Is(err, jobstore.ErrInvalid) || err.Error() != want {
		t.Errorf("JobInsert(NUL in kind) = %v, want %s", err, want)
	}
}

// An error PostgreSQL raises about the data matches queue.ErrInvalid and
// still unwraps to PostgreSQL's error, with one package prefix: not
// "pgstore: insert: queue: invalid input: ERROR: ...".
func TestDataErrorSaysOnePrefix(t *testing.T) {
	pgErr := &pgconn.PgError{Severity: "ERROR", Code: "22021", Message: `invalid byte sequence for encoding "UTF8": 0x00`}
	err := wrapErr("insert", pgErr)
	var got *pgconn.PgError
	if !errors.Is(err, jobstore.ErrInvalid) || !errors.As(err, &got) || got != pgErr {
		t.Errorf("wrapErr = %v, want it to match ErrInvalid and unwrap to the PgError", err)
	}
	want := `pgstore: insert: invalid input: ERROR: invalid byte sequence for encoding "UTF8": 0x00 (SQLSTATE 22021)`
	if err.Error() != want {
		t.Errorf("wrapErr = %q, want %q", err, want)
	}
	// Other errors are wrapped as they were.
	other := &pgconn.PgError{Severity: "ERROR", Code: "40001", Message: "could not serialize access"}
	if err := wrapErr("claim", other); errors.Is(err, jobstore.ErrInvalid) || err.Error() != "pgstore: claim: "+other.Error() {
		t.Errorf("wrapErr(serialization failure) = %v", err)
	}
}

// TestUniqueConcurrent enqueues one key from many goroutines at once:
// exactly one insert wins and every caller gets the winner's job.
func TestUniqueConcurrent(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := t.Context()
	const n = 32
	for round := range 5 {
		key := fmt.Sprintf("key-%d", round)
		var (
			wg       sync.WaitGroup
			mu       sync.Mutex
			ids      = map[int64]int{}
			inserted int
			start    = make(chan struct{})
		)
		for range n {
			wg.Go(func() {
				<-start
				job, ins, err := s.JobInsert(ctx, newInsert(t, "k", queue.EnqueueOptions{UniqueKey: key}))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				ids[job.ID]++
				if ins {
					inserted++
				}
			})
		}
		close(start)
		wg.Wait()
		if len(ids) != 1 || inserted != 1 {
			t.Fatalf("round %d: ids %v, %d inserted; want one job, inserted once", round, ids, inserted)
		}
	}
	jobs, err := s.JobList(ctx, jobstore.JobFilter{})
	if err != nil || len(jobs) != 5 {
		t.Fatalf("JobList = %d jobs, %v; want 5", len(jobs), err)
	}
}

// TestUniqueAfterFinish: a key is free again once its job succeeded, and
// a requeue leaves a dead job dead while its key is held.
func TestUniqueAfterFinish(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := t.Context()
	first, _, err := s.JobInsert(ctx, newInsert(t, "k", queue.EnqueueOptions{UniqueKey: "u"}))
	if err != nil {
		t.Fatal(err)
	}
	claimed, err := s.JobClaim(ctx, jobstore.ClaimParams{Queue: queue.DefaultQueue, Limit: 1, Now: t0, LeaseUntil: t0.Add(time.Minute), Worker: "w"})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim = %v, %v", claimed, err)
	}
	// Running still holds the key.
	if j, ins, err := s.JobInsert(ctx, newInsert(t, "k", queue.EnqueueOptions{UniqueKey: "u"})); err != nil || ins || j.ID != first.ID {
		t.Fatalf("insert while running = %v, %v, %v", j, ins, err)
	}
	err = s.JobTransition(ctx, jobstore.Transition{ID: first.ID, LeaseToken: claimed[0].LeaseToken, State: jobstore.StateDead,
		Attempt: 1, FinishedAt: t0, DeadReason: "permanent", Entry: jobstore.Attempt{Attempt: 1, Outcome: "permanent", Action: "give_up"}})
	if err != nil {
		t.Fatal(err)
	}
	second, ins, err := s.JobInsert(ctx, newInsert(t, "k", queue.EnqueueOptions{UniqueKey: "u"}))
	if err != nil || !ins || second.ID == first.ID {
		t.Fatalf("insert after dead = %v, %v, %v", second, ins, err)
	}
	n, err := s.DeadRequeue(ctx, jobstore.OpParams{Filter: jobstore.JobFilter{}, Now: t0, Entry: jobstore.Attempt{Outcome: jobstore.OutcomeRequeued, Action: "requeue"}})
	if err != nil || n != 0 {
		t.Fatalf("DeadRequeue while key held = %d, %v; want 0", n, err)
	}
}

func TestClaimSkipLocked(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := t.Context()
	const jobs = 200
	for i := range jobs {
		if _, _, err := s.JobInsert(ctx, newInsert(t, "k", queue.EnqueueOptions{Priority: i % 3})); err != nil {
			t.Fatal(err)
		}
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		seen = map[int64]bool{}
	)
	for w := range 8 {
		wg.Go(func() {
			for {
				got, err := s.JobClaim(ctx, jobstore.ClaimParams{Queue: queue.DefaultQueue, Limit: 7, Now: t0,
					LeaseUntil: t0.Add(time.Minute), Worker: fmt.Sprint("w", w)})
				if err != nil {
					t.Error(err)
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, j := range got {
					if seen[j.ID] {
						t.Errorf("job %d claimed twice", j.ID)
					}
					seen[j.ID] = true
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != jobs {
		t.Errorf("claimed %d jobs, want %d", len(seen), jobs)
	}
}

func TestClosedStore(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	s.Close()
	if err := s.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	if _, err := s.JobNotify(t.Context()); !errors.Is(err, ErrClosed) {
		t.Errorf("JobNotify after Close = %v, want ErrClosed", err)
	}
	if _, err := s.JobGet(context.Background(), 1); err == nil || !strings.HasPrefix(err.Error(), "pgstore: ") {
		t.Errorf("JobGet after Close = %v", err)
	}
}

// TestDeadRequeueSharedKey: of several dead jobs sharing a unique key,
// one requeue revives only the oldest.
func TestDeadRequeueSharedKey(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := t.Context()
	var dead []int64
	for range 3 {
		dead = append(dead, killJob(t, s, "shared").ID)
	}
	n, err := s.DeadRequeue(ctx, jobstore.OpParams{Filter: jobstore.JobFilter{}, Now: t0, Entry: jobstore.Attempt{Outcome: jobstore.OutcomeRequeued, Action: "requeue"}})
	if err != nil || n != 1 {
		t.Fatalf("DeadRequeue = %d, %v; want 1", n, err)
	}
	if j, _ := s.JobGet(ctx, dead[0]); j.State != jobstore.StateAvailable {
		t.Errorf("oldest job is %s, want available", j.State)
	}
}

// killJob inserts a job with key, in a queue of that name, and makes it
// dead.
func killJob(t *testing.T, s *Store, key string) *jobstore.Job {
	t.Helper()
	ctx := t.Context()
	j, ins, err := s.JobInsert(ctx, newInsert(t, "k", queue.EnqueueOptions{Queue: key, UniqueKey: key}))
	if err != nil || !ins {
		t.Fatalf("JobInsert = %v, %v", ins, err)
	}
	c, err := s.JobClaim(ctx, jobstore.ClaimParams{Queue: key, Limit: 1, Now: t0, LeaseUntil: t0.Add(time.Minute)})
	if err != nil || len(c) != 1 || c[0].ID != j.ID {
		t.Fatalf("JobClaim = %v, %v", c, err)
	}
	if err := s.JobTransition(ctx, jobstore.Transition{ID: j.ID, LeaseToken: c[0].LeaseToken, State: jobstore.StateDead,
		Attempt: 1, FinishedAt: t0, DeadReason: "permanent"}); err != nil {
		t.Fatal(err)
	}
	return j
}

// TestDeadRequeueRacesInsert requeues a dead job while another goroutine
// enqueues its key: neither fails, and one job at most holds the key.
func TestDeadRequeueRacesInsert(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := t.Context()
	for round := range 20 {
		key := fmt.Sprint("race-", round)
		killJob(t, s, key)
		start := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			<-start
			if _, _, err := s.JobInsert(ctx, newInsert(t, "k", queue.EnqueueOptions{Queue: key, UniqueKey: key})); err != nil {
				t.Error(err)
			}
		})
		wg.Go(func() {
			<-start
			if _, err := s.DeadRequeue(ctx, jobstore.OpParams{Filter: jobstore.JobFilter{}, Now: t0, Entry: jobstore.Attempt{Outcome: jobstore.OutcomeRequeued, Action: "requeue"}}); err != nil {
				t.Error(err)
			}
		})
		close(start)
		wg.Wait()
		var live int
		if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM heed_jobs WHERE unique_key = $1 AND state = 'available'`, key).Scan(&live); err != nil || live != 1 {
			t.Fatalf("round %d: %d live jobs hold the key (%v), want 1", round, live, err)
		}
	}
}

// TestClaimUsesIndex checks the plans of the claim (with and without a
// limit) and rescue queries over
// 20,000 jobs, generic (as pgx's prepared statements get after a few
// executions) and custom: they must use their partial indexes and never
// scan the table.
func TestClaimUsesIndex(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := t.Context()
	if _, err := s.Pool().Exec(ctx, `INSERT INTO heed_jobs (kind, queue, args, state, available_at, created_at,
		lease_token, lease_until)
		SELECT 'k', 'q1', '{}', CASE WHEN g % 10 = 0 THEN 'running' ELSE 'available' END,
			$1::timestamptz - g * interval '1 ms', $1,
			CASE WHEN g % 10 = 0 THEN 'token' END, CASE WHEN g % 10 = 0 THEN $1 END
		FROM generate_series(1, 100000) AS g`, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `ANALYZE heed_jobs`); err != nil {
		t.Fatal(err)
	}
	conn, err := s.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	defer conn.Exec(context.WithoutCancel(ctx), `RESET plan_cache_mode`)
	ts := func(t time.Time) string { return "'" + t.Format(time.RFC3339Nano) + "'" }
	// The limited claim (limit.go) and its look at the queue's limit.
	if err := s.QueueLimit(ctx, "q1", jobstore.Limit{Concurrency: 20000}, t0); err != nil {
		t.Fatal(err)
	}
	const limitedTypes = "text, timestamptz, int, timestamptz, text, int, float8, timestamptz, bool"
	limitedArgs := "'q1', " + ts(t0) + ", 10, " + ts(t0.Add(time.Minute)) + ", 'w', 20000, 0, " + ts(t0) + ", false"
	for _, mode := range []string{"force_generic_plan", "force_custom_plan"} {
		if _, err := conn.Exec(ctx, `SET plan_cache_mode = `+mode); err != nil {
			t.Fatal(err)
		}
		// A statement prepared in SQL, so that plan_cache_mode applies, as
		// it does to pgx's cached statements.
		for _, q := range []struct {
			name, types, sql, args, index string
		}{
			{"claim", "text, timestamptz, int, timestamptz, text", claimSQL(""),
				"'q1', " + ts(t0) + ", 10, " + ts(t0.Add(time.Minute)) + ", 'w'", "heed_jobs_claim_idx"},
			{"claim_first", "text, timestamptz, int, timestamptz, text", claimSQL(sqlfilter.Claim(&jobstore.ClaimParams{FirstOnly: true})),
				"'q1', " + ts(t0) + ", 10, " + ts(t0.Add(time.Minute)) + ", 'w'", "heed_jobs_claim_idx"},
			{"claim_limited", limitedTypes, claimLimitedSQL(""), limitedArgs, "heed_jobs_claim_idx"},
			{"claim_limited_count", limitedTypes, claimLimitedSQL(""), limitedArgs, "heed_jobs_running_idx"},
			{"limit_peek", "text, timestamptz", limitPeekSQL(""), "'q1', " + ts(t0), "heed_jobs_running_idx"},
			{"rescue", "timestamptz, timestamptz, int", rescueSQL,
				ts(t0.Add(time.Hour)) + ", " + ts(t0.Add(2*time.Hour)) + ", 10", "heed_jobs_lease_idx"},
		} {
			tx, err := conn.Begin(ctx) // EXPLAIN ANALYZE writes: roll it back
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(ctx, "PREPARE "+q.name+" ("+q.types+") AS "+q.sql); err != nil {
				t.Fatal(err)
			}
			rows, err := tx.Query(ctx, "EXPLAIN (ANALYZE, COSTS OFF) EXECUTE "+q.name+" ("+q.args+")")
			if err != nil {
				t.Fatal(err)
			}
			var plan strings.Builder
			for rows.Next() {
				var line string
				if err := rows.Scan(&line); err != nil {
					t.Fatal(err)
				}
				plan.WriteString(line + "\n")
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			tx.Rollback(ctx)
			if _, err := conn.Exec(ctx, "DEALLOCATE "+q.name); err != nil {
				t.Fatal(err)
			}
			if p := plan.String(); !strings.Contains(p, q.index) || strings.Contains(p, "Seq Scan") {
				t.Errorf("%s, %s: plan should use %s and scan no table:\n%s", q.name, mode, q.index, p)
			}
		}
	}
}

func TestContextCanceled(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.JobGet(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("JobGet with a canceled context = %v, want context.Canceled", err)
	}
	if _, _, err := s.JobInsert(ctx, newInsert(t, "k", queue.EnqueueOptions{})); !errors.Is(err, context.Canceled) {
		t.Errorf("JobInsert with a canceled context = %v, want context.Canceled", err)
	}
}
