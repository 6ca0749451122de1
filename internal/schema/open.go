package schema

import (
	"context"
	"errors"

	"github.com/heed-go/heed/queue/jobstore"
)

// MinReadVersion is the oldest schema a store opened with ReadBehind
// opens: the previous release's, the same in both stores (their
// migrations are numbered alike). Since it, migration 9 added the table of
// periodic ticks, which only workers use, migration 10 compacted runs of
// deferrals in histories (data only, read either way), migration 11 added
// the dead-letter's index of causes, computed by the database (the
// dashboard groups the newest dead jobs without it), migration 12 added
// queues' global limits, which only workers' claims and heed jobs limit
// read, and migration 13 the periodic jobs' schedules (only workers write
// them; readers say they are missing); a migration that changes what a
// client reads or writes raises it.
const MinReadVersion = 8

// OpenMode is what a store's Open was asked to do with the schema: its
// OpenOptions' fields of the same names.
type OpenMode struct {
	// MigrateOff opens without changing the schema.
	MigrateOff bool
	// CreateEmpty, with MigrateOff, still migrates a database that has
	// no schema yet.
	CreateEmpty bool
	// ReadBehind, with MigrateOff, accepts a schema from MinReadVersion
	// on.
	ReadBehind bool
}

// Ready is a store's Open's last step: check reads the schema (the store's
// Check), and a database behind it is migrated (migrate) unless m says
// not to, or accepted as it is when m.ReadBehind allows it. It returns
// check's error otherwise.
func Ready(ctx context.Context, m OpenMode, check, migrate func(context.Context) error) error {
	err := check(ctx)
	var behind *jobstore.SchemaBehindError
	switch {
	case errors.As(err, &behind) && (!m.MigrateOff || m.CreateEmpty && behind.Database == 0):
		return migrate(ctx)
	case errors.As(err, &behind) && m.ReadBehind && behind.Database >= MinReadVersion:
		return nil
	}
	return err
}

// newestSQL reads the newest version a ledger table records (0 for
// none), in both stores' SQL.
const newestSQL = `SELECT coalesce(max(version), 0) FROM `

// ReadLevel reads a database's level from its two ledger tables: the
// floor from migrations (as every heed has read it), the version from
// expansions too unless it is "" (the table does not exist yet).
// queryInt runs a query that returns one integer.
func ReadLevel(ctx context.Context, queryInt func(ctx context.Context, sql string) (int, error), migrations, expansions string) (Level, error) {
	floor, err := queryInt(ctx, newestSQL+migrations)
	if err != nil {
		return Level{}, err
	}
	l := Level{Version: floor, Floor: floor}
	if expansions != "" {
		v, err := queryInt(ctx, newestSQL+expansions)
		if err != nil {
			return Level{}, err
		}
		l.Version = max(v, floor)
	}
	return l, nil
}

// Rows is what [ScanJobs] reads: pgx's rows and database/sql's both are.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// ScanJobs reads rows of (id, policy, history), as both stores' job
// rewrites select them; the caller closes rows.
func ScanJobs(rows Rows) ([]JobRow, error) {
	var rs []JobRow
	for rows.Next() {
		var r JobRow
		if err := rows.Scan(&r.ID, &r.Policy, &r.History); err != nil {
			return nil, err
		}
		rs = append(rs, r)
	}
	return rs, rows.Err()
}
