package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/heed-go/heed/cmd/heed/internal/jobtext"
	"github.com/heed-go/heed/cmd/heed/internal/storeurl"
	"github.com/heed-go/heed/internal/liststate"
	"github.com/heed-go/heed/queue"
)

var jobsLsDoc = helpDoc{
	file: "jobs-ls",
	groups: []flagGroup{
		{"Filter flags", []string{"state", "kind", "queue", "newest", "after", "before", "limit"}},
		{"Output flags", []string{"json", "reveal"}},
		{"Database flags", []string{"db"}},
	},
}

// jobsLsMain is "heed jobs ls".
func jobsLsMain(ctx context.Context, s streams, args []string) int {
	const name = "jobs ls"
	fs := newFlagSet(name)
	db := addDBFlag(fs)
	var f queue.JobFilter
	state := fs.String("state", "", "only jobs in `STATE`: available, scheduled, retrying, running, succeeded, dead or cancelled")
	fs.StringVar(&f.Kind, "kind", "", "only jobs of `KIND`")
	fs.StringVar(&f.Queue, "queue", "", "only jobs of `QUEUE`")
	fs.Int64Var(&f.AfterID, "after", 0, "only jobs with an `ID` above this (paging)")
	fs.Int64Var(&f.BeforeID, "before", 0, "only jobs with an `ID` below this (paging with --newest)")
	fs.BoolVar(&f.Newest, "newest", false, "list the newest jobs first")
	fs.IntVar(&f.Limit, "limit", 100, "list at most `N` jobs (0: all)")
	asJSON := fs.Bool("json", false, "print the jobs, with their histories, as a JSON array")
	reveal := addRevealFlag(fs)
	if code, done := parseNoArgs(fs, args, s, jobsLsDoc); done {
		return code
	}
	now := time.Now()
	if liststate.Select(&f, *state, now) != nil {
		return usageError(s, name, flagError("state", "%q is not available, scheduled, retrying, running, succeeded, dead or cancelled", *state))
	}
	switch {
	case f.Limit < 0:
		return usageError(s, name, flagError("limit", "%d, must not be negative", f.Limit))
	case f.AfterID < 0 || f.BeforeID < 0:
		return usageError(s, name, errors.New("--after and --before take a job ID, 1 or more"))
	}
	d, c, code := openReader(ctx, s, name, *db, storeurl.Read)
	if d == nil {
		return code
	}
	defer d.Close()
	jobs, err := c.Jobs(ctx, f)
	if err != nil {
		return jobsFail(ctx, s, name, err)
	}
	more := "jobs ls --after"
	if f.Newest {
		more = "jobs ls --newest --before"
	}
	return printJobs(s, jobtext.RedactAll(jobs, *reveal), *asJSON, f.Limit, more)
}

// printJobs prints a job list as a table or JSON.
func printJobs(s streams, jobs []*queue.Job, asJSON bool, limit int, more string) int {
	if asJSON {
		out := make([]jobtext.JSON, len(jobs))
		for i, j := range jobs {
			out[i] = jobtext.ToJSON(j)
		}
		jobtext.WriteJSON(s.stdout, out)
		return exitOK
	}
	if len(jobs) == 0 {
		fmt.Fprintln(s.stderr, "no jobs")
		return exitOK
	}
	jobtext.WriteTable(s.stdout, jobs, time.Now())
	if limit > 0 && len(jobs) == limit {
		fmt.Fprintf(s.stderr, "(first %d; more with: heed %s %d)\n", limit, more, jobs[len(jobs)-1].ID)
	}
	return exitOK
}

var jobsShowDoc = helpDoc{
	file:   "jobs-show",
	groups: []flagGroup{{"Output flags", []string{"json", "reveal"}}, {"Database flags", []string{"db"}}},
}

// jobsShowMain is "heed jobs show".
func jobsShowMain(ctx context.Context, s streams, args []string) int {
	return showJob(ctx, s, args, "jobs show", jobsShowDoc, false)
}

// showJob is "heed jobs show" and, with dead, "heed jobs dead show".
func showJob(ctx context.Context, s streams, args []string, name string, doc helpDoc, dead bool) int {
	fs := newFlagSet(name)
	db := addDBFlag(fs)
	asJSON := fs.Bool("json", false, "print the job, with its history, as JSON")
	reveal := addRevealFlag(fs)
	pos, code, done := parseInterleaved(fs, args, s, doc)
	if done {
		return code
	}
	if len(pos) != 1 {
		return usageError(s, name, errors.New("give one job ID"))
	}
	id, err := jobsParseID(pos[0])
	if err != nil {
		return usageError(s, name, err)
	}
	d, c, code := openReader(ctx, s, name, *db, storeurl.Read)
	if d == nil {
		return code
	}
	defer d.Close()
	job, err := c.Job(ctx, id)
	if err != nil {
		if errors.Is(err, queue.ErrNotFound) {
			err = fmt.Errorf("no job %d in %s", id, d.Name())
			fmt.Fprintf(s.stderr, "heed %s: %v\n", name, err)
			return exitNoJob
		}
		return jobsFail(ctx, s, name, err)
	}
	if dead && job.State != queue.StateDead {
		fmt.Fprintf(s.stderr, "heed %s: job %d is not in the dead-letter: it is %s (see heed jobs show %d)\n", name, id, job.State, id)
		return exitNoJob
	}
	job = jobtext.Redact(job, *reveal)
	if *asJSON {
		jobtext.WriteJSON(s.stdout, jobtext.ToJSON(job))
		return exitOK
	}
	jobtext.Write(s.stdout, job, time.Now())
	if job.State == queue.StateDead {
		fmt.Fprintf(s.stdout, "\nIn the dead-letter since %s; requeue it with: heed jobs dead requeue %d\n",
			job.FinishedAt.UTC().Format(time.RFC3339), id)
	}
	return exitOK
}
