package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/heed-go/heed/cmd/heed/internal/jobkinds"
	"github.com/heed-go/heed/cmd/heed/internal/jobrun"
	"github.com/heed-go/heed/cmd/heed/internal/jobtext"
	"github.com/heed-go/heed/cmd/heed/internal/storeurl"
	"github.com/heed-go/heed/heedotel/promexport"
	"github.com/heed-go/heed/queue"
)

var jobsWorkDoc = helpDoc{
	file: "jobs-work",
	groups: []flagGroup{
		{"Worker flags", []string{"queues", "concurrency", "for", "until-empty", "wait-within", "wait-scheduled", "allow-exec", "id", "metrics-addr"}},
		{"Retention flags", []string{"retain-succeeded", "retain-dead", "retain-cancelled"}},
		{"Output flags", []string{"quiet", "summary-every", "log-format"}},
		{"Policy flags (jobs)", []string{"attempts", "backoff", "base", "cap", "multiplier", "jitter", "budget", "timeout", "min-attempt-time"}},
		{"Lease and timing flags", []string{"lease", "poll", "grace"}},
		{"Database flags", []string{"db", "no-migrate"}},
	},
}

// jobsWorkMain is "heed jobs work".
func jobsWorkMain(ctx context.Context, s streams, args []string) int {
	const name = "jobs work"
	fs := newFlagSet(name)
	db := addDBFlag(fs)
	queues := fs.String("queues", queue.DefaultQueue, "the `QUEUES` to work, comma-separated; NAME=N sets one's concurrency (default: the queue named default)")
	conc := fs.Int("concurrency", workerDefaults.Queues[queue.DefaultQueue], "jobs run at once per queue")
	forD := durationFlag(fs, "for", 0, "stop after this long (default: run until a signal)")
	untilEmpty := fs.Bool("until-empty", false, "stop when no job of the queues is due (or due within --wait-within) and none is running; reports jobs scheduled later and jobs of other queues")
	waitWithin := durationFlag(fs, "wait-within", time.Minute, "with --until-empty, also wait for jobs due within this long (retries with a short backoff)")
	waitScheduled := fs.Bool("wait-scheduled", false, "with --until-empty, wait for every job of the queues, however far ahead it is scheduled")
	retainOK := durationFlag(fs, "retain-succeeded", workerDefaults.RetainSucceeded, "delete succeeded jobs this long after they finished (negative, such as -1: keep them)")
	retainDead := durationFlag(fs, "retain-dead", workerDefaults.RetainDead, "delete dead jobs this long after they died (negative: keep them)")
	retainCancelled := durationFlag(fs, "retain-cancelled", workerDefaults.RetainCancelled, "delete cancelled jobs this long after they were cancelled (negative: keep them)")
	quiet := fs.Bool("quiet", false, "print no line per attempt, only a summary line every --summary-every")
	summaryEvery := durationFlag(fs, "summary-every", time.Minute, "with --quiet, how often to print the summary line (0: never)")
	logFormat := fs.String("log-format", jobrun.LogText, "`FORMAT` of the messages on stderr: text or json")
	allowExec := fs.Bool("allow-exec", false, "let exec jobs run commands on this machine (anyone who can enqueue can then run commands)")
	id := fs.String("id", "", "the worker's `ID` in leases and histories (default host-pid-random)")
	pf := addPolicyFlags(fs, true)
	lease := durationFlag(fs, "lease", workerDefaults.Lease, "how long a claimed job is leased without renewal (at least 1s); a dead worker's jobs run again after it")
	poll := durationFlag(fs, "poll", workerDefaults.PollInterval, "how often an idle queue looks for due jobs (on PostgreSQL, LISTEN/NOTIFY also wakes it at once for new jobs)")
	grace := durationFlag(fs, "grace", workerDefaults.ShutdownGrace, "how long running jobs may finish when the worker stops")
	noMigrate := fs.Bool("no-migrate", false, "do not create or upgrade the database schema: refuse to start, naming the missing migrations, when it is behind this heed (for fleets that migrate in a separate step)")
	metricsAddr := fs.String("metrics-addr", "", "serve Prometheus metrics at http://`ADDR`/metrics (default: off); :9090 listens on 127.0.0.1 only, 0.0.0.0:9090 on every interface")
	if code, done := parseNoArgs(fs, args, s, jobsWorkDoc); done {
		return code
	}
	p, err := pf.policy()
	if err != nil {
		return usageError(s, name, err)
	}
	if *conc < 1 {
		return usageError(s, name, flagError("concurrency", "%d, must be at least 1", *conc))
	}
	qs, err := jobrun.ParseQueues(*queues, *conc)
	if err != nil {
		return usageError(s, name, flagError("queues", "%v", err))
	}
	if err := checkWorkFlags(*lease, *poll, *grace, *waitWithin, *forD, *summaryEvery, *logFormat); err != nil {
		return usageError(s, name, err)
	}
	log := jobrun.Logger(s.stderr, *logFormat, "heed "+name+": ")

	total := 0
	for _, n := range qs {
		total += n
	}
	workMode := storeurl.Migrate
	if *noMigrate {
		workMode = storeurl.Write
	}
	d, err := openDB(ctx, resolveDB(*db), workMode, poolSizeFor(total))
	if err != nil {
		if ctx.Err() != nil {
			// A signal while connecting is the normal way to stop, too:
			// no job was claimed, nothing is left to release.
			fmt.Fprintf(s.stderr, "heed jobs work: stopped before starting (signal while opening the database)\n")
			return exitOK
		}
		return jobsFail(ctx, s, name, err)
	}
	defer d.Close()
	var out io.Writer
	var every time.Duration
	if !*quiet {
		out = s.stdout
	} else {
		every = *summaryEvery
	}
	var warned sync.Map // exec jobs warned about, by ID: once each
	r := &jobrun.Runner{
		Store: d.Jobs(),
		Config: queue.WorkerConfig{ID: *id, Queues: qs, Policy: p, Lease: *lease, PollInterval: *poll,
			ShutdownGrace: *grace, Logger: log,
			RetainSucceeded: *retainOK, RetainDead: *retainDead, RetainCancelled: *retainCancelled},
		Kinds: jobkinds.Config{AllowExec: *allowExec, OnExecRefused: func(j *queue.Job) {
			if _, dup := warned.LoadOrStore(j.ID, true); !dup {
				log.Warn(fmt.Sprintf("exec job %d given back: this worker does not run exec jobs (start one with --allow-exec); it stays available, and is tried again every %v", j.ID, jobkinds.ExecRefusedSnooze),
					"job_id", j.ID)
			}
		}},
		Out:          out,
		Stamp:        func(t time.Time) string { return t.Format("15:04:05.000") },
		Line:         jobDecisionLine,
		SummaryOut:   s.stdout,
		SummaryEvery: every,
	}
	if *metricsAddr != "" {
		ms, err := promexport.Serve(context.WithoutCancel(ctx), *metricsAddr) // until the worker has stopped
		if err != nil {
			return usageError(s, name, flagError("metrics-addr", "%v", err))
		}
		defer ms.Close()
		observe := ms.Metrics().QueueObserver()
		r.OnEvent = func(e queue.Event) { observe(ctx, e) }
		if _, err := ms.Metrics().ObserveQueue(d.Jobs()); err != nil {
			return jobsFail(ctx, s, name, err)
		}
		log.Info("metrics at "+ms.URL(), "url", ms.URL())
	}
	if *untilEmpty {
		r.Drain = &queue.DrainOptions{Within: *waitWithin, WaitScheduled: *waitScheduled}
	}
	w, err := r.Worker()
	if err != nil {
		return usageError(s, name, err)
	}
	log.Info(fmt.Sprintf("worker %s on %s", w.ID(), d.Name()),
		"queues", queuesText(qs), "policy", pf.describe(p), "lease", *lease)
	switch {
	case *untilEmpty && *waitScheduled:
		log.Info("until empty: runs every job of its queues, however far ahead (--wait-scheduled), then stops")
	case *untilEmpty:
		log.Info(fmt.Sprintf("until empty: runs the jobs due now or within %v (--wait-within), then stops and reports what is left", *waitWithin))
	}

	rctx := ctx
	var cancel context.CancelFunc = func() {}
	if *forD > 0 {
		rctx, cancel = context.WithTimeout(ctx, *forD)
	}
	defer cancel()
	err = r.Run(rctx, w, func() {
		if ctx.Err() != nil {
			log.Info(fmt.Sprintf("stopping: running jobs have %v to finish", *grace))
		}
	})
	return workStopped(log, r, err)
}

// checkWorkFlags checks the timing and output flags of heed jobs work.
func checkWorkFlags(lease, poll, grace, waitWithin, forD, summaryEvery time.Duration, logFormat string) error {
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"lease", lease}, {"poll", poll}, {"grace", grace}} {
		if f.d <= 0 {
			return flagError(f.name, "%v, must be positive", f.d)
		}
	}
	switch {
	case lease < minLease:
		return flagError("lease", "%v is below the minimum of %v: a lease must outlast several database round trips, or finished jobs are rescued as lost and run again", lease, minLease)
	case waitWithin < 0:
		return flagError("wait-within", "%v, must not be negative", waitWithin)
	case forD < 0:
		return flagError("for", "%v, must not be negative", forD)
	case summaryEvery < 0:
		return flagError("summary-every", "%v, must not be negative", summaryEvery)
	case logFormat != jobrun.LogText && logFormat != jobrun.LogJSON:
		return flagError("log-format", "%q is not text or json", logFormat)
	}
	return nil
}

// queuesText lists the queues of qs with their concurrency, sorted.
func queuesText(qs map[string]int) string {
	names := make([]string, 0, len(qs))
	for q, n := range qs {
		names = append(names, fmt.Sprintf("%s (%d at once)", q, n))
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// workStopped logs what a drain left and the summary once r has stopped
// with err, and returns the exit code.
func workStopped(log *slog.Logger, r *jobrun.Runner, err error) int {
	if r.Drained != nil {
		for _, line := range jobtext.DrainReport(*r.Drained) {
			log.Warn(line)
		}
	}
	log.Info("stopped: " + r.Summary())
	if err != nil {
		log.Error(err.Error())
		if errors.Is(err, jobrun.ErrInterruptedAgain) {
			return exitInterrupted
		}
		return exitFailure
	}
	return exitOK
}

// minLease is the shortest --lease heed jobs work accepts. Renewals and
// result writes must fit in a lease with room to spare; below a second a
// loaded machine turns finished work into "lost" attempts.
const minLease = time.Second

// jobDecisionLine describes an event in the words of heed run, or "" for
// events that get no line.
func jobDecisionLine(e queue.Event) string {
	switch e.Kind {
	case queue.EventSucceeded, queue.EventRetried, queue.EventSnoozed:
		return workerDecision(e.Decision)
	case queue.EventDead:
		return workerDecision(e.Decision) + " -> dead-letter"
	case queue.EventLost:
		return fmt.Sprintf("attempt %d: lease expired (worker lost); rescued", e.Job.Attempt)
	case queue.EventReleased:
		return fmt.Sprintf("attempt %d: released at shutdown (attempt not counted)", e.Job.Attempt)
	case queue.EventLeaseLost:
		return fmt.Sprintf("attempt %d: lease lost while running; its result was dropped", e.Job.Attempt)
	}
	return ""
}
