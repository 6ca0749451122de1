// Package schema is the schema migration runner both heed stores use
// (sqlitestore and pgstore): numbered steps loaded from embedded SQL files
// (with optional Go steps for data rewrites SQL cannot express), checked
// for gaps, applied in one transaction under the store's lock, and
// recorded with the time the caller gives. Its errors are queue's
// [jobstore.SchemaTooNewError] and [jobstore.SchemaBehindError].
package schema

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/heed-go/heed/queue/jobstore"
)

// Step is one numbered migration.
type Step struct {
	Version int    // from 1, without gaps
	Name    string // as recorded and reported, such as "0003_succeeded_index"
	SQL     string // the file's statements ("" for none)
	// Go, when set, runs after SQL in the same transaction: for data
	// rewrites that need Go (decoding and re-encoding stored JSON).
	Go func(ctx context.Context, tx Tx) error
	// Floor is the oldest binary schema version that still works on the
	// database once this step is applied: the step's own version (the
	// default) for a step older binaries cannot work with, lower for an
	// expand step (a new table, a column with a default, an index, a data
	// rewrite both forms read) that binaries down to Floor keep working
	// with. The file declares it in a line "-- compatible down to: N".
	Floor int
	// Summary is what the step changes, in a phrase: its file's leading
	// comment up to the first colon or full stop.
	Summary string
}

// summary returns the leading comment of a step's SQL up to its first
// colon or full stop, on one line.
func summary(sql string) string {
	var b strings.Builder
	for line := range strings.Lines(sql) {
		text, ok := strings.CutPrefix(strings.TrimSpace(line), "--")
		if !ok || strings.TrimSpace(text) == "" {
			break
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strings.TrimSpace(text))
	}
	s := b.String()
	if i := strings.IndexAny(s, ":"); i > 0 {
		s = s[:i]
	}
	if i := strings.Index(s, ". "); i > 0 {
		s = s[:i]
	}
	return strings.TrimSuffix(s, ".")
}

// Level is a database's schema as recorded: Version, the newest step
// applied, and Floor, the oldest binary schema version that may work on
// it ("compatible down to"). Floor is what the migrations table's newest
// row says, as every heed has read it; the steps applied above Floor are
// recorded apart (the expansions table), so that a binary of the previous
// release, which refuses a migrations table newer than it knows, keeps
// working after a newer binary applied only expand steps.
type Level struct{ Version, Floor int }

// floorLine declares a step's Floor in its SQL file.
const floorLine = "-- compatible down to:"

// parseFloor returns the Floor a step's SQL declares, or version.
func parseFloor(sql string, version int) (int, error) {
	for line := range strings.Lines(sql) {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), floorLine)
		if !ok {
			continue
		}
		f, err := strconv.Atoi(strings.TrimSpace(rest))
		if err != nil || f < 1 || f > version {
			return 0, fmt.Errorf("%q must name a version from 1 to %d", line, version)
		}
		return f, nil
	}
	return version, nil
}

// Tx is the store's migration transaction.
type Tx interface {
	// Exec runs statements.
	Exec(ctx context.Context, sql string, args ...any) error
	// Version returns the level recorded (zero for none).
	Version(ctx context.Context) (Level, error)
	// Record records step as applied at the time given: in the
	// migrations table, or in the expansions table when ahead (its
	// version is above the database's floor).
	Record(ctx context.Context, s Step, at time.Time, ahead bool) error
	// Promote moves the expansions up to version floor into the
	// migrations table, as they were recorded: the floor rose to it.
	Promote(ctx context.Context, floor int) error
	Commit(ctx context.Context) error
	Rollback(ctx context.Context) error
}

// DB is the store's side of the runner.
type DB interface {
	// Version returns the recorded level without writing anything:
	// zero when the migrations table does not exist.
	Version(ctx context.Context) (Level, error)
	// Begin starts the migration transaction, holding the store's
	// migration lock (so that processes starting at once apply each step
	// once), with the migrations and expansions tables created.
	Begin(ctx context.Context) (Tx, error)
}

// Load reads the files dir/NNNN_name.sql of fsys (any number of digits)
// and returns them as steps sorted by version, with goSteps (by version)
// attached. The versions must be 1, 2, 3 ... without gaps, and every Go
// step must have its file (which may hold only a comment). store names the
// store in errors ("sqlitestore").
func Load(store string, fsys fs.FS, dir string, goSteps map[int]func(context.Context, Tx) error) ([]Step, error) {
	names, err := fs.Glob(fsys, dir+"/*.sql")
	if err != nil {
		return nil, fmt.Errorf("%s: list migrations: %w", store, err)
	}
	var steps []Step
	for _, name := range names {
		base := path.Base(name)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("%s: migration %s: name must look like 0001_name.sql", store, base)
		}
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("%s: read migration %s: %w", store, base, err)
		}
		floor, err := parseFloor(string(b), v)
		if err != nil {
			return nil, fmt.Errorf("%s: migration %s: %w", store, base, err)
		}
		steps = append(steps, Step{Version: v, Name: strings.TrimSuffix(base, ".sql"), SQL: string(b), Go: goSteps[v], Floor: floor,
			Summary: summary(string(b))})
	}
	slices.SortFunc(steps, func(a, b Step) int { return a.Version - b.Version })
	for i, s := range steps {
		if s.Version != i+1 {
			return nil, fmt.Errorf("%s: migration %s: expected version %d (versions must be 1, 2, 3 ... without gaps)", store, s.Name, i+1)
		}
	}
	for v := range goSteps {
		if v < 1 || v > len(steps) {
			return nil, fmt.Errorf("%s: Go migration step %d has no file", store, v)
		}
	}
	return steps, nil
}

// Rewrites returns the migrations that rewrite stored jobs in Go, the same
// in both stores, by version: rewrite(where) rewrites the jobs that the SQL
// condition where selects ("" for every job).
func Rewrites(rewrite func(where string) func(context.Context, Tx) error) map[int]func(context.Context, Tx) error {
	return map[int]func(context.Context, Tx) error{
		5:  rewrite(""),
		8:  rewrite(`history LIKE '%"outcome":"ok"%'`),
		10: rewrite(`history LIKE '%"outcome":"deferred"%'`),
	}
}

// MustLoad is Load that panics on error: the migrations are embedded, so
// an error is a bug of the build.
func MustLoad(store string, fsys fs.FS, dir string, goSteps map[int]func(context.Context, Tx) error) []Step {
	steps, err := Load(store, fsys, dir, goSteps)
	if err != nil {
		panic(err)
	}
	return steps
}

// Compare returns nil when the database at level is usable by a binary
// that knows steps: at the newest of them, or newer but compatible down to
// them (its Floor at most len(steps)); a *jobstore.SchemaBehindError naming
// the missing steps when it is older, and a *jobstore.SchemaTooNewError when
// it is newer and not compatible.
func Compare(store string, level Level, steps []Step) error {
	switch {
	case level.Version > len(steps) && level.Floor > len(steps):
		return &jobstore.SchemaTooNewError{Store: store, Database: level.Version, Binary: len(steps), Floor: level.Floor}
	case level.Version < len(steps):
		e := &jobstore.SchemaBehindError{Store: store, Database: level.Version, Binary: len(steps)}
		for _, s := range steps[level.Version:] {
			e.Missing = append(e.Missing, s.Name)
			change := s.Summary
			if s.Floor < s.Version {
				change += fmt.Sprintf(" (expand: compatible down to %d)", s.Floor)
			} else {
				change += fmt.Sprintf(" (binaries that know a schema before %d refuse the database after it)", s.Version)
			}
			e.Changes = append(e.Changes, change)
		}
		return e
	}
	return nil
}

// Check reads db's level and compares it with steps, changing nothing.
func Check(ctx context.Context, store string, db DB, steps []Step) error {
	l, err := db.Version(ctx)
	if err != nil {
		return fmt.Errorf("%s: read schema version: %w", store, err)
	}
	return Compare(store, l, steps)
}

// FloorAfter returns the floor of a database at level once steps up to
// version are applied: the highest Floor of the steps applied, never below
// the level's own.
func FloorAfter(level Level, steps []Step, version int) int {
	f := level.Floor
	for _, s := range steps[min(level.Version, len(steps)):min(version, len(steps))] {
		f = max(f, s.Floor)
	}
	return f
}

// Run applies the steps beyond db's version, in order, in one
// transaction, recording each at now, and returns the versions it applied
// (none when the schema is current, or newer and compatible). Steps at or
// below the new floor are recorded in the migrations table, the others in
// the expansions table (see [Level]). It changes nothing and returns a
// *jobstore.SchemaTooNewError when the database is newer than steps and not
// compatible with them.
func Run(ctx context.Context, store string, db DB, steps []Step, now time.Time) (applied []int, err error) {
	// Fast path without locks or DDL, so that a role that may not create
	// tables can open a current database.
	current, err := db.Version(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: migrate: read version: %w", store, err)
	}
	if current.Version >= len(steps) {
		return nil, Compare(store, current, steps)
	}
	tx, err := db.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: migrate: begin: %w", store, err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	// Another process may have migrated while this one waited for the lock.
	if current, err = tx.Version(ctx); err != nil {
		return nil, fmt.Errorf("%s: migrate: read version: %w", store, err)
	}
	if current.Version >= len(steps) {
		_ = tx.Rollback(ctx) // nothing to do
		return nil, Compare(store, current, steps)
	}
	floor := FloorAfter(current, steps, len(steps))
	for _, s := range steps[current.Version:] {
		if strings.TrimSpace(s.SQL) != "" {
			if err := tx.Exec(ctx, s.SQL); err != nil {
				return nil, fmt.Errorf("%s: migrate: apply %s: %w", store, s.Name, err)
			}
		}
		if s.Go != nil {
			if err := s.Go(ctx, tx); err != nil {
				return nil, fmt.Errorf("%s: migrate: apply %s: %w", store, s.Name, err)
			}
		}
		if err := tx.Record(ctx, s, now, s.Version > floor); err != nil {
			return nil, fmt.Errorf("%s: migrate: record %s: %w", store, s.Name, err)
		}
		applied = append(applied, s.Version)
	}
	if floor > current.Floor {
		if err := tx.Promote(ctx, floor); err != nil {
			return nil, fmt.Errorf("%s: migrate: record floor %d: %w", store, floor, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("%s: migrate: commit: %w", store, err)
	}
	return applied, nil
}

// JobForms returns a job's stored policy and history rewritten in the
// current stored forms (see queue's JobPolicy and Attempt JSON methods, and
// jobstore.CompactHistory for runs of deferrals):
// it decodes them as queue reads them, older forms included, and encodes
// them again. Empty input stays empty. Migrations use it to rewrite rows
// written by older versions; it is idempotent.
func JobForms(policy, history []byte) (newPolicy, newHistory []byte, err error) {
	if len(policy) > 0 {
		var p jobstore.JobPolicy
		if err := json.Unmarshal(policy, &p); err != nil {
			return nil, nil, err
		}
		if newPolicy, err = json.Marshal(p); err != nil {
			return nil, nil, err
		}
	}
	if len(history) > 0 {
		var h []jobstore.Attempt
		if err := json.Unmarshal(history, &h); err != nil {
			return nil, nil, err
		}
		if h == nil {
			h = []jobstore.Attempt{}
		}
		h = jobstore.CompactHistory(h) // runs of deferrals: one entry with a count
		if newHistory, err = json.Marshal(h); err != nil {
			return nil, nil, err
		}
	}
	return newPolicy, newHistory, nil
}

// JobRow is one job's stored policy and history, for [RewriteJobs].
type JobRow struct {
	ID              int64
	Policy, History []byte
}

// RewriteJobs rewrites every job's policy and history with [JobForms], a
// batch at a time in ID order: read returns up to limit rows with an ID
// above after, in ID order; write stores one rewritten row. Migrations
// run it in their transaction. An error names the job.
func RewriteJobs(ctx context.Context, read func(ctx context.Context, after int64, limit int) ([]JobRow, error),
	write func(ctx context.Context, r JobRow) error) error {
	const batch = 500
	var after int64
	for {
		rs, err := read(ctx, after, batch)
		if err != nil {
			return err
		}
		for _, r := range rs {
			if r.Policy, r.History, err = JobForms(r.Policy, r.History); err != nil {
				return fmt.Errorf("job %d: %w", r.ID, err)
			}
			if err := write(ctx, r); err != nil {
				return fmt.Errorf("job %d: %w", r.ID, err)
			}
		}
		if len(rs) < batch {
			return nil
		}
		after = rs[len(rs)-1].ID
	}
}
