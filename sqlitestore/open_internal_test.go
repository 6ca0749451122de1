package sqlitestore

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heed-go/heed/internal/schema"
	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
)

// previousVersion creates a database at path left at the previous schema
// version: the first migrations but the last, as an older heed leaves it.
func previousVersion(t *testing.T, path string) {
	t.Helper()
	ctx := context.Background()
	raw, err := OpenWith(ctx, path, OpenOptions{MigrateOff: true, CreateEmpty: true, stopAt: SchemaVersion() - 1})
	if err != nil {
		t.Fatal(err)
	}
	raw.Close()
}

func TestOpenMigrateOff(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	previousVersion(t, path)
	last := migrations[len(migrations)-1].Name

	for _, o := range []OpenOptions{{MigrateOff: true}, {MigrateOff: true, CreateEmpty: true}, {ReadOnly: true}} {
		s, err := OpenWith(ctx, path, o)
		var behind *jobstore.SchemaBehindError
		if s != nil || !errors.As(err, &behind) || !errors.Is(err, jobstore.ErrSchemaTooOld) ||
			behind.Database != SchemaVersion()-1 || !slices.Equal(behind.Missing, []string{last}) {
			t.Fatalf("OpenWith(%+v) on the previous version = %v, %v; want a SchemaBehindError naming %s", o, s, err, last)
		}
		t.Logf("%+v: %v", o, err)
	}
	s, err := Open(ctx, path) // Open migrates
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Check(ctx); err != nil {
		t.Errorf("Check after Open: %v", err)
	}
	s.Close()
}

// entries lists dir, to check that a failed open created nothing.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// Open errors name their cause and create nothing.
func TestOpenErrorsNameTheCause(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	t.Chdir(dir)
	for _, tc := range []struct {
		dsn  string
		o    OpenOptions
		want string
		is   error
	}{
		{"mysql://heed:s3cret@db.internal/heed", OpenOptions{}, `unsupported database URL scheme "mysql"`, jobstore.ErrInvalid},
		{"", OpenOptions{}, "the database name is empty: want a file path", jobstore.ErrInvalid},
		{"file:?mode=rw", OpenOptions{}, `no file path in "file:?mode=rw": want a file path`, jobstore.ErrInvalid},
		{dir, OpenOptions{}, "is a directory, not a database file", jobstore.ErrInvalid},
		{filepath.Join(dir, "no", "such", "heed.db"), OpenOptions{}, "directory " + filepath.Join(dir, "no", "such") + " does not exist", fs.ErrNotExist},
		{filepath.Join(dir, "missing.db"), OpenOptions{MigrateOff: true}, "does not exist (nothing was created)", fs.ErrNotExist},
		{filepath.Join(dir, "missing.db"), OpenOptions{ReadOnly: true}, "does not exist (nothing was created)", fs.ErrNotExist},
	} {
		s, err := OpenWith(ctx, tc.dsn, tc.o)
		if s != nil || err == nil || !strings.HasPrefix(err.Error(), "sqlitestore: ") || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, tc.is) {
			t.Errorf("OpenWith(%q, %+v) = %v, %v; want an error with %q matching %v", tc.dsn, tc.o, s, err, tc.want, tc.is)
		}
		// One prefix, this package's: the sentinel matches without its
		// words ("queue: invalid input") added after the cause.
		if err != nil && (strings.Count(err.Error(), "sqlitestore:") != 1 || strings.Contains(err.Error(), "queue:")) {
			t.Errorf("OpenWith(%q): %q says more than one prefix", tc.dsn, err)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("the error shows the password: %v", err)
		}
	}
	if got := entries(t, dir); len(got) != 0 {
		t.Errorf("failed opens created %q", got)
	}
}

// A read-only command can read a database it may not write: ReadOnly opens
// with mode=ro, and every write fails.
func TestOpenReadOnly(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "heed.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	in, err := queue.NewJobInsert("k", []byte(`{}`), queue.EnqueueOptions{}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	job, _, err := s.JobInsert(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := os.Chmod(path, 0o444); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	if os.Geteuid() != 0 { // root writes read-only files anyway
		if s, err := Open(ctx, path); s != nil || err == nil || !strings.Contains(err.Error(), "is read-only") {
			t.Errorf("Open of a read-only file = %v, %v; want an error saying it is read-only", s, err)
		}
	}
	ro, err := OpenWith(ctx, path, OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if got, err := ro.JobGet(ctx, job.ID); err != nil || got.ID != job.ID {
		t.Errorf("JobGet read-only = %v, %v", got, err)
	}
	if _, err := ro.Stats(ctx, time.Now()); err != nil {
		t.Errorf("Stats read-only: %v", err)
	}
	if _, _, err := ro.JobInsert(ctx, in); err == nil {
		t.Error("JobInsert through a read-only store succeeded")
	}
	ro.Close()
	// SQLite may add its -wal and -shm files beside (readers of a WAL
	// database share them with writers), but the database is untouched.
	if after, err := os.ReadFile(path); err != nil || string(after) != string(before) {
		t.Errorf("the read-only open changed the database file (%v)", err)
	}
}

// ReadBehind opens a schema down to schema.MinReadVersion as it is, for reading
// and operating, and refuses one further behind; without it a schema
// behind is refused.
func TestOpenReadBehind(t *testing.T) {
	ctx := context.Background()
	for _, v := range []int{schema.MinReadVersion, schema.MinReadVersion - 1} {
		path := filepath.Join(t.TempDir(), "old.db")
		old, err := OpenWith(ctx, path, OpenOptions{MigrateOff: true, CreateEmpty: true, stopAt: v})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := queue.NewClient(old, queue.ClientConfig{}).Enqueue(ctx, "noop", nil, queue.EnqueueOptions{}); err != nil {
			t.Fatal(err)
		}
		old.Close()
		if _, err := OpenWith(ctx, path, OpenOptions{MigrateOff: true}); !errors.Is(err, jobstore.ErrSchemaTooOld) {
			t.Errorf("schema %d without ReadBehind: %v, want ErrSchemaTooOld", v, err)
		}
		s, err := OpenWith(ctx, path, OpenOptions{MigrateOff: true, ReadBehind: true})
		if v < schema.MinReadVersion {
			if !errors.Is(err, jobstore.ErrSchemaTooOld) {
				t.Errorf("schema %d with ReadBehind: %v, want ErrSchemaTooOld", v, err)
				s.Close()
			}
			continue
		}
		if err != nil {
			t.Fatalf("schema %d with ReadBehind: %v", v, err)
		}
		c := queue.NewClient(s, queue.ClientConfig{})
		if jobs, err := c.Jobs(ctx, jobstore.JobFilter{}); err != nil || len(jobs) != 1 {
			t.Errorf("schema %d: Jobs = %d, %v", v, len(jobs), err)
		}
		if _, err := c.Stats(ctx); err != nil {
			t.Errorf("schema %d: Stats: %v", v, err)
		}
		// The dashboard's index of causes is missing: it says so, and
		// the dashboard groups the newest dead jobs instead.
		if _, err := s.DeadCauseCounts(ctx, 0); !errors.Is(err, jobstore.ErrSchemaTooOld) {
			t.Errorf("schema %d: DeadCauseCounts: %v, want ErrSchemaTooOld", v, err)
		}
		if _, err := s.DeadOfCause(ctx, jobstore.CauseKey{Kind: "noop"}, 1); !errors.Is(err, jobstore.ErrSchemaTooOld) {
			t.Errorf("schema %d: DeadOfCause: %v, want ErrSchemaTooOld", v, err)
		}
		if _, err := s.JobSchedules(ctx); !errors.Is(err, jobstore.ErrSchemaTooOld) {
			t.Errorf("schema %d: JobSchedules: %v, want ErrSchemaTooOld", v, err)
		}
		if _, err := c.Cancel(ctx, jobstore.JobFilter{IDs: []int64{1}}); err != nil {
			t.Errorf("schema %d: Cancel: %v", v, err)
		}
		s.Close()
	}
}
