package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/cmd/heed/internal/jobkinds"
	"github.com/heed-go/heed/cmd/heed/internal/jobrun"
	"github.com/heed-go/heed/cmd/heed/internal/jobtext"
	"github.com/heed-go/heed/cmd/heed/internal/storeurl"
	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/retry"
)

var demoDoc = helpDoc{
	file:   "demo",
	groups: []flagGroup{{"Demo flags", []string{"db", "reset", "quiet"}}},
}

// demoPolicy is the worker's policy in the demo: like the job defaults, but
// in milliseconds instead of seconds.
var demoPolicy = retry.Policy{
	Attempts:       5,
	Backoff:        backoff.Schedule{Base: 50 * time.Millisecond, Cap: 500 * time.Millisecond},
	TimeBudget:     30 * time.Second,
	AttemptTimeout: 5 * time.Second,
}

// demoJob is one scripted job of the demo.
type demoJob struct {
	what   string
	kind   string
	args   any
	opts   queue.EnqueueOptions
	state  queue.State
	reason string // dead reason expected
	// attempts expected; 0: any number below the limit
	attempts int
	job      *queue.Job
}

func (d *demoJob) expected() string {
	if d.state == queue.StateSucceeded {
		return fmt.Sprintf("succeeded on attempt %d", d.attempts)
	}
	if d.attempts > 0 {
		return fmt.Sprintf("dead (%s) after %d", d.reason, d.attempts)
	}
	return fmt.Sprintf("dead (%s)", d.reason)
}

func (d *demoJob) ok() bool {
	j := d.job
	return j != nil && j.State == d.state && j.DeadReason == d.reason &&
		(d.attempts == 0 || j.Attempt == d.attempts)
}

// demoServer answers 503 with Retry-After: 1 to its first fails requests,
// then 200.
func demoServer(fails int64) (url string, stop func(), err error) {
	var n atomic.Int64
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) <= fails {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "warming up", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})}
	go srv.Serve(ln)
	return "http://" + ln.Addr().String() + "/hook", func() { srv.Close() }, nil
}

// dbArg is the --db flag that names db in a suggested command: none when
// the demo used the database heed's commands use by default (the flag was
// not given), so that the commands read as the README shows them.
func dbArg(flagValue, db string) string {
	if flagValue == "" {
		return ""
	}
	return " --db " + db
}

// demoMain is "heed demo".
func demoMain(ctx context.Context, s streams, args []string) int {
	const name = "demo"
	fs := newFlagSet(name)
	dbFlag := fs.String("db", "", "the `DATABASE` to use: a SQLite file or a postgres:// URL; it must be empty (default: $HEED_DB, else ./heed.db, where heed jobs and heed ui look)")
	reset := fs.Bool("reset", false, "delete the demo's SQLite file first, if it exists (a second run)")
	quiet := fs.Bool("quiet", false, "print only the final table")
	if code, done := parseNoArgs(fs, args, s, demoDoc); done {
		return code
	}
	dsn := resolveDB(*dbFlag)
	switch {
	case *reset && storeurl.IsPostgres(dsn):
		return usageError(s, name, errors.New("--reset works on SQLite files only; give an empty PostgreSQL schema instead"))
	case *reset:
		path, ok := storeurl.File(dsn)
		if !ok {
			path = dsn // OpenWith reports it
		}
		for _, suffix := range []string{"", "-wal", "-shm"} {
			if err := os.Remove(path + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
				return jobsFail(ctx, s, name, err)
			}
		}
	}
	d, err := openDB(ctx, dsn, storeurl.Migrate)
	if err != nil {
		return jobsFail(ctx, s, name, err)
	}
	defer d.Close()
	c := queue.NewClient(d.Jobs(), queue.ClientConfig{})
	st, err := c.Stats(ctx)
	if err != nil {
		return jobsFail(ctx, s, name, err)
	}
	if len(st.Queues) > 0 {
		fmt.Fprintf(s.stderr, "heed demo: %s already has jobs; the demo needs an empty database: heed demo --reset%s deletes it first, or give another --db\n",
			d.Name(), dbArg(*dbFlag, dsn))
		return exitFailure
	}

	url, stop, err := demoServer(2)
	if err != nil {
		return jobsFail(ctx, s, name, err)
	}
	defer stop()

	jobs := []*demoJob{
		{what: "fails twice (transient), then succeeds", kind: "fail",
			args:  map[string]any{"times": 2, "message": "connection reset by peer"},
			state: queue.StateSucceeded, attempts: 3},
		{what: "fails permanently (bad input)", kind: "fail",
			args:  map[string]any{"permanent": true, "message": "invalid email address"},
			state: queue.StateDead, reason: retry.ReasonPermanent.Key(), attempts: 1},
		{what: "fails until its 4 attempts run out", kind: "fail",
			args:  map[string]any{"times": 1000, "message": "upstream unavailable"},
			opts:  queue.EnqueueOptions{MaxAttempts: 4},
			state: queue.StateDead, reason: retry.ReasonAttempts.Key(), attempts: 4},
		{what: "outlives its 400ms time budget (20 attempts allowed)", kind: "fail",
			args: map[string]any{"times": 1000, "message": "row still locked"},
			// Attempts of at most 100ms: a retry is scheduled only if its
			// delay and a whole attempt still fit in the budget.
			opts: queue.EnqueueOptions{MaxAttempts: 20, Policy: queue.JobPolicy{TimeBudget: 400 * time.Millisecond,
				AttemptTimeout: 100 * time.Millisecond,
				Backoff:        &backoff.Schedule{Kind: backoff.Constant, Base: 150 * time.Millisecond, Jitter: backoff.NoJitter}}},
			state: queue.StateDead, reason: retry.ReasonTimeBudget.Key()},
		{what: "calls a flaky HTTP service (503, Retry-After: 1)", kind: "http",
			args:  map[string]any{"url": url, "timeout_ms": 2000},
			state: queue.StateSucceeded, attempts: 3},
	}

	start := time.Now()
	stamp := func(t time.Time) string { return fmt.Sprintf("+%.3fs", t.Sub(start).Seconds()) }
	where := d.Name()
	if *dbFlag == "" {
		where += ", where heed jobs and heed ui look by default"
	}
	fmt.Fprintf(s.stdout, "heed demo: a job queue in %s\n", where)
	fmt.Fprintf(s.stdout, "worker policy: %d attempts, backoff 50ms..500ms with full jitter, time budget 30s\n\n", demoPolicy.Attempts)
	for i, dj := range jobs {
		raw, _ := json.Marshal(dj.args)
		if err := jobkinds.Validate(dj.kind, raw); err != nil {
			return jobsFail(ctx, s, name, err)
		}
		dj.job, _, err = c.Enqueue(ctx, dj.kind, json.RawMessage(raw), dj.opts)
		if err != nil {
			return jobsFail(ctx, s, name, err)
		}
		if !*quiet {
			fmt.Fprintf(s.stdout, "%s enqueued job %d %s %s: %s\n", stamp(time.Now()), dj.job.ID, dj.kind, raw, jobs[i].what)
		}
	}
	if !*quiet {
		fmt.Fprintln(s.stdout)
	}

	r := &jobrun.Runner{
		Store: d.Jobs(),
		Config: queue.WorkerConfig{Policy: demoPolicy, Lease: 5 * time.Second, PollInterval: 25 * time.Millisecond,
			ShutdownGrace: 5 * time.Second, Logger: jobrun.StoreLogger(s.stderr)},
		Stamp: stamp,
		Line:  jobDecisionLine,
		Drain: &queue.DrainOptions{WaitScheduled: true},
	}
	if !*quiet {
		r.Out = s.stdout
	}
	w, err := r.Worker()
	if err != nil {
		return jobsFail(ctx, s, name, err)
	}
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := r.Run(rctx, w, nil); err != nil {
		return jobsFail(ctx, s, name, err)
	}
	if ctx.Err() != nil {
		fmt.Fprintln(s.stderr, "heed demo: interrupted")
		return exitInterrupted
	}

	// The fates.
	allOK := true
	fmt.Fprintf(s.stdout, "\nDone in %.1fs. Every job's fate:\n\n", time.Since(start).Seconds())
	tw := tabwriter.NewWriter(s.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tSCRIPT\tEXPECTED\tGOT\tATTEMPTS\tRESULT")
	for _, dj := range jobs {
		j, err := c.Job(ctx, dj.job.ID)
		if err != nil {
			return jobsFail(ctx, s, name, err)
		}
		dj.job = j
		mark := "ok"
		if !dj.ok() {
			mark, allOK = "UNEXPECTED", false
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%s\n", j.ID, dj.what, dj.expected(), jobtext.State(j, time.Now()), j.Attempt, mark)
	}
	tw.Flush()
	st, err = c.Stats(ctx)
	if err != nil {
		return jobsFail(ctx, s, name, err)
	}
	db := dsn
	if d.Postgres() != nil {
		db = "'" + d.Name()[len("postgres "):] + "'" // never the password
	}
	flag := dbArg(*dbFlag, db)
	fmt.Fprintf(s.stdout, "\nThe dead-letter keeps %d jobs with their whole history, in %s. Look and requeue:\n", st.Dead, d.Name())
	fmt.Fprintf(s.stdout, "  heed jobs dead ls%s\n", flag)
	fmt.Fprintf(s.stdout, "  heed jobs show %d%s\n", jobs[3].job.ID, flag)
	// Job 3 gave up on a transient error, so it may pass once its upstream
	// is back; job 2's error is permanent and would only fail again.
	fmt.Fprintf(s.stdout, "  heed jobs dead requeue %d%s   # its error was transient; job %d's is permanent and would fail again\n",
		jobs[2].job.ID, flag, jobs[1].job.ID)
	fmt.Fprintf(s.stdout, "Or in a browser (the five jobs, their decision timelines, the dead-letter by cause):\n  heed ui%s\n", flag)
	if !allOK {
		fmt.Fprintln(s.stdout, "\nSome jobs did not end as their script intends (see UNEXPECTED above).")
		return exitFailure
	}
	return exitOK
}
