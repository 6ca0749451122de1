package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/heed-go/heed/cmd/heed/internal/jobkinds"
	"github.com/heed-go/heed/cmd/heed/internal/jobtext"
	"github.com/heed-go/heed/cmd/heed/internal/storeurl"
	"github.com/heed-go/heed/internal/textfmt"
	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/retry"
)

var jobsEnqueueDoc = helpDoc{
	file: "jobs-enqueue",
	groups: []flagGroup{
		{"Job flags", []string{"file", "queue", "in", "at", "priority", "key", "attempts", "budget", "timeout", "json"}},
		{"Database flags", []string{"db"}},
	},
}

// jobsEnqueueMain is "heed jobs enqueue".
func jobsEnqueueMain(ctx context.Context, s streams, args []string) int {
	const name = "jobs enqueue"
	fs := newFlagSet(name)
	db := addDBFlag(fs)
	var opts queue.EnqueueOptions
	fs.StringVar(&opts.Queue, "queue", queue.DefaultQueue, "the `QUEUE` to put the job on")
	durationVar(fs, &opts.In, "in", 0, "run the job no sooner than this from now (default: now)")
	at := fs.String("at", "", "run the job no sooner than `TIME` (RFC 3339, such as 2026-12-01T08:00:00Z)")
	fs.IntVar(&opts.Priority, "priority", 0, "lower runs first among due jobs of the queue")
	fs.StringVar(&opts.UniqueKey, "key", "", "unique `KEY`: while a job with it is available or running, return that job")
	fs.IntVar(&opts.MaxAttempts, "attempts", 0, "attempts for this job, the first included; -1 for no limit (default: the worker's)")
	durationVar(fs, &opts.Policy.TimeBudget, "budget", 0, "time budget of this job from its first attempt (default: the worker's)")
	durationVar(fs, &opts.Policy.AttemptTimeout, "timeout", 0, "time limit of each attempt of this job (default: the worker's)")
	asJSON := fs.Bool("json", false, "print the job as JSON")
	file := fs.String("file", "", "enqueue the jobs of `FILE` (- for stdin), one JSON object per line, in one transaction")
	pos, code, done := parseInterleaved(fs, args, s, jobsEnqueueDoc)
	if done {
		return code
	}
	if *file != "" {
		if len(pos) > 0 {
			return usageError(s, name, fmt.Errorf("unexpected argument %q: with --file, the jobs come from the file", pos[0]))
		}
		if err := setAt(&opts, *at); err != nil {
			return usageError(s, name, err)
		}
		return jobsEnqueueFile(ctx, s, name, *file, *db, opts, *asJSON)
	}
	kind, raw, err := enqueueArgs(pos)
	if err != nil {
		return usageError(s, name, err)
	}
	if err := setAt(&opts, *at); err != nil {
		return usageError(s, name, err)
	}
	if err := checkEnqueueOptions(fs, &opts); err != nil {
		return usageError(s, name, err)
	}
	// Everything the queue would refuse, refused before the database is
	// opened (or created).
	if _, err := queue.NewJobInsert(kind, raw, opts, time.Now()); err != nil {
		return usageError(s, name, err)
	}

	d, c, code := openJobs(ctx, s, name, *db, storeurl.Create)
	if d == nil {
		return code
	}
	defer d.Close()
	job, inserted, err := c.Enqueue(ctx, kind, raw, opts)
	if err != nil {
		return jobsFail(ctx, s, name, err)
	}
	if *asJSON {
		jobtext.WriteJSON(s.stdout, struct {
			Inserted bool `json:"inserted"`
			jobtext.JSON
		}{inserted, jobtext.ToJSON(jobtext.Redact(job, false))})
		return exitOK
	}
	printEnqueued(s, job, inserted)
	return exitOK
}

// enqueueArgs returns the job kind and its arguments, prepared for the
// kind, from the positional arguments KIND JSON.
func enqueueArgs(pos []string) (string, json.RawMessage, error) {
	switch {
	case len(pos) == 0:
		return "", nil, errors.New("no job kind: heed jobs enqueue KIND JSON")
	case len(pos) == 1:
		return "", nil, fmt.Errorf("no arguments for the %s job: give a JSON object, such as '{}'", pos[0])
	case len(pos) > 2:
		return "", nil, fmt.Errorf("unexpected argument %q (quote the JSON as one argument)", pos[2])
	}
	kind, raw := pos[0], json.RawMessage(pos[1])
	if !json.Valid(raw) {
		return "", nil, fmt.Errorf("arguments are not valid JSON: %s", textfmt.Shorten(pos[1], 60))
	}
	raw, err := jobkinds.Prepare(kind, raw)
	if err != nil {
		return "", nil, err
	}
	return kind, raw, nil
}

// setAt sets opts.At from --at, when given.
func setAt(opts *queue.EnqueueOptions, at string) error {
	if at == "" {
		return nil
	}
	t, err := time.Parse(time.RFC3339, at)
	if err != nil {
		return flagError("at", "%q is not an RFC 3339 time such as 2026-12-01T08:00:00Z", at)
	}
	opts.At = t
	return nil
}

// checkEnqueueOptions checks the scheduling and policy flags in opts.
func checkEnqueueOptions(fs *flag.FlagSet, opts *queue.EnqueueOptions) error {
	switch {
	case opts.In < 0:
		return flagError("in", "%v, must not be negative", opts.In)
	case opts.In != 0 && !opts.At.IsZero():
		return errors.New("--in and --at are both set; set one")
	case opts.MaxAttempts < retry.Unlimited || opts.MaxAttempts == 0 && isSet(fs, "attempts"):
		return flagError("attempts", "%d, must be at least 1 (or -1 for no limit)", opts.MaxAttempts)
	case opts.Policy.TimeBudget < 0 || opts.Policy.TimeBudget == 0 && isSet(fs, "budget"):
		return flagError("budget", "%v, must be positive", opts.Policy.TimeBudget)
	case opts.Policy.AttemptTimeout < 0 || opts.Policy.AttemptTimeout == 0 && isSet(fs, "timeout"):
		return flagError("timeout", "%v, must be positive", opts.Policy.AttemptTimeout)
	}
	return nil
}

// printEnqueued writes the line saying that job was enqueued, or was
// already there (not inserted).
func printEnqueued(s streams, job *queue.Job, inserted bool) {
	now := time.Now()
	if !inserted {
		fmt.Fprintf(s.stdout, "job %d (%s) with key %q is already %s: not enqueued again\n", job.ID, job.Kind, job.UniqueKey, jobtext.State(job, now))
		return
	}
	when := "now"
	if job.AvailableAt.After(now) {
		when = job.AvailableAt.UTC().Format(time.RFC3339) + " (" + textfmt.Ago(job.AvailableAt, now) + ")"
	}
	fmt.Fprintf(s.stdout, "enqueued job %d (%s) on queue %s, to run %s\n", job.ID, job.Kind, job.Queue, when)
}
