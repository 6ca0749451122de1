package pgstore

import (
	"context"
	"testing"
	"time"

	"github.com/heed-go/heed/queue/jobstore"
)

// BenchmarkPrune measures one retention statement: deleting
// jobstore.RetentionBatch succeeded jobs, the oldest, out of a table that
// holds 10,000 more: how long retention holds its row locks at a time.
func BenchmarkPrune(b *testing.B) {
	ctx := context.Background()
	s := openTest(b)
	old := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	n := b.N*jobstore.RetentionBatch + 10_000
	if _, err := s.pool.Exec(ctx, `INSERT INTO heed_jobs (kind, queue, args, state, available_at, created_at, finished_at, history)
		SELECT 'k', 'q', '{}', 'succeeded', $2::timestamptz, $2::timestamptz, $2::timestamptz + i * interval '1 microsecond', '[{"attempt":1,"outcome":"ok","action":"done"}]'
		FROM generate_series(1, $1) AS i`, n, old); err != nil {
		b.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `ANALYZE heed_jobs`); err != nil {
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
