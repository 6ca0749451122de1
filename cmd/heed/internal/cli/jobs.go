package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/heed-go/heed/cmd/heed/internal/jobkinds"
	"github.com/heed-go/heed/cmd/heed/internal/storeurl"
	"github.com/heed-go/heed/internal/textfmt"
	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
)

// Exit codes of heed jobs besides the shared ones.
const (
	exitNoJob = 3 // no job has the ID given, or it is not in the state asked for
)

// Where heed jobs finds its database.
const (
	envDB     = "HEED_DB"
	defaultDB = "heed.db"
)

// jobsKindsHelp lists the built-in job kinds for help texts.
func jobsKindsHelp() string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, k := range jobkinds.Kinds() {
		fmt.Fprintf(tw, "  %s\t%s\n", k.Name, k.Example)
		for _, l := range textfmt.Wrap(k.Doc, 66) {
			fmt.Fprintf(tw, "  \t  %s\n", l)
		}
	}
	tw.Flush()
	return b.String()
}

// jobsCommands are the subcommands of heed jobs.
var jobsCommands = []command{
	{"work", "run a worker: claim jobs and run them until stopped", jobsWorkMain},
	{"enqueue", "add a job: heed jobs enqueue KIND JSON", jobsEnqueueMain},
	{"ls", "list jobs (filter by state, kind, queue)", jobsLsMain},
	{"show", "show a job and its full history", jobsShowMain},
	{"dead", "the dead-letter: dead ls|show|requeue|delete|purge", jobsDeadMain},
	{"purge", "delete succeeded jobs older than --succeeded-older-than", jobsPurgeMain},
	{"cancel", "cancel unfinished jobs: IDs, or --all matching", jobsCancelMain},
	{"run", "run scheduled or retrying jobs now: IDs, or --all matching", jobsRunMain},
	{"delete", "delete finished jobs: IDs, or --all matching", jobsDeleteMain},
	{"pause", "pause queues: workers claim none of their jobs until resumed", jobsPauseMain},
	{"resume", "resume paused queues", jobsResumeMain},
	{"limit", "list or set queues' global limits: running at once, starts per second", jobsLimitMain},
	{"stats", "count jobs by state per queue; dead-letter size and age", jobsStatsMain},
	{"periodic", "list periodic jobs: schedule, last and next tick", jobsPeriodicMain},
	{"migrate", "create or upgrade the database schema", jobsMigrateMain},
	{"bench", "measure burn-down throughput and enqueue-to-start latency", jobsBenchMain},
}

// jobsMain is "heed jobs".
func jobsMain(ctx context.Context, s streams, args []string) int {
	return dispatch(ctx, s, args, "jobs", jobsCommands)
}

// addDBFlag registers --db on fs.
func addDBFlag(fs *flag.FlagSet) *string {
	return fs.String("db", "", "the `DATABASE`: a SQLite file or sqlite: URL, or a postgres:// URL (default $HEED_DB, else ./heed.db)")
}

// resolveDB returns the database named by --db, $HEED_DB or the default.
func resolveDB(flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	if v := os.Getenv(envDB); v != "" {
		return v
	}
	return defaultDB
}

// openTimeout bounds connecting to the database and migrating it.
const openTimeout = 15 * time.Second

// errNoDatabase is returned by openDB when a SQLite file does not exist and
// the mode may not create one.
var errNoDatabase = errors.New("no such database")

// openDB opens the database dsn as mode allows, with a PostgreSQL pool of
// poolSize connections when given.
func openDB(ctx context.Context, dsn string, mode storeurl.Mode, poolSize ...int) (*storeurl.DB, error) {
	o := storeurl.Options{Mode: mode}
	if len(poolSize) > 0 {
		o.PoolSize = poolSize[0]
	}
	return openWith(ctx, dsn, o)
}

// openWith is openDB with options.
func openWith(ctx context.Context, dsn string, o storeurl.Options) (*storeurl.DB, error) {
	mode := o.Mode
	octx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	db, err := storeurl.Open(octx, dsn, o)
	if err != nil {
		name := storeurl.Name(dsn)
		path, isFile := storeurl.File(dsn)
		switch {
		case errors.As(err, new(*storeurl.SchemeError)):
			return nil, err
		case errors.Is(err, storeurl.ErrNoSchema):
			return nil, fmt.Errorf("cannot open %s: %w (create the schema of search_path first)", name, err)
		case isFile && mode < storeurl.Create && errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("%w: %s does not exist, and nothing was created (heed jobs migrate or enqueue creates it; set --db or $%s)", errNoDatabase, "sqlite "+path, envDB)
		}
		return nil, fmt.Errorf("cannot open %s: %w%s", name, err, migrateHint(err))
	}
	return db, nil
}

// openJobs opens the database of --db (see resolveDB) as mode allows, with
// a client of its jobs. When it cannot, it reports why for subcommand name
// and returns a nil DB and the exit code.
func openJobs(ctx context.Context, s streams, name, dbFlag string, mode storeurl.Mode) (*storeurl.DB, *queue.Client, int) {
	d, err := openDB(ctx, resolveDB(dbFlag), mode)
	if err != nil {
		return nil, nil, jobsFail(ctx, s, name, err)
	}
	return d, queue.NewClient(d.Jobs(), queue.ClientConfig{}), exitOK
}

// openReader is openJobs for the commands that read (ls, show, stats, dead
// ls, ui): a database one release behind is read as it is, not migrated
// under its workers, and a note on stderr says so.
func openReader(ctx context.Context, s streams, name, dbFlag string, mode storeurl.Mode) (*storeurl.DB, *queue.Client, int) {
	d, err := openWith(ctx, resolveDB(dbFlag), storeurl.Options{Mode: mode, ReadBehind: true})
	if err != nil {
		return nil, nil, jobsFail(ctx, s, name, err)
	}
	if have, known, err := d.SchemaVersion(ctx); err == nil && have < known {
		fmt.Fprintf(s.stderr, "heed %s: note: %s is at schema version %d, behind this heed's %d: read as it is, nothing changed (heed jobs migrate upgrades it)\n",
			name, d.Name(), have, known)
	}
	return d, queue.NewClient(d.Jobs(), queue.ClientConfig{}), exitOK
}

// migrateHint tells how to apply missing migrations, for an error that
// says they are missing.
func migrateHint(err error) string {
	if be, ok := errors.AsType[*jobstore.SchemaBehindError](err); ok && be.Database == 0 {
		// No heed tables at all: on PostgreSQL, most often a search_path
		// that names another schema than the jobs'.
		return "; if the database or the schema of its search_path is not the one meant, fix --db or $" + envDB +
			"; heed jobs migrate creates the tables here"
	}
	if errors.Is(err, jobstore.ErrSchemaTooOld) {
		return "; apply it with: heed jobs migrate (with the same --db or $" + envDB + ")"
	}
	return ""
}

// jobsFail reports err for subcommand name and returns its exit code: 3
// for a job that does not exist, 130 when interrupted, 1 otherwise.
func jobsFail(ctx context.Context, s streams, name string, err error) int {
	fmt.Fprintf(s.stderr, "heed %s: %v\n", name, err)
	switch {
	case errors.Is(err, queue.ErrNotFound):
		return exitNoJob
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return exitInterrupted
	}
	return exitFailure
}

// jobsParseID parses a job ID.
func jobsParseID(arg string) (int64, error) {
	var id int64
	if _, err := fmt.Sscan(arg, &id); err != nil || id <= 0 || fmt.Sprint(id) != arg {
		return 0, fmt.Errorf("%q is not a job ID (a positive integer)", arg)
	}
	return id, nil
}

// poolSizeFor is the pool size for a worker running conc jobs at once in
// all: 4 plus one per 8 jobs, at most 16. A running job holds no
// connection (claims and results are batched), so the default 100 jobs
// need 16, and a few workers stay well inside PostgreSQL's default limit
// of 100 connections.
func poolSizeFor(conc int) int { return min(16, 4+conc/8) }
