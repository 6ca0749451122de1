package jobstore

import (
	"fmt"
	"strings"
)

// SchemaTooNewError (stores return it; callers that want the versions read
// it) reports a database whose schema version is newer than the
// newest migration the store in this binary knows: a newer heed migrated
// it, and this one could misread its tables. Upgrade heed, or use another
// database. It matches [ErrSchemaTooNew]. Both heed stores return it.
type SchemaTooNewError struct {
	Store    string // the store package, such as "pgstore"
	Database int    // the schema version recorded in the database
	Binary   int    // the newest version this binary knows
	// Floor is the oldest binary schema version the database is
	// compatible down to (0 when not known): binaries that know at least
	// Floor work on it.
	Floor int
}

// Error names both versions, and the floor when it is known and lower.
func (e *SchemaTooNewError) Error() string {
	compat := ""
	if e.Floor > 0 && e.Floor < e.Database {
		compat = fmt.Sprintf(", compatible down to %d,", e.Floor)
	}
	return fmt.Sprintf("%s: database schema version %d%s is newer than this binary knows (version %d): upgrade heed",
		e.Store, e.Database, compat, e.Binary)
}

// Is reports whether target is ErrSchemaTooNew.
func (e *SchemaTooNewError) Is(target error) bool { return target == ErrSchemaTooNew }

// SchemaBehindError (stores return it; callers that want the missing
// migrations read it) reports a database whose schema lacks migrations
// this binary has, found by a store opened without migrating. Apply them
// with the store's Migrate (heed jobs migrate). It matches
// [ErrSchemaTooOld]. Both heed stores return it.
type SchemaBehindError struct {
	Store    string // the store package, such as "sqlitestore"
	Database int    // the schema version recorded in the database; 0: no heed tables
	Binary   int    // the newest version this binary knows
	// Missing names the migrations not applied, in order, such as
	// "0003_succeeded_index".
	Missing []string
	// Changes says, for each of Missing, what it changes and whether
	// binaries that know the database's version keep working after it.
	Changes []string
}

// Error names the missing migrations.
func (e *SchemaBehindError) Error() string {
	if e.Database == 0 {
		return e.Store + ": the database has no heed schema (no migrations table)"
	}
	what := "migration"
	if len(e.Missing) != 1 {
		what += "s"
	}
	return fmt.Sprintf("%s: database schema version %d is behind this binary's %d: %s %s not applied",
		e.Store, e.Database, e.Binary, what, strings.Join(e.Missing, ", "))
}

// Is reports whether target is ErrSchemaTooOld.
func (e *SchemaBehindError) Is(target error) bool { return target == ErrSchemaTooOld }
