package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/heed-go/heed/cmd/heed/internal/jobtext"
	"github.com/heed-go/heed/cmd/heed/internal/storeurl"
	"github.com/heed-go/heed/queue/jobstore"
)

var jobsStatsDoc = helpDoc{
	file:   "jobs-stats",
	groups: []flagGroup{{"Output flags", []string{"json"}}, {"Database flags", []string{"db"}}},
}

// jobsStatsMain is "heed jobs stats".
func jobsStatsMain(ctx context.Context, s streams, args []string) int {
	const name = "jobs stats"
	fs := newFlagSet(name)
	db := addDBFlag(fs)
	asJSON := fs.Bool("json", false, "print the counts as JSON")
	if code, done := parseNoArgs(fs, args, s, jobsStatsDoc); done {
		return code
	}
	d, c, code := openReader(ctx, s, name, *db, storeurl.Read)
	if d == nil {
		return code
	}
	defer d.Close()
	st, err := c.Stats(ctx)
	if err != nil {
		return jobsFail(ctx, s, name, err)
	}
	paused, err := c.Paused(ctx)
	if err != nil {
		return jobsFail(ctx, s, name, err)
	}
	if *asJSON {
		jobtext.WriteJSON(s.stdout, jobtext.StatsJSON(st, paused))
		return exitOK
	}
	fmt.Fprintf(s.stdout, "%s\n\n", d.Name())
	jobtext.WriteStats(s.stdout, st, paused, time.Now())
	return exitOK
}

var jobsMigrateDoc = helpDoc{
	file:   "jobs-migrate",
	groups: []flagGroup{{"Database flags", []string{"db"}}},
}

// jobsMigrateMain is "heed jobs migrate".
func jobsMigrateMain(ctx context.Context, s streams, args []string) int {
	const name = "jobs migrate"
	fs := newFlagSet(name)
	db := addDBFlag(fs)
	if code, done := parseNoArgs(fs, args, s, jobsMigrateDoc); done {
		return code
	}
	// What is missing, and the floor, before opening migrates it.
	var missing, changes []string
	floorBefore := 0
	if d, err := openDB(ctx, resolveDB(*db), storeurl.Write); err == nil {
		floorBefore, _ = d.CompatibleDownTo(ctx)
		d.Close()
	} else if be, ok := errors.AsType[*jobstore.SchemaBehindError](err); ok && be.Database > 0 {
		missing, changes, floorBefore = be.Missing, be.Changes, be.Database
		if d, err := openWith(ctx, resolveDB(*db), storeurl.Options{Mode: storeurl.Read, ReadBehind: true}); err == nil {
			floorBefore, _ = d.CompatibleDownTo(ctx)
			d.Close()
		}
	}
	d, _, code := openJobs(ctx, s, name, *db, storeurl.Migrate)
	if d == nil {
		return code
	}
	defer d.Close()
	if err := d.Jobs().Migrate(ctx); err != nil {
		return jobsFail(ctx, s, name, err)
	}
	v, known, err := d.SchemaVersion(ctx)
	if err != nil {
		return jobsFail(ctx, s, name, err)
	}
	floor, err := d.CompatibleDownTo(ctx)
	if err != nil {
		return jobsFail(ctx, s, name, err)
	}
	if len(missing) > 0 {
		fmt.Fprintf(s.stdout, "%s: applied %s\n", d.Name(), strings.Join(missing, ", "))
		for i, m := range missing {
			if i < len(changes) {
				fmt.Fprintf(s.stdout, "  %s: %s\n", m, changes[i])
			}
		}
		writeLeftBehind(s.stdout, floorBefore, floor)
	}
	fmt.Fprintf(s.stdout, "%s: schema at version %d, compatible down to %d (this heed knows %d): up to date\n", d.Name(), v, floor, known)
	return exitOK
}

// writeLeftBehind says which binaries a migration left working and which
// it locked out: those that know a schema from floor on keep working (heed
// version prints the schema a binary knows); those that know one older
// than floor, and that worked before (from floorBefore), now refuse it.
func writeLeftBehind(w io.Writer, floorBefore, floor int) {
	if floor <= floorBefore {
		fmt.Fprintf(w, "Nothing is left behind: workers and commands of a heed that knows schema %d or later (heed version prints it; the previous release's included) keep working on this database.\n", floor)
		return
	}
	fmt.Fprintf(w, "Compatible down to schema %d: workers and commands of a heed that knows schema %d to %d (heed version prints it) now refuse this database (\"schema ... is newer than this binary knows\"): run this heed's.\n",
		floor, max(floorBefore, 1), floor-1)
}
