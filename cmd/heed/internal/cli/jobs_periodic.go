package cli

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/heed-go/heed/cmd/heed/internal/jobtext"
	"github.com/heed-go/heed/cmd/heed/internal/storeurl"
	"github.com/heed-go/heed/queue/jobstore"
)

var jobsPeriodicDoc = helpDoc{
	file:   "jobs-periodic",
	groups: []flagGroup{{"Output flags", []string{"json"}}, {"Database flags", []string{"db"}}},
}

// periodicJSON is one periodic job of heed jobs periodic --json.
type periodicJSON struct {
	Kind     string `json:"kind"`
	Queue    string `json:"queue"`
	Schedule string `json:"schedule,omitempty"`
	LastTick string `json:"last_tick"`
	NextTick string `json:"next_tick,omitempty"`
	SeenAt   string `json:"seen_at,omitempty"`
}

// jobsPeriodicMain is "heed jobs periodic".
func jobsPeriodicMain(ctx context.Context, s streams, args []string) int {
	const name = "jobs periodic"
	fs := newFlagSet(name)
	db := addDBFlag(fs)
	asJSON := fs.Bool("json", false, "print the periodic jobs as JSON")
	if code, done := parseNoArgs(fs, args, s, jobsPeriodicDoc); done {
		return code
	}
	d, _, code := openReader(ctx, s, name, *db, storeurl.Read)
	if d == nil {
		return code
	}
	defer d.Close()
	sr, ok := d.Jobs().(jobstore.ScheduleRecorder)
	if !ok {
		return jobsFail(ctx, s, name, errors.New("this store does not record periodic jobs"))
	}
	list, err := sr.JobSchedules(ctx)
	if err != nil {
		return jobsFail(ctx, s, name, err)
	}
	stamp := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format(time.RFC3339)
	}
	if *asJSON {
		out := make([]periodicJSON, len(list))
		for i, p := range list {
			out[i] = periodicJSON{p.Kind, p.Queue, p.Schedule, stamp(p.LastTick), stamp(p.NextTick), stamp(p.SeenAt)}
		}
		jobtext.WriteJSON(s.stdout, out)
		return exitOK
	}
	if len(list) == 0 {
		fmt.Fprintf(s.stdout, "%s: no periodic job has ticked yet\n", d.Name())
		return exitOK
	}
	now := time.Now()
	rel := func(t time.Time) string {
		switch {
		case t.IsZero():
			return "-"
		case t.After(now):
			return stamp(t) + " (in " + t.Sub(now).Round(time.Second).String() + ")"
		}
		return stamp(t) + " (" + now.Sub(t).Round(time.Second).String() + " ago)"
	}
	tw := tabwriter.NewWriter(s.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tQUEUE\tSCHEDULE\tLAST TICK\tNEXT TICK\tSEEN")
	for _, p := range list {
		sched, next := p.Schedule, rel(p.NextTick)
		if sched == "" {
			sched = "(not recorded: ticked by an older worker)"
		}
		if !p.NextTick.IsZero() && p.NextTick.Before(now) {
			next += " overdue"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", p.Kind, p.Queue, sched, rel(p.LastTick), next, rel(p.SeenAt))
	}
	tw.Flush()
	fmt.Fprintln(s.stdout, "\nIts jobs: heed jobs ls --kind KIND --queue QUEUE. Overdue: no worker of this release runs it now.")
	return exitOK
}
