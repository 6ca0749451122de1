package sqlitestore_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heed-go/heed/internal/leakcheck"
	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
	"github.com/heed-go/heed/queue/storetest"
	"github.com/heed-go/heed/retry/executortest"
	"github.com/heed-go/heed/retry/overtimetest"
	"github.com/heed-go/heed/sqlitestore"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

func open(t testing.TB) *sqlitestore.Store {
	t.Helper()
	s, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "heed.db"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) jobstore.Store { return open(t) })
}

func TestStoreMemory(t *testing.T) {
	storetest.Run(t, func(t *testing.T) jobstore.Store {
		s, err := sqlitestore.Open(context.Background(), ":memory:")
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestSchemaTooNew(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "heed.db")
	s, err := sqlitestore.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.JobInsert(ctx, mustInsert(t)); err != nil {
		t.Fatal(err)
	}
	s.Close()

	// A newer heed migrated the database.
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`INSERT INTO heed_schema_migrations (version, name, applied_at) VALUES (999, '0999_future.sql', 0)`); err != nil {
		t.Fatal(err)
	}
	raw.Close()

	_, err = sqlitestore.Open(ctx, path)
	if !errors.Is(err, jobstore.ErrSchemaTooNew) {
		t.Fatalf("Open of a newer database: %v, want ErrSchemaTooNew", err)
	}
	want := fmt.Sprintf("version 999 is newer than this binary knows (version %d)", sqlitestore.SchemaVersion())
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
}

func mustInsert(t *testing.T) jobstore.JobInsert {
	in, err := queue.NewJobInsert("k", nil, queue.EnqueueOptions{}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func TestMigrateRecordsVersions(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "heed.db")
	s, err := sqlitestore.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for range 2 {
		if err := s.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
	}
	raw, _ := sql.Open("sqlite", path)
	defer raw.Close()
	var n, v int
	if err := raw.QueryRow(`SELECT count(*), max(version) FROM (SELECT version FROM heed_schema_migrations UNION ALL SELECT version FROM heed_schema_expansions)`).Scan(&n, &v); err != nil {
		t.Fatal(err)
	}
	if n != sqlitestore.SchemaVersion() || v != sqlitestore.SchemaVersion() || v < 1 {
		t.Errorf("%d migrations recorded, version %d; binary knows %d", n, v, sqlitestore.SchemaVersion())
	}
	var mode string
	if err := raw.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal mode %q, %v; want wal", mode, err)
	}
}

func TestOpenDSN(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, dsn := range []string{
		filepath.Join(dir, "a.db"),
		"sqlite:" + filepath.Join(dir, "b.db"),
		"sqlite://" + filepath.Join(dir, "c.db"),
		"file:" + filepath.Join(dir, "d.db") + "?cache=private",
		"file://" + filepath.Join(dir, "e f.db"),
		":memory:",
	} {
		s, err := sqlitestore.Open(ctx, dsn)
		if err != nil {
			t.Errorf("Open(%q): %v", dsn, err)
			continue
		}
		if _, _, err := s.JobInsert(ctx, mustInsert(t)); err != nil {
			t.Errorf("Open(%q): insert: %v", dsn, err)
		}
		s.Close()
	}
	for _, name := range []string{"a.db", "b.db", "c.db", "d.db", "e f.db"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s not created: %v", name, err)
		}
	}
	for _, dsn := range []string{"", "sqlite:", "file:"} {
		if _, err := sqlitestore.Open(ctx, dsn); !errors.Is(err, jobstore.ErrInvalid) {
			t.Errorf("Open(%q): %v, want ErrInvalid", dsn, err)
		}
	}
	if _, err := sqlitestore.Open(ctx, filepath.Join(dir, "no", "such", "dir", "x.db")); err == nil {
		t.Error("Open in a missing directory succeeded")
	}
}

// Two Stores on one file stand for two processes: claims never overlap.
func TestTwoStoresOneFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "heed.db")
	a, err := sqlitestore.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := sqlitestore.Open(ctx, "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	const n = 60
	for range n {
		if _, _, err := a.JobInsert(ctx, mustInsert(t)); err != nil {
			t.Fatal(err)
		}
	}
	var (
		mu   sync.Mutex
		seen = map[int64]int{}
		wg   sync.WaitGroup
	)
	for i, s := range []*sqlitestore.Store{a, b, a, b} {
		wg.Go(func() {
			for {
				now := time.Now()
				jobs, err := s.JobClaim(ctx, jobstore.ClaimParams{Queue: queue.DefaultQueue, Limit: 2, Now: now.Add(time.Second),
					LeaseUntil: now.Add(time.Minute), Worker: fmt.Sprint(i)})
				if err != nil {
					t.Error(err)
					return
				}
				if len(jobs) == 0 {
					return
				}
				mu.Lock()
				for _, j := range jobs {
					seen[j.ID]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != n {
		t.Errorf("%d jobs claimed, want %d", len(seen), n)
	}
	for id, c := range seen {
		if c != 1 {
			t.Errorf("job %d claimed %d times", id, c)
		}
	}
}

func TestJobNotify(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s := open(t)
	defer s.Close()
	ch, err := s.JobNotify(ctx)
	if err != nil {
		t.Fatal(err)
	}
	in := mustInsert(t)
	in.Queue = "mail"
	if _, _, err := s.JobInsert(ctx, in); err != nil {
		t.Fatal(err)
	}
	select {
	case q := <-ch:
		if q != "mail" {
			t.Errorf("notified %q, want mail", q)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no notification")
	}
	cancel()
	for range ch { // closed when ctx ends
	}
	ch2, _ := s.JobNotify(context.Background())
	s.Close()
	for range ch2 { // closed by Close
	}
	if _, err := s.JobNotify(context.Background()); err == nil {
		t.Error("JobNotify after Close succeeded")
	}
}

// The job queue over SQLite takes the same decisions as every other
// executor of a retry.Policy (in virtual time).
func TestExecutorConformance(t *testing.T) {
	executortest.Run(t, storetest.Executor(func(t *testing.T) jobstore.Store {
		s, err := sqlitestore.Open(context.Background(), ":memory:")
		if err != nil {
			t.Fatal(err)
		}
		return s
	}, true))
}

// The job queue over SQLite keeps the over-time bounds of every executor
// (in virtual time).
func TestOverTime(t *testing.T) {
	// Each outage takes about 5 s of real time, 150 s under -race: two of
	// the ten offsets here, none under -race.
	skip := storetest.OverTimeSlow("slow over SQLite (about 5 s of real time each)")
	if raceOn {
		for _, s := range overtimetest.Scenarios() {
			if strings.HasPrefix(s.Name, "outage") || s.Name == "recovery" {
				skip[s.Name] = "too slow under -race over SQLite (150 s of real time each); run without -race"
			}
		}
	}
	overtimetest.Run(t, overtimetest.Skip(storetest.OverTime(func(t *testing.T) jobstore.Store {
		s, err := sqlitestore.Open(context.Background(), ":memory:")
		if err != nil {
			t.Fatal(err)
		}
		return s
	}, false), skip))
}
