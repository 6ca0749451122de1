package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/heed-go/heed/queue"
)

// deadCommands are the subcommands of heed jobs dead.
var deadCommands = []command{
	{"ls", "list dead jobs (filter by kind, queue, reason, age)", deadLsMain},
	{"show", "show a dead job and its full history", deadShowMain},
	{"requeue", "make dead jobs available again: IDs, or --all matching", deadRequeueMain},
	{"delete", "delete dead jobs: IDs, or --all matching", deadDeleteMain},
	{"purge", "delete dead jobs older than --older-than", deadPurgeMain},
}

func deadUsage(w io.Writer) {
	fmt.Fprint(w, `Usage: heed jobs dead COMMAND [FLAGS] [ARGS]

The dead-letter: jobs that gave up (a permanent error, attempts exhausted,
time budget exhausted, ...), each kept with its whole history until an
operator requeues, deletes or purges it. Nothing is trimmed silently.

Commands:
`)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range deadCommands {
		fmt.Fprintf(tw, "  %s\t%s\n", c.name, c.summary)
	}
	tw.Flush()
	fmt.Fprint(w, `
Exit codes:
  0    success
  1    the database cannot be opened or written
  2    usage error
  3    a job ID given does not exist or is not dead (nothing was changed)

Examples:
  heed jobs dead ls --reason attempts --older-than 1h
  heed jobs dead show 42
  heed jobs dead requeue 42 43
  heed jobs dead requeue --all --kind http --reason time_budget
  heed jobs dead purge --older-than 720h

Run 'heed jobs dead COMMAND --help' for a command's flags.
`)
}

// jobsDeadMain is "heed jobs dead".
func jobsDeadMain(ctx context.Context, s streams, args []string) int {
	if len(args) == 0 {
		deadUsage(s.stderr)
		return exitUsage
	}
	switch name := args[0]; name {
	case "help", "-h", "-help", "--help":
		deadUsage(s.stdout)
		return exitOK
	default:
		for _, c := range deadCommands {
			if c.name == name {
				return c.run(ctx, s, args[1:])
			}
		}
		fmt.Fprintf(s.stderr, "heed jobs dead: unknown command %q\nRun 'heed jobs dead --help' for a list of commands.\n", name)
		return exitUsage
	}
}

// deadFilterFlags registers the dead-letter filters on fs.
func deadFilterFlags(fs *flag.FlagSet) *queue.DeadFilter {
	f := &queue.DeadFilter{}
	fs.StringVar(&f.Kind, "kind", "", "only dead jobs of `KIND`")
	fs.StringVar(&f.Queue, "queue", "", "only dead jobs of `QUEUE`")
	fs.StringVar(&f.Reason, "reason", "", "only jobs that gave up for `REASON`: permanent, attempts, time_budget, ...")
	durationVar(fs, &f.OlderThan, "older-than", 0, "only jobs that died more than this long ago")
	return f
}

var filterGroup = flagGroup{"Filter flags", []string{"kind", "queue", "reason", "older-than", "after", "limit"}}

var deadLsDoc = helpDoc{
	head: `Usage: heed jobs dead ls [FLAGS]

Lists the dead-letter, oldest job first, and its size and oldest entry.
`,
	groups: []flagGroup{filterGroup, {"Output flags", []string{"json", "reveal"}}, {"Database flags", []string{"db"}}},
	foot: `Exit codes:
  0    listed (possibly nothing)
  1    the database cannot be opened or read
  2    usage error

Example:
  heed jobs dead ls --kind http --reason attempts
`,
}

func deadLsMain(ctx context.Context, s streams, args []string) int {
	const name = "jobs dead ls"
	fs := newFlagSet(name)
	db := addDBFlag(fs)
	f := deadFilterFlags(fs)
	fs.Int64Var(&f.AfterID, "after", 0, "only jobs with an `ID` above this (paging)")
	fs.IntVar(&f.Limit, "limit", 100, "list at most `N` jobs (0: all)")
	asJSON := fs.Bool("json", false, "print the jobs, with their histories, as a JSON array")
	reveal := addRevealFlag(fs)
	if code, done := parseFlags(fs, args, s, deadLsDoc); done {
		return code
	}
	if fs.NArg() > 0 {
		return usageError(s, name, fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	if f.OlderThan < 0 || f.Limit < 0 {
		return usageError(s, name, errors.New("--older-than and --limit must not be negative"))
	}
	d, err := openDB(ctx, resolveDB(*db), openRead)
	if err != nil {
		return jobsFail(ctx, s, name, err)
	}
	defer d.Close()
	c := queue.NewClient(d.Jobs(), queue.ClientConfig{})
	jobs, err := c.Dead(ctx, *f)
	if err != nil {
		return jobsFail(ctx, s, name, err)
	}
	if code := printJobs(s, redactJobs(jobs, *reveal), *asJSON, f.Limit, "jobs dead ls --after"); code != exitOK || *asJSON {
		return code
	}
	st, err := c.Stats(ctx)
	if err != nil {
		return jobsFail(ctx, s, name, err)
	}
	fmt.Fprintln(s.stderr, deadSummary(st, time.Now()))
	return exitOK
}

// deadSummary describes the dead-letter's size and age.
func deadSummary(st queue.Stats, now time.Time) string {
	if st.Dead == 0 {
		return "dead-letter: empty"
	}
	return fmt.Sprintf("dead-letter: %s, the oldest died %s (%s)", jobsPlural(st.Dead, "job", "jobs"), jobsAgo(st.OldestDead, now),
		st.OldestDead.UTC().Format(time.RFC3339))
}

var deadShowDoc = helpDoc{
	head: `Usage: heed jobs dead show [FLAGS] ID

Shows dead job ID with its full history: why it gave up, every attempt and
decision. It is heed jobs show for a job that must be in the dead-letter.
`,
	groups: []flagGroup{{"Output flags", []string{"json", "reveal"}}, {"Database flags", []string{"db"}}},
	foot: `Exit codes:
  0    shown
  1    the database cannot be opened or read
  2    usage error
  3    no job has this ID, or it is not dead
`,
}

func deadShowMain(ctx context.Context, s streams, args []string) int {
	return showJob(ctx, s, args, "jobs dead show", deadShowDoc, true)
}

var deadRequeueDoc = helpDoc{
	head: `Usage: heed jobs dead requeue [FLAGS] ID...
       heed jobs dead requeue --all [FILTER FLAGS]

Makes dead jobs available again, now: their attempts and time budget start
afresh and their history is kept (with a "requeued" entry). Give job IDs,
or --all to requeue every dead job that matches the filters. A job whose
unique key is held by a live job stays dead. With IDs, every ID must be a
dead job, or nothing is changed.
`,
	groups: []flagGroup{{"Selection flags", []string{"all", "kind", "queue", "reason", "older-than", "dry-run"}}, {"Database flags", []string{"db"}}},
	foot: `Exit codes:
  0    requeued (possibly none, with --all)
  1    the database cannot be opened or written
  2    usage error: neither IDs nor --all
  3    an ID is not a dead job (nothing was changed)

Examples:
  heed jobs dead requeue 42
  heed jobs dead requeue --all --reason time_budget --kind http
`,
}

var deadDeleteDoc = helpDoc{
	head: `Usage: heed jobs dead delete [FLAGS] ID...
       heed jobs dead delete --all [FILTER FLAGS]

Deletes dead jobs for good, with their history. Give job IDs, or --all to
delete every dead job that matches the filters. With IDs, every ID must be a
dead job, or nothing is changed.
`,
	groups: []flagGroup{{"Selection flags", []string{"all", "kind", "queue", "reason", "older-than", "dry-run"}}, {"Database flags", []string{"db"}}},
	foot: `Exit codes:
  0    deleted (possibly none, with --all)
  1    the database cannot be opened or written
  2    usage error: neither IDs nor --all
  3    an ID is not a dead job (nothing was changed)

Examples:
  heed jobs dead delete 42
  heed jobs dead delete --all --kind noop
`,
}

func deadRequeueMain(ctx context.Context, s streams, args []string) int {
	return deadChange(ctx, s, args, "jobs dead requeue", deadRequeueDoc, true)
}

func deadDeleteMain(ctx context.Context, s streams, args []string) int {
	return deadChange(ctx, s, args, "jobs dead delete", deadDeleteDoc, false)
}

// deadChange is "dead requeue" (requeue true) and "dead delete".
func deadChange(ctx context.Context, s streams, args []string, name string, doc helpDoc, requeue bool) int {
	fs := newFlagSet(name)
	db := addDBFlag(fs)
	f := deadFilterFlags(fs)
	all := fs.Bool("all", false, "every dead job that matches the filter flags (all of them without any)")
	dry := fs.Bool("dry-run", false, "list the jobs that would be changed, and change nothing")
	pos, code, done := parseInterleaved(fs, args, s, doc)
	if done {
		return code
	}
	verb, done2 := "requeue", "requeued"
	if !requeue {
		verb, done2 = "delete", "deleted"
	}
	switch {
	case len(pos) == 0 && !*all:
		return usageError(s, name, fmt.Errorf("give the IDs of the jobs to %s, or --all", verb))
	case len(pos) > 0 && *all:
		return usageError(s, name, errors.New("give IDs or --all, not both"))
	case f.OlderThan < 0:
		return usageError(s, name, flagError("older-than", "%v, must not be negative", f.OlderThan))
	}
	for _, p := range pos {
		id, err := jobsParseID(p)
		if err != nil {
			return usageError(s, name, err)
		}
		f.IDs = append(f.IDs, id)
	}
	d, err := openDB(ctx, resolveDB(*db), openWrite)
	if err != nil {
		return jobsFail(ctx, s, name, err)
	}
	defer d.Close()
	c := queue.NewClient(d.Jobs(), queue.ClientConfig{})
	if len(f.IDs) > 0 {
		// Every ID must be a dead job that matches, or nothing changes.
		for _, id := range f.IDs {
			j, err := c.Job(ctx, id)
			switch {
			case errors.Is(err, queue.ErrNotFound):
				fmt.Fprintf(s.stderr, "heed %s: no job %d in %s; nothing was %s\n", name, id, d.Name(), done2)
				return exitNoJob
			case err != nil:
				return jobsFail(ctx, s, name, err)
			case j.State != queue.StateDead:
				fmt.Fprintf(s.stderr, "heed %s: job %d is not dead (it is %s); nothing was %s\n", name, id, j.State, done2)
				return exitNoJob
			}
		}
	}
	matching, err := c.Dead(ctx, *f)
	if err != nil {
		return jobsFail(ctx, s, name, err)
	}
	if len(f.IDs) > 0 && len(matching) < len(f.IDs) {
		fmt.Fprintf(s.stderr, "heed %s: %d of the jobs given do not match the filters; nothing was %s\n", name, len(f.IDs)-len(matching), done2)
		return exitNoJob
	}
	if *dry {
		if len(matching) > 0 {
			writeJobTable(s.stdout, redactJobs(matching, false), time.Now())
		}
		fmt.Fprintf(s.stderr, "dry run: would %s %d jobs\n", verb, len(matching))
		return exitOK
	}
	var n int
	if requeue {
		n, err = c.Requeue(ctx, *f)
	} else {
		n, err = c.DeleteDead(ctx, *f)
	}
	if err != nil {
		return jobsFail(ctx, s, name, err)
	}
	switch {
	case requeue:
		fmt.Fprintf(s.stdout, "requeued %s (attempts reset, history kept)\n", jobsPlural(n, "job", "jobs"))
		if n < len(matching) {
			fmt.Fprintf(s.stdout, "%d stayed dead: a live job holds their unique key\n", len(matching)-n)
		}
	default:
		fmt.Fprintf(s.stdout, "deleted %s\n", jobsPlural(n, "job", "jobs"))
	}
	return exitOK
}

var deadPurgeDoc = helpDoc{
	head: `Usage: heed jobs dead purge --older-than DUR [FLAGS]

Deletes the dead jobs that died more than DUR ago, with their history. The
dead-letter is never purged otherwise.
`,
	groups: []flagGroup{{"Purge flags", []string{"older-than", "dry-run"}}, {"Database flags", []string{"db"}}},
	foot: `Exit codes:
  0    purged (possibly none)
  1    the database cannot be opened or written
  2    usage error: --older-than missing or not positive

Example:
  heed jobs dead purge --older-than 720h   # dead for more than 30 days
`,
}

func deadPurgeMain(ctx context.Context, s streams, args []string) int {
	const name = "jobs dead purge"
	fs := newFlagSet(name)
	db := addDBFlag(fs)
	older := durationFlag(fs, "older-than", 0, "delete jobs that died more than this long ago (required)")
	dry := fs.Bool("dry-run", false, "count the jobs that would be purged, and change nothing")
	if code, done := parseFlags(fs, args, s, deadPurgeDoc); done {
		return code
	}
	if fs.NArg() > 0 {
		return usageError(s, name, fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	if *older <= 0 {
		return usageError(s, name, errors.New("--older-than is required and must be positive, such as 720h"))
	}
	d, err := openDB(ctx, resolveDB(*db), openWrite)
	if err != nil {
		return jobsFail(ctx, s, name, err)
	}
	defer d.Close()
	c := queue.NewClient(d.Jobs(), queue.ClientConfig{})
	if *dry {
		jobs, err := c.Dead(ctx, queue.DeadFilter{OlderThan: *older})
		if err != nil {
			return jobsFail(ctx, s, name, err)
		}
		fmt.Fprintf(s.stdout, "dry run: would purge %d jobs\n", len(jobs))
		return exitOK
	}
	n, err := c.PurgeDead(ctx, *older)
	if err != nil {
		return jobsFail(ctx, s, name, err)
	}
	fmt.Fprintf(s.stdout, "purged %s that died more than %v ago\n", jobsPlural(n, "job", "jobs"), *older)
	return exitOK
}
