package sqlitestore

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/heed-go/heed/internal/schema"
	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
)

// A newer binary's expand step (compatible down to this binary's version)
// is recorded apart from heed_schema_migrations, whose newest row is all an
// older heed reads: this binary, and the previous release, keep opening,
// migrating (a no-op) and working on the database. A contract step raises
// the floor: then it is refused, naming the floor.
func TestExpandStepKeepsOlderBinaries(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "jobs.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	known := SchemaVersion()
	expand := schema.Step{Version: known + 1, Name: "9001_test_expand", SQL: `CREATE TABLE heed_test_expand (a INTEGER)`, Floor: known}
	contract := schema.Step{Version: known + 2, Name: "9002_test_contract", SQL: `CREATE TABLE heed_test_contract (a INTEGER)`, Floor: known + 2}
	newer := append(append([]schema.Step(nil), migrations...), expand)
	if applied, err := schema.Run(ctx, "sqlitestore", liteDB{s, s.w}, newer, time.Now()); err != nil || len(applied) != 1 {
		t.Fatalf("the newer binary's migrate: %v, %v", applied, err)
	}
	ledger := func() (floor, ahead int) {
		t.Helper()
		if err := s.r.QueryRowContext(ctx, `SELECT max(version) FROM heed_schema_migrations`).Scan(&floor); err != nil {
			t.Fatal(err)
		}
		if err := s.r.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM heed_schema_expansions`).Scan(&ahead); err != nil {
			t.Fatal(err)
		}
		return floor, ahead
	}
	if floor, ahead := ledger(); floor != known || ahead != known+1 {
		t.Fatalf("after the expand step: migrations table at %d, expansions at %d; want %d and %d", floor, ahead, known, known+1)
	}
	// This binary (one release behind the newer one) opens, migrates and works.
	if err := s.Check(ctx); err != nil {
		t.Fatalf("Check after a newer expand step: %v", err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate after a newer expand step: %v", err)
	}
	again, err := OpenWith(ctx, path, OpenOptions{MigrateOff: true})
	if err != nil {
		t.Fatalf("open after a newer expand step: %v", err)
	}
	again.Close()
	c := queue.NewClient(s, queue.ClientConfig{})
	if _, _, err := c.Enqueue(ctx, "noop", nil, queue.EnqueueOptions{}); err != nil {
		t.Fatal(err)
	}
	if l, err := (liteDB{s, s.r}).Version(ctx); err != nil || l != (schema.Level{Version: known + 1, Floor: known}) {
		t.Errorf("level = %+v, %v; want %d compatible down to %d", l, err, known+1, known)
	}

	// A contract step raises the floor: the expand step moves to the
	// migrations table, and this binary refuses the database.
	newer = append(newer, contract)
	if applied, err := schema.Run(ctx, "sqlitestore", liteDB{s, s.w}, newer, time.Now()); err != nil || len(applied) != 1 {
		t.Fatalf("the contract step: %v, %v", applied, err)
	}
	if floor, ahead := ledger(); floor != known+2 || ahead != 0 {
		t.Fatalf("after the contract step: migrations table at %d, expansions at %d; want %d and none", floor, ahead, known+2)
	}
	var tooNew *jobstore.SchemaTooNewError
	if err := s.Check(ctx); !errors.As(err, &tooNew) || tooNew.Floor != known+2 || tooNew.Database != known+2 {
		t.Fatalf("Check after a contract step = %v, want a SchemaTooNewError with floor %d", err, known+2)
	}
}
