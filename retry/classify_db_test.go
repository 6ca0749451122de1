package retry

import (
	"fmt"
	"testing"
)

// pgError behaves as pgx's *pgconn.PgError: a SQLState method.
type pgError struct{ code string }

func (e *pgError) Error() string    { return "ERROR: x (SQLSTATE " + e.code + ")" }
func (e *pgError) SQLState() string { return e.code }

// sqliteError behaves as modernc.org/sqlite's *sqlite.Error: a Code method.
type sqliteError struct{ code int }

func (e *sqliteError) Error() string { return fmt.Sprintf("sqlite error %d", e.code) }
func (e *sqliteError) Code() int     { return e.code }

func TestIsTransientDatabase(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&pgError{"08000"}, true},  // connection_exception
		{&pgError{"08003"}, true},  // connection_does_not_exist
		{&pgError{"08006"}, true},  // connection_failure
		{&pgError{"08P01"}, true},  // protocol_violation: class 08
		{&pgError{"40001"}, true},  // serialization_failure
		{&pgError{"40P01"}, true},  // deadlock_detected
		{&pgError{"53300"}, true},  // too_many_connections
		{&pgError{"55P03"}, true},  // lock_not_available
		{&pgError{"57P01"}, true},  // admin_shutdown
		{&pgError{"57P02"}, true},  // crash_shutdown
		{&pgError{"57P03"}, true},  // cannot_connect_now
		{&pgError{"23505"}, false}, // unique_violation
		{&pgError{"42P01"}, false}, // undefined_table
		{&pgError{"40002"}, false}, // transaction_integrity_constraint_violation
		{&pgError{"57014"}, false}, // query_canceled
		{&pgError{"53100"}, false}, // disk_full
		{&sqliteError{5}, true},    // SQLITE_BUSY
		{&sqliteError{6}, true},    // SQLITE_LOCKED
		{&sqliteError{261}, true},  // SQLITE_BUSY_RECOVERY (5 | 1<<8)
		{&sqliteError{517}, true},  // SQLITE_BUSY_SNAPSHOT (5 | 2<<8)
		{&sqliteError{262}, true},  // SQLITE_LOCKED_SHAREDCACHE (6 | 1<<8)
		{&sqliteError{19}, false},  // SQLITE_CONSTRAINT
		{&sqliteError{1}, false},   // SQLITE_ERROR
		{fmt.Errorf("insert job: %w", &pgError{"40001"}), true},
		{Permanent(&pgError{"40001"}), false},
	} {
		if got := IsTransient(tc.err); got != tc.want {
			t.Errorf("IsTransient(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
