package sqlitestore

import (
	"context"
	"database/sql"
	"time"
)

// The WAL is copied back into the database file (checkpointed) by a
// goroutine of the store's own, on a connection of its own, instead of by
// whichever write commits the 1000th page, as SQLite does by default. That
// commit would stall, and every write queued behind it on the single
// writer (a claim, an enqueue) with it: a checkpoint copies the pages and
// waits for the disk twice, several milliseconds on a busy disk, which is
// most of a worker's enqueue-to-start p99. A passive checkpoint runs
// beside the writer and the readers without blocking them.
const (
	// checkpointEvery is how often the checkpointer runs.
	checkpointEvery = 250 * time.Millisecond
	// writerCheckpointPages is the WAL size, in pages, at which the
	// writer checkpoints by itself anyway, should the checkpointer fall
	// behind (a reader holding an old snapshot keeps a passive checkpoint
	// from finishing): SQLite's default is 1000.
	writerCheckpointPages = 10000
)

// checkpointer runs passive checkpoints on db every checkpointEvery until
// stop closes, then closes db and closes done.
func checkpointer(db *sql.DB, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	defer db.Close()
	t := time.NewTicker(checkpointEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		// A failure (the file is busy, a disk error the writer will also
		// see) only leaves the work to the next run or to the writer.
		_, _ = db.ExecContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`)
		cancel()
	}
}
