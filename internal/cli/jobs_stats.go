package cli

import (
	"context"
	"fmt"
	"github.com/heed-go/heed/internal/jobtext"
	"text/tabwriter"
	"time"

	"github.com/heed-go/heed/queue"
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
	d, c, code := openJobs(ctx, s, name, *db, openRead)
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
	now := time.Now()
	if *asJSON {
		type qs struct {
			Queue     string `json:"queue"`
			Available int    `json:"available"`
			Scheduled int    `json:"scheduled"`
			Running   int    `json:"running"`
			Succeeded int    `json:"succeeded"`
			Dead      int    `json:"dead"`
			Cancelled int    `json:"cancelled"`
		}
		type pq struct {
			Queue    string    `json:"queue"`
			PausedAt time.Time `json:"paused_at"`
		}
		out := struct {
			Queues     []qs       `json:"queues"`
			Dead       int        `json:"dead"`
			OldestDead *time.Time `json:"oldest_dead,omitempty"`
			Paused     []pq       `json:"paused"`
		}{Queues: []qs{}, Dead: st.Dead, OldestDead: jobtext.Time(st.OldestDead), Paused: []pq{}}
		for _, p := range paused {
			out.Paused = append(out.Paused, pq(p))
		}
		for _, q := range st.Queues {
			out.Queues = append(out.Queues, qs(q))
		}
		jobtext.WriteJSON(s.stdout, out)
		return exitOK
	}
	fmt.Fprintf(s.stdout, "%s\n\n", d.Name())
	tw := tabwriter.NewWriter(s.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "QUEUE\tAVAILABLE\tSCHEDULED\tRUNNING\tSUCCEEDED\tDEAD\tCANCELLED\t")
	var total queue.QueueStats
	for _, q := range st.Queues {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t\n", q.Queue, q.Available, q.Scheduled, q.Running, q.Succeeded, q.Dead, q.Cancelled)
		total.Available += q.Available
		total.Scheduled += q.Scheduled
		total.Running += q.Running
		total.Succeeded += q.Succeeded
		total.Dead += q.Dead
		total.Cancelled += q.Cancelled
	}
	if len(st.Queues) > 1 {
		fmt.Fprintf(tw, "(all)\t%d\t%d\t%d\t%d\t%d\t%d\t\n", total.Available, total.Scheduled, total.Running, total.Succeeded, total.Dead, total.Cancelled)
	}
	tw.Flush()
	if len(st.Queues) == 0 {
		fmt.Fprintln(s.stdout, "(no jobs)")
	}
	fmt.Fprintf(s.stdout, "\n%s\n", deadSummary(st, now))
	if line := pausedLine(paused, now); line != "" {
		fmt.Fprintln(s.stdout, line)
	}
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
	// Opening migrates.
	d, _, code := openJobs(ctx, s, name, *db, openMigrate)
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
	if d.Postgres() != nil {
		fmt.Fprintf(s.stdout, "%s: schema at version %d (this heed knows %d): up to date\n", d.Name(), v, known)
		return exitOK
	}
	fmt.Fprintf(s.stdout, "%s: schema at version %d: up to date\n", d.Name(), known)
	return exitOK
}
