package sqlitestore

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/heed-go/heed/queue/jobstore"
)

// BenchmarkPrune measures one retention statement: deleting
// jobstore.RetentionBatch succeeded jobs, the oldest, out of a table that
// holds 10,000 more: how long retention holds SQLite's writer at a time.
func BenchmarkPrune(b *testing.B) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(b.TempDir(), "heed.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	old := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	n := b.N*jobstore.RetentionBatch + 10_000
	if _, err := s.w.ExecContext(ctx, `WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < ?)
		INSERT INTO heed_jobs (kind, queue, args, state, available_at, created_at, finished_at, history)
		SELECT 'k', 'q', '{}', 'succeeded', ?, ?, ? + i, '[{"attempt":1,"outcome":"ok","action":"done"}]' FROM seq`,
		n, old.UnixMicro(), old.UnixMicro(), old.UnixMicro()); err != nil {
		b.Fatal(err)
	}
	before := old.Add(time.Hour)
	b.ResetTimer()
	for range b.N {
		got, err := s.JobPrune(ctx, jobstore.PruneParams{State: jobstore.StateSucceeded, Before: before, Limit: jobstore.RetentionBatch})
		if err != nil || got != jobstore.RetentionBatch {
			b.Fatalf("JobPrune = %d, %v", got, err)
		}
	}
}
