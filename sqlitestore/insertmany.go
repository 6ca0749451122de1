package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/heed-go/heed/queue/jobstore"
)

var _ jobstore.BatchInserter = (*Store)(nil)

// insertManyRows is the most rows one multi-row INSERT of a batch carries
// (10 parameters each, well under SQLite's limit of 32,766).
const insertManyRows = 500

// insertManySQL is the INSERT of n rows.
func insertManySQL(n int) string {
	var b strings.Builder
	b.WriteString(`INSERT INTO heed_jobs
	(kind, queue, args, state, priority, max_attempts, policy, available_at, created_at, unique_key, unique_states) VALUES `)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(?, ?, ?, 'available', ?, ?, ?, ?, ?, ?, ?)")
	}
	b.WriteString(" RETURNING id")
	return b.String()
}

// insertedJob is the job just inserted from in with ID id, built from in as
// scanJob would read it back: times in microseconds, as stored. (Reading
// back every column of every row took a third of EnqueueMany's time.)
func insertedJob(in *jobstore.JobInsert, id int64, policy []byte) (*jobstore.Job, error) {
	j := &jobstore.Job{ID: id, Kind: in.Kind, Queue: in.Queue, Args: in.Args, State: jobstore.StateAvailable,
		Priority: in.Priority, MaxAttempts: in.MaxAttempts, UniqueKey: in.UniqueKey,
		AvailableAt: time.UnixMicro(micros(in.AvailableAt)).UTC(), CreatedAt: time.UnixMicro(micros(in.CreatedAt)).UTC()}
	if string(policy) != "{}" {
		if err := json.Unmarshal(policy, &j.Policy); err != nil {
			return nil, fmt.Errorf("sqlitestore: job %d: policy: %w", id, err)
		}
	}
	return j, nil
}

var insertManyFull = insertManySQL(insertManyRows)

// JobInsertMany implements jobstore.BatchInserter: ins go in one write
// transaction, in multi-row INSERTs of up to 500 rows; a job with a unique
// key is looked up and inserted alone, as [Store.JobInsert] does, in the
// same transaction. On an error nothing is written.
func (s *Store) JobInsertMany(ctx context.Context, ins []jobstore.JobInsert) ([]jobstore.InsertResult, error) {
	for i := range ins {
		if err := ins[i].Validate(); err != nil {
			return nil, &jobstore.ItemError{Index: i, Err: err}
		}
	}
	// The full statement is prepared before the transaction begins: the
	// writer has one connection, which the transaction holds, so a
	// statement prepared on the pool inside it would wait forever.
	var full *sql.Stmt
	if len(ins) >= insertManyRows {
		var err error
		if full, err = s.prepared(ctx, insertManyFull); err != nil {
			return nil, wrap("insert", err)
		}
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, wrap("insert", err)
	}
	defer tx.Rollback()
	res, err := insertManyTx(ctx, tx, full, ins)
	if err != nil {
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, wrap("insert", err)
	}
	var queues []string
	for _, r := range res {
		if r.Inserted {
			queues = append(queues, r.Job.Queue)
		}
	}
	slices.Sort(queues)
	s.notify(slices.Compact(queues)...)
	return res, nil
}

// insertManyTx inserts ins through tx, in order: runs of jobs without a
// unique key in multi-row statements, the others one by one. full is the
// prepared INSERT of insertManyRows rows (nil when ins has fewer).
func insertManyTx(ctx context.Context, tx *sql.Tx, full *sql.Stmt, ins []jobstore.JobInsert) ([]jobstore.InsertResult, error) {
	res := make([]jobstore.InsertResult, len(ins))
	run := make([]any, 0, 10*min(len(ins), insertManyRows))
	lo := 0 // the first job of the run in run
	flush := func(hi int) error {
		n := hi - lo
		if n == 0 {
			return nil
		}
		var rows *sql.Rows
		var err error
		if n == insertManyRows && full != nil {
			rows, err = tx.StmtContext(ctx, full).QueryContext(ctx, run...)
		} else {
			rows, err = tx.QueryContext(ctx, insertManySQL(n), run...)
		}
		if err != nil {
			return wrap("insert", err)
		}
		ids := make([]int64, 0, n)
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return wrap("insert", err)
			}
			ids = append(ids, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return wrap("insert", err)
		}
		if len(ids) != n {
			return fmt.Errorf("sqlitestore: insert: %d rows returned for %d jobs", len(ids), n)
		}
		// The rows of one INSERT get increasing IDs in the order of its
		// VALUES (nothing else writes during the transaction), whatever
		// the order of RETURNING.
		slices.Sort(ids)
		for i, id := range ids {
			j, err := insertedJob(&ins[lo+i], id, []byte(run[10*i+policyArg].(string)))
			if err != nil {
				return err
			}
			res[lo+i] = jobstore.InsertResult{Job: j, Inserted: true}
		}
		run = run[:0]
		return nil
	}
	for i := range ins {
		args, err := insertArgs(&ins[i])
		if err != nil {
			return nil, wrap("insert", err)
		}
		if ins[i].UniqueKey == "" {
			if i-lo == insertManyRows {
				if err := flush(i); err != nil {
					return nil, err
				}
				lo = i
			}
			run = append(run, args...)
			continue
		}
		if err := flush(i); err != nil {
			return nil, err
		}
		j, inserted, err := insertUnique(ctx, tx, &ins[i], args)
		if err != nil {
			return nil, &jobstore.ItemError{Index: i, Err: err}
		}
		res[i] = jobstore.InsertResult{Job: j, Inserted: inserted}
		lo = i + 1
	}
	if err := flush(len(ins)); err != nil {
		return nil, err
	}
	return res, nil
}
