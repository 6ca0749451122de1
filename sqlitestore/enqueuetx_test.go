package sqlitestore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/heed-go/heed/clock/clocktest"
	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
	"github.com/heed-go/heed/sqlitestore"
)

// An order and the job that ships it, in one transaction: both or neither.
func ExampleStore_EnqueueTx() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "heed")
	defer os.RemoveAll(dir)
	st, err := sqlitestore.Open(ctx, filepath.Join(dir, "shop.db"))
	if err != nil {
		panic(err)
	}
	defer st.Close()
	if _, err := st.DB().ExecContext(ctx, `CREATE TABLE orders (id INTEGER PRIMARY KEY)`); err != nil {
		panic(err)
	}

	tx, err := st.DB().BeginTx(ctx, nil)
	if err != nil {
		panic(err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO orders (id) VALUES (42)`); err != nil {
		panic(err)
	}
	job, _, err := st.EnqueueTx(ctx, tx, "ship", map[string]int{"order": 42}, queue.EnqueueOptions{})
	if err != nil {
		panic(err)
	}
	if err := tx.Commit(); err != nil {
		panic(err)
	}
	job, _ = st.JobGet(ctx, job.ID)
	fmt.Println(job.Kind, string(job.Args), job.State)
	// Output: ship {"order":42} available
}

func TestEnqueueTx(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	defer s.Close()
	ch, err := s.JobNotify(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB().ExecContext(ctx, `CREATE TABLE orders (id INTEGER PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	count := func(table string) int {
		var n int
		if err := s.DB().QueryRowContext(ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	// Rolled back: no order, no job.
	tx, err := s.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO orders VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	job, inserted, err := s.EnqueueTx(ctx, tx, "ship", map[string]int{"order": 1}, queue.EnqueueOptions{Queue: "tx", UniqueKey: "order-1"})
	if err != nil || !inserted {
		t.Fatalf("EnqueueTx = %v, %v", inserted, err)
	}
	if again, inserted, err := s.EnqueueTx(ctx, tx, "ship", map[string]int{"order": 1}, queue.EnqueueOptions{Queue: "tx", UniqueKey: "order-1"}); err != nil || inserted || again.ID != job.ID {
		t.Fatalf("EnqueueTx of a key held in the same tx = %+v, %v, %v; want job %d, false", again, inserted, err, job.ID)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	<-ch // announced (a worker's claim would have waited for the rollback)
	if _, err := s.JobGet(ctx, job.ID); !errors.Is(err, jobstore.ErrNotFound) {
		t.Fatalf("job of a rolled-back transaction: %v, want ErrNotFound", err)
	}
	if n := count("orders"); n != 0 {
		t.Fatalf("%d orders after rollback", n)
	}

	// Committed: the order and the job.
	tx, err = s.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO orders VALUES (2)`); err != nil {
		t.Fatal(err)
	}
	job, _, err = s.EnqueueTx(ctx, tx, "ship", json.RawMessage(`{"order":2}`), queue.EnqueueOptions{Queue: "tx", UniqueKey: "order-2"})
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if q := <-ch; q != "tx" {
		t.Errorf("notified %q, want tx", q)
	}
	got, err := s.JobGet(ctx, job.ID)
	if err != nil || string(got.Args) != `{"order":2}` || got.UniqueKey != "order-2" {
		t.Fatalf("JobGet = %+v, %v", got, err)
	}
	// The key is held now, outside the transaction too.
	if j, inserted, err := s.JobInsert(ctx, newInsert(t, "ship", queue.EnqueueOptions{UniqueKey: "order-2"})); err != nil || inserted || j.ID != job.ID {
		t.Errorf("JobInsert of the committed key = %v, %v; want job %d", inserted, err, job.ID)
	}

	// Invalid input is refused before anything is written.
	tx, err = s.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	for _, bad := range []struct {
		kind string
		args any
	}{{"", nil}, {"k", json.RawMessage(`{"a":`)}, {"k", make(chan int)}} {
		if _, _, err := s.EnqueueTx(ctx, tx, bad.kind, bad.args, queue.EnqueueOptions{}); !errors.Is(err, jobstore.ErrInvalid) {
			t.Errorf("EnqueueTx(%q, %v): %v, want ErrInvalid", bad.kind, bad.args, err)
		}
	}
}

func newInsert(t *testing.T, kind string, opts queue.EnqueueOptions) jobstore.JobInsert {
	t.Helper()
	in, err := queue.NewJobInsert(kind, json.RawMessage(`{}`), opts, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// EnqueueTx times the job by the store's clock, as pgstore's does.
func TestEnqueueTxUsesStoreClock(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	s, err := sqlitestore.OpenWith(ctx, filepath.Join(t.TempDir(), "q.db"), sqlitestore.OpenOptions{Clock: clocktest.New(now)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tx, err := s.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	job, _, err := s.EnqueueTx(ctx, tx, "k", nil, queue.EnqueueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !job.CreatedAt.Equal(now) || !job.AvailableAt.Equal(now) {
		t.Errorf("created %v, available %v; want the store clock's %v", job.CreatedAt, job.AvailableAt, now)
	}
}
