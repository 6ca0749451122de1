package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/heed-go/heed/internal/jobtext"
	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/storeurl"
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
	// What is missing, before opening migrates it.
	var missing []string
	if d, err := openDB(ctx, resolveDB(*db), storeurl.Write); err == nil {
		d.Close()
	} else if be, ok := errors.AsType[*queue.SchemaBehindError](err); ok && be.Database > 0 {
		missing = be.Missing
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
	if len(missing) > 0 {
		fmt.Fprintf(s.stdout, "%s: applied %s\n", d.Name(), strings.Join(missing, ", "))
		fmt.Fprintf(s.stdout, "Workers and commands of an older heed now refuse this database (\"schema ... is newer than this binary knows\"): run this heed's.\n")
	}
	if d.Postgres() != nil {
		fmt.Fprintf(s.stdout, "%s: schema at version %d (this heed knows %d): up to date\n", d.Name(), v, known)
		return exitOK
	}
	fmt.Fprintf(s.stdout, "%s: schema at version %d: up to date\n", d.Name(), known)
	return exitOK
}
