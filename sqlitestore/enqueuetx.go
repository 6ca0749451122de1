package sqlitestore

import (
	"context"
	"database/sql"

	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
)

// DB returns the store's writer: a pool of one connection to its database
// file. Begin a transaction on it to change your own tables and enqueue
// jobs ([Store.EnqueueTx]) in one commit. While that transaction is open
// it holds SQLite's write lock, and the store's own writes (workers'
// claims and results) wait for it: keep it short. Do not close the DB; it
// is closed by [Store.Close].
func (s *Store) DB() *sql.DB { return s.w }

// EnqueueTx enqueues a job inside the caller's transaction tx: the job
// exists exactly when tx commits; when tx rolls back there is no job. It
// takes what queue.Client.Enqueue takes: args is marshalled with
// encoding/json (a json.RawMessage or []byte is used as is and must be
// valid JSON; nil is {}), and bad input returns an error matching
// queue.ErrInvalid, writing nothing. Like [Store.JobInsert], a unique key
// held by another job returns that job with inserted false (SQLite's
// write lock, which tx holds from its first write, makes the check and the
// insert atomic).
//
// tx must be a write transaction on this store's database: one begun on
// [Store.DB] (then workers of this process, whose claims wait for the
// commit, see the job at once), or on another connection to the same file
// (then workers find the job at their next poll). The time of the job is
// the clock's now.
func (s *Store) EnqueueTx(ctx context.Context, tx *sql.Tx, kind string, args any, opts queue.EnqueueOptions) (job *jobstore.Job, inserted bool, err error) {
	in, err := queue.NewJobInsert(kind, args, opts, s.clock.Now())
	if err != nil {
		return nil, false, err
	}
	if err := in.Validate(); err != nil {
		return nil, false, err
	}
	row, err := insertArgs(&in)
	if err != nil {
		return nil, false, wrap("enqueue", err)
	}
	if in.UniqueKey != "" {
		job, inserted, err = insertUnique(ctx, tx, &in, row)
	} else {
		job, err = scanJob(tx.QueryRowContext(ctx, insertSQL, row...))
		inserted = err == nil
		err = wrap("enqueue", err)
	}
	if err != nil || !inserted {
		return job, inserted, err
	}
	// Idle workers of this process look now: their claim runs on the
	// writer, after tx ends (or, for a tx on another connection, finds
	// the job when it has committed, or at the next poll).
	s.notify(job.Queue)
	return job, true, nil
}
