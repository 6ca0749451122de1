package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/heed-go/heed/cmd/heed/internal/jobtext"
	"github.com/heed-go/heed/cmd/heed/internal/storeurl"
	"github.com/heed-go/heed/internal/textfmt"
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

// jobsDeadMain is "heed jobs dead".
func jobsDeadMain(ctx context.Context, s streams, args []string) int {
	return dispatch(ctx, s, args, "jobs dead", deadCommands)
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
	file:   "jobs-dead-ls",
	groups: []flagGroup{filterGroup, {"Output flags", []string{"json", "reveal"}}, {"Database flags", []string{"db"}}},
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
	if code, done := parseNoArgs(fs, args, s, deadLsDoc); done {
		return code
	}
	if f.OlderThan < 0 || f.Limit < 0 {
		return usageError(s, name, errors.New("--older-than and --limit must not be negative"))
	}
	d, c, code := openReader(ctx, s, name, *db, storeurl.Read)
	if d == nil {
		return code
	}
	defer d.Close()
	jobs, err := c.Dead(ctx, *f)
	if err != nil {
		return jobsFail(ctx, s, name, err)
	}
	if code := printJobs(s, jobtext.RedactAll(jobs, *reveal), *asJSON, f.Limit, "jobs dead ls --after"); code != exitOK || *asJSON {
		return code
	}
	st, err := c.Stats(ctx)
	if err != nil {
		return jobsFail(ctx, s, name, err)
	}
	fmt.Fprintln(s.stderr, jobtext.DeadSummary(st, time.Now()))
	return exitOK
}

var deadShowDoc = helpDoc{
	file:   "jobs-dead-show",
	groups: []flagGroup{{"Output flags", []string{"json", "reveal"}}, {"Database flags", []string{"db"}}},
}

func deadShowMain(ctx context.Context, s streams, args []string) int {
	return showJob(ctx, s, args, "jobs dead show", deadShowDoc, true)
}

var deadRequeueDoc = helpDoc{
	file:   "jobs-dead-requeue",
	groups: []flagGroup{{"Selection flags", []string{"all", "kind", "queue", "reason", "older-than", "dry-run"}}, {"Database flags", []string{"db"}}},
}

var deadDeleteDoc = helpDoc{
	file:   "jobs-dead-delete",
	groups: []flagGroup{{"Selection flags", []string{"all", "kind", "queue", "reason", "older-than", "dry-run"}}, {"Database flags", []string{"db"}}},
}

func deadRequeueMain(ctx context.Context, s streams, args []string) int {
	return deadRequeueOp.main(ctx, s, args)
}

func deadDeleteMain(ctx context.Context, s streams, args []string) int {
	return deadDeleteOp.main(ctx, s, args)
}

// deadFilterOf is the dead-letter filter of f and --older-than.
func deadFilterOf(f queue.JobFilter, older time.Duration) queue.DeadFilter {
	return queue.DeadFilter{IDs: f.IDs, Kind: f.Kind, Queue: f.Queue, Reason: f.DeadReason, OlderThan: older}
}

// deadRequeueOp and deadDeleteOp are "dead requeue" and "dead delete": the
// operators' changes of jobs_ops.go, for dead jobs.
var (
	deadRequeueOp = jobsOp{
		name: "jobs dead requeue", verb: "requeue", past: "requeued",
		states: []queue.State{queue.StateDead}, finished: true, reason: true, doc: deadRequeueDoc,
		apply: func(ctx context.Context, c *queue.Client, f queue.JobFilter, older time.Duration) (int, error) {
			return c.Requeue(ctx, deadFilterOf(f, older))
		},
		report: func(w io.Writer, n int, matching []*queue.Job) {
			fmt.Fprintf(w, "requeued %s (attempts reset, history kept)\n", textfmt.Plural(n, "job", "jobs"))
			if n < len(matching) {
				fmt.Fprintf(w, "%d stayed dead: a live job holds their unique key\n", len(matching)-n)
			}
		},
	}
	deadDeleteOp = jobsOp{
		name: "jobs dead delete", verb: "delete", past: "deleted",
		states: []queue.State{queue.StateDead}, finished: true, reason: true, doc: deadDeleteDoc,
		apply: func(ctx context.Context, c *queue.Client, f queue.JobFilter, older time.Duration) (int, error) {
			return c.DeleteDead(ctx, deadFilterOf(f, older))
		},
	}
)

var deadPurgeDoc = helpDoc{
	file:   "jobs-dead-purge",
	groups: []flagGroup{{"Purge flags", []string{"older-than", "dry-run"}}, {"Database flags", []string{"db"}}},
}

func deadPurgeMain(ctx context.Context, s streams, args []string) int {
	const name = "jobs dead purge"
	fs := newFlagSet(name)
	db := addDBFlag(fs)
	older := durationFlag(fs, "older-than", 0, "delete jobs that died more than this long ago (required)")
	dry := fs.Bool("dry-run", false, "count the jobs that would be purged, and change nothing")
	if code, done := parseNoArgs(fs, args, s, deadPurgeDoc); done {
		return code
	}
	if *older <= 0 {
		return usageError(s, name, errors.New("--older-than is required and must be positive, such as 720h"))
	}
	d, c, code := openJobs(ctx, s, name, *db, storeurl.Write)
	if d == nil {
		return code
	}
	defer d.Close()
	if *dry {
		jobs, err := c.Dead(ctx, queue.DeadFilter{OlderThan: *older})
		if err != nil {
			return jobsFail(ctx, s, name, err)
		}
		fmt.Fprintf(s.stdout, "dry run: would purge %d jobs\n", len(jobs))
		return exitOK
	}
	n, err := c.DeleteDead(ctx, queue.DeadFilter{OlderThan: *older})
	if err != nil {
		return jobsFail(ctx, s, name, err)
	}
	fmt.Fprintf(s.stdout, "purged %s that died more than %v ago\n", textfmt.Plural(n, "job", "jobs"), *older)
	return exitOK
}
