package pgstore

import (
	"errors"
	"testing"
	"time"

	"github.com/heed-go/heed/internal/schema"
	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
)

// As sqlitestore's TestExpandStepKeepsOlderBinaries: a newer binary's
// expand step leaves heed_migrations (all an older heed reads) at this
// binary's version, so that it keeps working; a contract step raises it.
func TestExpandStepKeepsOlderBinaries(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := t.Context()
	known := SchemaVersion()
	expand := schema.Step{Version: known + 1, Name: "9001_test_expand", SQL: `CREATE TABLE heed_test_expand (a integer)`, Floor: known}
	contract := schema.Step{Version: known + 2, Name: "9002_test_contract", SQL: `CREATE TABLE heed_test_contract (a integer)`, Floor: known + 2}
	newer := append(append([]schema.Step(nil), migrations...), expand)
	if applied, err := migrate(ctx, s.pool, newer, time.Now()); err != nil || len(applied) != 1 {
		t.Fatalf("the newer binary's migrate: %v, %v", applied, err)
	}
	ledger := func() (floor, ahead int) {
		t.Helper()
		if err := s.pool.QueryRow(ctx, `SELECT max(version) FROM heed_migrations`).Scan(&floor); err != nil {
			t.Fatal(err)
		}
		if err := s.pool.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM heed_expansions`).Scan(&ahead); err != nil {
			t.Fatal(err)
		}
		return floor, ahead
	}
	if floor, ahead := ledger(); floor != known || ahead != known+1 {
		t.Fatalf("after the expand step: heed_migrations at %d, heed_expansions at %d; want %d and %d", floor, ahead, known, known+1)
	}
	if err := s.Check(ctx); err != nil {
		t.Fatalf("Check after a newer expand step: %v", err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate after a newer expand step: %v", err)
	}
	if _, _, err := queue.NewClient(s, queue.ClientConfig{}).Enqueue(ctx, "noop", nil, queue.EnqueueOptions{}); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Version(ctx); err != nil || v != known+1 {
		t.Errorf("Version = %d, %v; want %d", v, err, known+1)
	}
	newer = append(newer, contract)
	if applied, err := migrate(ctx, s.pool, newer, time.Now()); err != nil || len(applied) != 1 {
		t.Fatalf("the contract step: %v, %v", applied, err)
	}
	if floor, ahead := ledger(); floor != known+2 || ahead != 0 {
		t.Fatalf("after the contract step: heed_migrations at %d, heed_expansions at %d; want %d and none", floor, ahead, known+2)
	}
	var tooNew *jobstore.SchemaTooNewError
	if err := s.Check(ctx); !errors.As(err, &tooNew) || tooNew.Floor != known+2 {
		t.Fatalf("Check after a contract step = %v, want a SchemaTooNewError with floor %d", err, known+2)
	}
}
