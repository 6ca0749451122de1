package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/heed-go/heed/cmd/heed/internal/jobtext"
	"github.com/heed-go/heed/cmd/heed/internal/storeurl"
	"github.com/heed-go/heed/internal/textfmt"
	"github.com/heed-go/heed/queue"
)

// jobsOp is one of heed jobs cancel, run and delete: an operator's change
// to jobs given by ID or by filter.
type jobsOp struct {
	name   string        // "jobs cancel"
	verb   string        // "cancel"
	past   string        // "cancelled"
	states []queue.State // the states the change applies to
	doc    helpDoc
	// due: the change applies only to available jobs due later (run now).
	due bool
	// finished: the filter takes --older-than (delete).
	finished bool
	// reason: the filter takes --reason (the dead-letter's commands).
	reason bool
	// apply makes the change; older is --older-than (also in
	// f.FinishedBefore).
	apply func(ctx context.Context, c *queue.Client, f queue.JobFilter, older time.Duration) (int, error)
	// report prints what apply did (default: "PAST N jobs").
	report func(w io.Writer, n int, matching []*queue.Job)
}

var opsSelection = flagGroup{"Selection flags", []string{"all", "kind", "queue", "state", "older-than", "dry-run"}}

var jobsCancelOp = jobsOp{
	name: "jobs cancel", verb: "cancel", past: "cancelled",
	states: []queue.State{queue.StateAvailable, queue.StateRunning},
	apply: func(ctx context.Context, c *queue.Client, f queue.JobFilter, _ time.Duration) (int, error) {
		return c.Cancel(ctx, f)
	},
	report: func(w io.Writer, n int, matching []*queue.Job) {
		fmt.Fprintf(w, "cancelled %s\n", textfmt.Plural(n, "job", "jobs"))
		if running := countState(matching, queue.StateRunning); running > 0 {
			fmt.Fprintf(w, "%s running: their handlers are told to stop, and their results will be dropped\n",
				textfmt.Plural(running, "was", "were"))
		}
	},
	doc: helpDoc{
		file:   "jobs-cancel",
		groups: []flagGroup{opsSelection, {"Database flags", []string{"db"}}},
	},
}

var jobsRunOp = jobsOp{
	name: "jobs run", verb: "run now", past: "made available now",
	states: []queue.State{queue.StateAvailable}, due: true,
	apply: func(ctx context.Context, c *queue.Client, f queue.JobFilter, _ time.Duration) (int, error) {
		return c.RunNow(ctx, f)
	},
	doc: helpDoc{
		file:   "jobs-run",
		groups: []flagGroup{{"Selection flags", []string{"all", "kind", "queue", "dry-run"}}, {"Database flags", []string{"db"}}},
	},
}

var jobsDeleteOp = jobsOp{
	name: "jobs delete", verb: "delete", past: "deleted",
	states: []queue.State{queue.StateSucceeded, queue.StateDead, queue.StateCancelled}, finished: true,
	apply: func(ctx context.Context, c *queue.Client, f queue.JobFilter, _ time.Duration) (int, error) {
		return c.Delete(ctx, f)
	},
	doc: helpDoc{
		file:   "jobs-delete",
		groups: []flagGroup{opsSelection, {"Database flags", []string{"db"}}},
	},
}

func jobsCancelMain(ctx context.Context, s streams, args []string) int {
	return jobsCancelOp.main(ctx, s, args)
}

func jobsRunMain(ctx context.Context, s streams, args []string) int {
	return jobsRunOp.main(ctx, s, args)
}

func jobsDeleteMain(ctx context.Context, s streams, args []string) int {
	return jobsDeleteOp.main(ctx, s, args)
}

func stateNames(states []queue.State) string {
	names := make([]string, len(states))
	for i, st := range states {
		names[i] = string(st)
	}
	return strings.Join(names, ", ")
}

// main runs the op's command.
func (op *jobsOp) main(ctx context.Context, s streams, args []string) int {
	name := op.name
	fs := newFlagSet(name)
	db := addDBFlag(fs)
	var f queue.JobFilter
	fs.StringVar(&f.Kind, "kind", "", "only jobs of `KIND`")
	fs.StringVar(&f.Queue, "queue", "", "only jobs of `QUEUE`")
	var state string
	if len(op.states) > 1 {
		fs.StringVar(&state, "state", "", "only jobs in `STATE`: "+stateNames(op.states))
	}
	if op.reason {
		fs.StringVar(&f.DeadReason, "reason", "", "only jobs that gave up for `REASON`: permanent, attempts, time_budget, ...")
	}
	var older time.Duration
	if op.finished {
		durationVar(fs, &older, "older-than", 0, "only jobs that finished more than this long ago")
	}
	all := fs.Bool("all", false, "every job that matches the filter flags (all of them without any)")
	dry := fs.Bool("dry-run", false, "list the jobs that would be changed, and change nothing")
	pos, code, done := parseInterleaved(fs, args, s, op.doc)
	if done {
		return code
	}
	switch {
	case len(pos) == 0 && !*all:
		return usageError(s, name, fmt.Errorf("give the IDs of the jobs to %s, or --all", op.verb))
	case len(pos) > 0 && *all:
		return usageError(s, name, errors.New("give IDs or --all, not both"))
	case older < 0:
		return usageError(s, name, flagError("older-than", "%v, must not be negative", older))
	}
	if state != "" {
		f.State = queue.State(state)
		if !slices.Contains(op.states, f.State) {
			return usageError(s, name, flagError("state", "%q is not one of %s", state, stateNames(op.states)))
		}
	}
	for _, p := range pos {
		id, err := jobsParseID(p)
		if err != nil {
			return usageError(s, name, err)
		}
		f.IDs = append(f.IDs, id)
	}
	d, c, code := openJobs(ctx, s, name, *db, storeurl.Write)
	if d == nil {
		return code
	}
	defer d.Close()
	now := time.Now()
	if older > 0 {
		f.FinishedBefore = now.Add(-older)
	}
	// With IDs, every one must be a job the change applies to, or nothing
	// changes.
	for _, id := range f.IDs {
		j, err := c.Job(ctx, id)
		switch {
		case errors.Is(err, queue.ErrNotFound):
			fmt.Fprintf(s.stderr, "heed %s: no job %d in %s; nothing was %s\n", name, id, d.Name(), op.past)
			return exitNoJob
		case err != nil:
			return jobsFail(ctx, s, name, err)
		case !slices.Contains(op.states, j.State):
			fmt.Fprintf(s.stderr, "heed %s: job %d is %s, not %s; nothing was %s\n", name, id, j.State, stateNames(op.states), op.past)
			return exitNoJob
		case op.due && !j.AvailableAt.After(now):
			fmt.Fprintf(s.stderr, "heed %s: job %d is already due; nothing was %s\n", name, id, op.past)
			return exitNoJob
		}
	}
	matching, err := op.matching(ctx, c, f, now)
	if err != nil {
		return jobsFail(ctx, s, name, err)
	}
	if len(f.IDs) > 0 && len(matching) < len(f.IDs) {
		fmt.Fprintf(s.stderr, "heed %s: %d of the jobs given do not match the filters; nothing was %s\n", name, len(f.IDs)-len(matching), op.past)
		return exitNoJob
	}
	if *dry {
		if len(matching) > 0 {
			jobtext.WriteTable(s.stdout, jobtext.RedactAll(matching, false), now)
		}
		fmt.Fprintf(s.stderr, "dry run: would %s %s\n", op.verb, textfmt.Plural(len(matching), "job", "jobs"))
		return exitOK
	}
	n, err := op.apply(ctx, c, f, older)
	if err != nil {
		return jobsFail(ctx, s, name, err)
	}
	if op.report != nil {
		op.report(s.stdout, n, matching)
	} else {
		fmt.Fprintf(s.stdout, "%s %s\n", op.past, textfmt.Plural(n, "job", "jobs"))
	}
	return exitOK
}

// matching lists the jobs that match f in the states the op changes, in
// ID order.
func (op *jobsOp) matching(ctx context.Context, c *queue.Client, f queue.JobFilter, now time.Time) ([]*queue.Job, error) {
	var out []*queue.Job
	for _, st := range op.states {
		if f.State != "" && f.State != st {
			continue
		}
		g := f
		g.State = st
		if op.due {
			g.AvailableAfter = now
		}
		jobs, err := c.Jobs(ctx, g)
		if err != nil {
			return nil, err
		}
		out = append(out, jobs...)
	}
	slices.SortFunc(out, func(a, b *queue.Job) int { return int(a.ID - b.ID) })
	return out, nil
}

func countState(jobs []*queue.Job, st queue.State) int {
	n := 0
	for _, j := range jobs {
		if j.State == st {
			n++
		}
	}
	return n
}

var jobsPauseDoc = helpDoc{
	file:   "jobs-pause",
	groups: []flagGroup{{"Database flags", []string{"db"}}},
}

var jobsResumeDoc = helpDoc{
	file:   "jobs-resume",
	groups: []flagGroup{{"Database flags", []string{"db"}}},
}

func jobsPauseMain(ctx context.Context, s streams, args []string) int {
	return pauseResume(ctx, s, args, "jobs pause", jobsPauseDoc, true)
}

func jobsResumeMain(ctx context.Context, s streams, args []string) int {
	return pauseResume(ctx, s, args, "jobs resume", jobsResumeDoc, false)
}

func pauseResume(ctx context.Context, s streams, args []string, name string, doc helpDoc, pause bool) int {
	fs := newFlagSet(name)
	db := addDBFlag(fs)
	pos, code, done := parseInterleaved(fs, args, s, doc)
	if done {
		return code
	}
	if len(pos) == 0 {
		return usageError(s, name, errors.New("name the queues"))
	}
	d, c, code := openJobs(ctx, s, name, *db, storeurl.Write)
	if d == nil {
		return code
	}
	defer d.Close()
	for _, q := range pos {
		var changed bool
		var err error
		if pause {
			changed, err = c.Pause(ctx, q)
		} else {
			changed, err = c.Resume(ctx, q)
		}
		if errors.Is(err, queue.ErrInvalid) {
			return usageError(s, name, err)
		}
		if err != nil {
			return jobsFail(ctx, s, name, err)
		}
		switch {
		case pause && changed:
			fmt.Fprintf(s.stdout, "paused queue %s: workers claim none of its jobs until heed jobs resume %s\n", q, q)
		case pause:
			fmt.Fprintf(s.stdout, "queue %s was already paused\n", q)
		case changed:
			fmt.Fprintf(s.stdout, "resumed queue %s\n", q)
		default:
			fmt.Fprintf(s.stdout, "queue %s was not paused\n", q)
		}
	}
	return exitOK
}
