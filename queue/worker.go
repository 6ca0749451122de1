package queue

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"os"
	"runtime/debug"
	"sort"
	"sync"
	"time"

	"github.com/heed-go/heed/clock"
	"github.com/heed-go/heed/internal/redact"
	"github.com/heed-go/heed/internal/uniform"
	"github.com/heed-go/heed/queue/jobstore"
	"github.com/heed-go/heed/retry"
)

// Worker defaults, used for the zero fields of WorkerConfig (see
// WorkerConfig.WithDefaults).
const (
	// defaultConcurrency is the number of jobs a worker runs at once per
	// queue when WorkerConfig.Queues is nil: 100, as River's users set
	// (River has no default). Jobs mostly wait on I/O, and a running job
	// holds no database connection (claims and results are batched
	// statements), so handlers at once cost goroutines, not connections;
	// and a busy queue claims about half its concurrency per statement,
	// so on PostgreSQL the default drains no-op jobs several times faster
	// than the 10 it replaced (internal/compare's BenchmarkQueueDrain, in
	// docs/performance.md). Set Queues lower for handlers that load a dependency
	// that cannot take 100 calls at once from each worker.
	defaultConcurrency = 100
	// defaultLease is how long a claimed job is leased (30 s, renewed every
	// third of it while the handler runs): long enough to survive a slow
	// database, short enough that a killed worker's jobs run again within a
	// minute.
	defaultLease = 30 * time.Second
	// defaultPollInterval is how often an idle worker looks for due jobs
	// (1 s, with ±20 % jitter so that workers do not poll in step). A
	// store that implements Notifier wakes it sooner.
	defaultPollInterval = time.Second
	// defaultShutdownGrace is how long Run lets running jobs finish when
	// its context ends.
	defaultShutdownGrace = 30 * time.Second
)

// ErrStopped is returned by Start and Run on a worker that was already
// started or shut down.
var ErrStopped = errors.New("queue: worker already started or stopped")

// errShutdown is the cause of the context cancellation a handler sees when
// the shutdown grace period ends.
var errShutdown = errors.New("queue: worker shutting down")

// WorkerConfig configures a [Worker]. A zero field takes its default (each
// field says which); the zero value runs [DefaultQueue] with concurrency 100
// and the job defaults. [WorkerConfig.WithDefaults] returns the values a
// worker would use.
type WorkerConfig struct {
	// ID names the worker in leases and histories (default
	// "hostname-pid-random").
	ID string
	// Queues maps each queue to work to its concurrency limit, the number
	// of its jobs whose handlers run at once (default: DefaultQueue with
	// 100: jobs mostly wait on I/O and a running job holds no database
	// connection; set it lower for handlers that load a dependency that
	// cannot take 100 calls at once from each worker). A job whose
	// handler returned no longer counts while its result is written; at
	// most as many again wait for that.
	Queues map[string]int
	// Policy is the retry policy of jobs; per-job overrides apply on top.
	// Its zero fields take the job defaults, more patient than retry's
	// in-process ones because nobody is waiting on a background job:
	// Attempts 10 (about 7 minutes of backoff on average), a Backoff from
	// 2 s capped at 5 min with full jitter, a TimeBudget of 24 h (counted
	// from the start of a job's first attempt), an AttemptTimeout of 1 min
	// (a hung handler holds its slot and its lease until then; raise it for
	// long jobs), and a MaxPushback of 1 h (a job can honour a server's
	// long Retry-After; the time budget still bounds it). Its
	// Retryable classifies errors as for retry.Do: nil is
	// retry.IsTransient, so errors marked transient, network and timeout
	// errors and transient database errors are retried, and an error that
	// says nothing sends the job to the dead-letter at once (set RetryAll
	// to retry every error). Jobs go through the call protocol
	// (retry.Call) as durable calls: each job's first attempt counts as a
	// request in Budget; Breaker is asked before every attempt and told its
	// outcome; a refusal by either defers the job (rescheduled, its attempt
	// not counted, the reason in its history) instead of killing it, and
	// while the breaker is open (or the budget refuses retries) the worker
	// claims none of the jobs (no retried ones) it would defer. The Breaker
	// and Budget govern every kind the worker runs. Its Observe is not used
	// (see Observe below).
	Policy retry.Policy
	// Lease is how long a claimed job stays leased without renewal
	// (default 30 s: a killed worker's jobs run again within a minute). It
	// is renewed every third of it.
	Lease time.Duration
	// PollInterval is how often an idle queue looks for due jobs (default
	// 1 s, ±20 % jitter). A store that notifies of new jobs wakes it sooner.
	PollInterval time.Duration
	// RescueInterval is how often the worker looks for running jobs whose
	// lease expired (default: half of Lease).
	RescueInterval time.Duration
	// ShutdownGrace is how long Run lets running jobs finish when its
	// context ends (default 30 s).
	ShutdownGrace time.Duration
	// Observe, when set, is called for every event of every job, on the
	// goroutine that ran it. It must not block.
	Observe func(ctx context.Context, e Event)
	// Logger, when set, receives one record per event (see LogObserver),
	// and the worker's own warnings. Failing store calls (an unreachable
	// database) are logged as a change of state: "database unreachable
	// since ...; retrying" once, again every minute while it
	// lasts, and "database reconnected after 4.2s" once.
	Logger *slog.Logger
	// Clock is the time source for decisions and leases (default: real
	// time). Attempt timeouts use the context package's clock.
	Clock clock.Clock
	// Rand is the jitter source (default: math/rand/v2's global source);
	// it must be safe for concurrent use.
	Rand mrand.Source

	// RetainSucceeded, RetainDead and RetainCancelled are how long the
	// worker keeps finished jobs (counted from their FinishedAt) before it
	// deletes them: by default 24 h (what ran overnight), 30 days (the
	// dead-letter waits for a person, who may be on holiday) and 7 days. A
	// negative value keeps those jobs until an operator deletes them.
	// Every worker prunes, every RetentionInterval (default one minute,
	// ±20 % jitter), at most jobstore.RetentionBatch jobs per statement
	// with a pause between statements.
	RetainSucceeded time.Duration
	RetainDead      time.Duration // see RetainSucceeded
	RetainCancelled time.Duration // see RetainSucceeded
	// RetentionInterval: see RetainSucceeded; negative turns retention
	// off on this worker (others may still prune).
	RetentionInterval time.Duration

	// Kinds sets a policy per job kind, applied over Policy and under
	// each job's own overrides (see KindPolicy).
	Kinds map[string]KindPolicy
	// Middleware wraps every handler, the first the outermost: tracing
	// spans, context values, logging (see Middleware).
	Middleware []Middleware
}

// WithDefaults returns c with its zero fields set to the defaults a
// [Worker] uses for them: Queues, Policy (each zero field of it), Lease,
// PollInterval, RescueInterval, ShutdownGrace, the Retain fields and
// RetentionInterval. ID (a new one per worker), Clock, Rand and the
// hooks are left as they are; a negative duration stays negative. It
// does not check c: NewWorker does.
func (c WorkerConfig) WithDefaults() WorkerConfig {
	if c.Queues == nil {
		c.Queues = map[string]int{DefaultQueue: defaultConcurrency}
	}
	c.Policy = defaultPolicy(c.Policy)
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.Lease, defaultLease)
	def(&c.PollInterval, defaultPollInterval)
	def(&c.RescueInterval, c.Lease/2)
	def(&c.ShutdownGrace, defaultShutdownGrace)
	def(&c.RetainSucceeded, defaultRetainSucceeded)
	def(&c.RetainDead, defaultRetainDead)
	def(&c.RetainCancelled, defaultRetainCancelled)
	def(&c.RetentionInterval, defaultRetentionInterval)
	return c
}

// handler runs one job: it decodes args and calls the typed function,
// inside the worker's middleware.
type handler = HandlerFunc

// Worker claims jobs from a store and runs them with their registered
// handlers, deciding after each attempt with retry.Decide: done, retry at
// the decision's time (the job's AvailableAt), or dead. It renews leases
// while handlers run, rescues jobs whose worker was lost, and shuts down
// gracefully.
//
// Make one with [NewWorker], register handlers with [Handle], then [Run]
// (or Start and Shutdown). Its methods are safe for concurrent use; Handle
// must be called before Start. Delivery is at least once: a handler may run
// again for an attempt whose result was lost (a crash, an expired lease),
// so handlers should be safe to repeat. A result write that fails (an
// unreachable or overloaded database) is retried with backoff under the
// attempt's lease token, past the lease, before the attempt is left to
// be rescued as lost; a worker never exits because its store fails.
type Worker struct {
	store    jobstore.Store
	cfg      WorkerConfig
	observe  func(context.Context, Event)
	mu       sync.Mutex
	handlers map[string]handler
	state    int // 0 new, 1 started, 2 stopped

	periodics []*periodic // see Periodic

	base     context.Context // Start's context without its cancellation: observers
	ctx      context.Context // store calls; cancelled when Shutdown returns
	cancel   context.CancelFunc
	jobCtx   context.Context // handlers' parent; cancelled when the grace ends
	jobStop  context.CancelCauseFunc
	stopping chan struct{} // closed by Shutdown: stop claiming
	loops    sync.WaitGroup
	jobs     sync.WaitGroup
	wake     map[string]chan struct{}
	soon     map[string]chan time.Time // retries of this worker due before the next poll

	outage outage // failing store calls, for the log
	held   held   // what the breaker or the budget would refuse (hold.go)

	cancels  cancels  // running jobs, for cancellations (cancel.go)
	active   activity // claims and jobs in flight, for Drain (drain.go)
	declined declines // jobs declined, for Drain (drain.go)

	batcher   jobstore.TransitionBatcher // the store, when it batches
	complete  chan completion            // to the completer
	completer sync.WaitGroup
}

// completion is a transition waiting for the completer, and where its
// result goes.
type completion struct {
	t    jobstore.Transition
	done chan error
}

// maxBatch caps the transitions written in one batch.
const maxBatch = 128

// NewWorker returns a Worker over store. It returns an error matching
// ErrInvalid naming the field when cfg is invalid.
func NewWorker(store jobstore.Store, cfg WorkerConfig) (*Worker, error) {
	if store == nil {
		return nil, &InputError{Field: "store", Reason: "is nil"}
	}
	if cfg.ID == "" {
		host, _ := os.Hostname()
		var b [3]byte
		rand.Read(b[:])
		cfg.ID = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
	}
	for q, n := range cfg.Queues {
		if q == "" {
			return nil, &InputError{Field: "WorkerConfig.Queues", Reason: "has an empty queue name"}
		}
		if n < 1 {
			return nil, &InputError{Field: "WorkerConfig.Queues", Reason: fmt.Sprintf("gives queue %q concurrency %d, must be at least 1", q, n)}
		}
	}
	for name, d := range map[string]time.Duration{"Lease": cfg.Lease, "PollInterval": cfg.PollInterval,
		"RescueInterval": cfg.RescueInterval, "ShutdownGrace": cfg.ShutdownGrace} {
		if d < 0 {
			return nil, &InputError{Field: "WorkerConfig." + name, Reason: fmt.Sprintf("is %v, must not be negative", d)}
		}
	}
	cfg = cfg.WithDefaults()
	if err := checkKinds(cfg.Kinds); err != nil {
		return nil, err
	}
	if err := cfg.Policy.Validate(); err != nil {
		return nil, &InputError{Field: "WorkerConfig.Policy", Reason: err.Error()}
	}
	w := &Worker{store: store, cfg: cfg, handlers: map[string]handler{}}
	w.active.idle = make(chan struct{}, 1)
	switch {
	case cfg.Observe != nil && cfg.Logger != nil:
		log := LogObserver(cfg.Logger)
		w.observe = func(ctx context.Context, e Event) { log(ctx, e); cfg.Observe(ctx, e) }
	case cfg.Observe != nil:
		w.observe = cfg.Observe
	case cfg.Logger != nil:
		w.observe = LogObserver(cfg.Logger)
	}
	return w, nil
}

// ID returns the worker's ID.
func (w *Worker) ID() string { return w.cfg.ID }

// Handle registers fn for jobs of kind on w. Each job's JSON arguments are
// decoded into a T (arguments that do not decode fail the attempt with a
// permanent error: they will not decode better next time). fn's error
// steers the job: nil succeeds; retry.Permanent(err) sends it to the
// dead-letter at once; retry.After(d, err) retries no sooner than d; Snooze(d)
// runs it again after d without using an attempt; any other error is
// classified by the worker's policy (by default as retry.Do does: retried
// when known to be transient, else sent to the dead-letter). A panic is
// recovered, recorded with its stack, and classified like an error (a
// [*PanicError]).
//
// A job whose kind has no handler is sent to the dead-letter at once, with
// reason "unknown_kind" ([jobstore.ReasonUnknownKind]): a typo is not
// retried for hours. During a rolling deploy, where an old worker may
// claim a job of a kind only new workers know, requeue such jobs once the
// deploy is done.
//
// Handle panics if kind is empty, fn is nil, kind is already registered,
// or w was started: these are programming errors.
func Handle[T any](w *Worker, kind string, fn func(ctx context.Context, job *Job, args T) error) {
	if kind == "" {
		panic("queue: Handle with an empty kind")
	}
	if fn == nil {
		panic("queue: Handle: kind " + kind + " with a nil function")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.state != 0 {
		panic("queue: Handle after Start")
	}
	if _, dup := w.handlers[kind]; dup {
		panic("queue: Handle: kind " + kind + " registered twice")
	}
	w.handlers[kind] = w.wrap(func(ctx context.Context, job *Job) error {
		var args T
		if err := json.Unmarshal(job.Args, &args); err != nil {
			return retry.Permanent(fmt.Errorf("queue: decode args of %s job %d: %w", kind, job.ID, err))
		}
		return fn(ctx, job, args)
	})
}

// Run starts w, works until ctx ends, then shuts down, letting running jobs
// finish for up to ShutdownGrace. It returns nil after a clean shutdown,
// an error if the worker could not start, or the shutdown's error.
func (w *Worker) Run(ctx context.Context) error {
	if err := w.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.cfg.ShutdownGrace)
	defer cancel()
	return w.Shutdown(sctx)
}

// Start starts w's goroutines (a claimer per queue, a rescuer and, when the
// store is a Notifier, a listener) and returns. ctx's values are passed to
// handlers; ending ctx does not stop w: call Shutdown.
func (w *Worker) Start(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.state != 0 {
		return ErrStopped
	}
	w.state = 1
	base := context.WithoutCancel(ctx)
	w.base = base
	w.ctx, w.cancel = context.WithCancel(base)
	w.jobCtx, w.jobStop = context.WithCancelCause(base)
	w.stopping = make(chan struct{})
	w.wake = map[string]chan struct{}{}
	w.soon = map[string]chan time.Time{}
	queues := make([]string, 0, len(w.cfg.Queues))
	for q := range w.cfg.Queues {
		queues = append(queues, q)
		w.wake[q] = make(chan struct{}, 1)
		w.soon[q] = make(chan time.Time, 16)
	}
	sort.Strings(queues)
	if b, ok := w.store.(jobstore.TransitionBatcher); ok { // before any goroutine may finish a job
		w.batcher = b
		w.complete = make(chan completion)
		w.completer.Go(w.completeLoop)
	}
	w.startCancels()
	w.startRetention()
	if n, ok := w.store.(jobstore.Notifier); ok {
		if ch, err := n.JobNotify(w.ctx); err == nil {
			w.loops.Go(func() { w.listen(ch) })
		} else {
			w.log("job notifications unavailable; polling", err)
		}
	}
	for _, q := range queues {
		w.loops.Go(func() { w.claimLoop(q, w.cfg.Queues[q]) })
	}
	w.loops.Go(w.rescueLoop)
	if len(w.periodics) > 0 {
		w.loops.Go(w.periodicLoop)
	}
	return nil
}

// completeLoop writes transitions in batches: those that arrive while a
// batch is being written make the next one.
func (w *Worker) completeLoop() {
	batch := make([]completion, 0, maxBatch)
	ts := make([]jobstore.Transition, 0, maxBatch)
	for {
		c, ok := <-w.complete
		if !ok {
			return
		}
		batch = append(batch[:0], c)
	fill:
		for len(batch) < maxBatch {
			select {
			case c, ok := <-w.complete:
				if !ok {
					break fill
				}
				batch = append(batch, c)
			default:
				break fill
			}
		}
		ts = ts[:0]
		for _, c := range batch {
			ts = append(ts, c.t)
		}
		ctx, cancel := context.WithTimeout(w.ctx, w.resultTimeout())
		errs, err := w.batcher.JobTransitions(ctx, ts)
		cancel()
		for i, c := range batch {
			if err == nil && i < len(errs) {
				c.done <- errs[i]
			} else if err != nil {
				c.done <- err
			} else {
				c.done <- errors.New("queue: store returned too few results")
			}
		}
	}
}

// Shutdown stops w: it stops claiming at once, lets running jobs finish
// until ctx ends, then cancels the handlers' contexts (with a cause saying
// the worker is shutting down) and waits for them to return. A job whose
// handler returned an error because of that cancellation is released:
// available again at once, its attempt not counted (it did not fail; the
// worker left), with a "released" entry in its history. A handler that
// ignores its context delays Shutdown until it returns.
//
// Shutdown returns nil when every job finished within the grace, ctx.Err()
// when some had to be cancelled, and ErrStopped when w was not running.
func (w *Worker) Shutdown(ctx context.Context) error {
	w.mu.Lock()
	if w.state != 1 {
		w.mu.Unlock()
		return ErrStopped
	}
	w.state = 2
	close(w.stopping)
	w.mu.Unlock()

	w.loops.Wait() // claimers, rescuer, listener: quick to return
	done := make(chan struct{})
	go func() { w.jobs.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	default:
		select {
		case <-done:
		case <-ctx.Done():
			err = ctx.Err()
			w.jobStop(errShutdown)
			<-done
		}
	}
	if w.complete != nil {
		close(w.complete) // every job has stored its result
		w.completer.Wait()
	}
	w.jobStop(errShutdown)
	w.cancel()
	return err
}

func (w *Worker) now() time.Time { return clock.Now(w.cfg.Clock).UTC() }

func (w *Worker) log(msg string, err error) {
	if w.cfg.Logger != nil {
		w.cfg.Logger.Warn("queue: "+msg, "worker", w.cfg.ID, "error", redact.Error(err))
	}
}

func (w *Worker) emit(e Event) {
	if w.observe != nil {
		w.observe(w.base, e)
	}
}

// jittered returns d ±20 %.
func (w *Worker) jittered(d time.Duration) time.Duration {
	lo := d * 4 / 5
	return lo + uniform.Duration(w.cfg.Rand, d*2/5)
}

// listen fans store notifications out to the claim loops.
func (w *Worker) listen(ch <-chan string) {
	for {
		select {
		case <-w.stopping:
			return
		case q, ok := <-ch:
			if !ok {
				return
			}
			if c := w.wake[q]; c != nil {
				select {
				case c <- struct{}{}:
				default:
				}
			}
		}
	}
}

// claimLoop claims jobs of queue q while fewer than limit run, and starts
// them.
//
// A job stops counting against limit when its handler returns, not when
// its result is stored: the write (batched with others, see completeLoop)
// overlaps the next claim instead of holding a slot, as River's completer
// does. At most limit jobs may wait for their write, so that a slow store
// does not let claimed jobs pile up: a queue holds at most 2×limit jobs
// claimed and unfinished.
func (w *Worker) claimLoop(q string, limit int) {
	c := w.newClaimLoop(q, limit)
	defer c.timer.Stop()
	for {
		select {
		case <-w.stopping:
			return
		default:
		}
		if free := min(limit-c.running, 2*limit-c.running-c.storing); free > 0 && (c.poke || (c.more && free >= c.batchMin)) {
			c.claim(free)
		}
		if !c.wait() {
			return
		}
	}
}

// claimLoopState is the state of one queue's claimLoop.
type claimLoopState struct {
	w *Worker
	q string

	running int // claimed, handler not returned
	storing int // handler returned, result not yet stored
	// Each job sends ran (true) when its handler returns, then done
	// (false) when it is finished; one channel keeps the two in order.
	// With at most 2×limit jobs, each with at most two messages unread,
	// job goroutines never block on it.
	ends  chan bool
	timer clock.Timer
	next  time.Time // when the timer fires
	// Claims are writes: while jobs may be waiting (the last claim filled
	// every free slot), claim again once half of the slots are free, not
	// for every slot, so that a busy queue claims in batches. (A busy
	// queue's throughput is its claims' throughput: on PostgreSQL at
	// concurrency 50, claims of 25 drained no-op jobs 1.5-2.5x faster than
	// claims of 12, and claims of 37 were slower again; see
	// internal/compare's BenchmarkQueueDrain.) A poll or a notification
	// claims for any free slot.
	batchMin   int
	more, poke bool
	// limited counts the jobs of a limited claim (the half-open breaker's
	// probe, the retries a recovering budget may grant) that have not
	// ended (each sends on limitEnds when it does): the next limited
	// claim waits for them, since their admission comes after the claim
	// and the breaker or the budget cannot tell yet what they took.
	limited   int
	limitEnds chan struct{}
	// held: the last claim left due jobs behind for the queue's global
	// Limit (fleetlimit.go); each of our jobs whose result is stored frees
	// a place, so claim again then rather than at the next poll.
	held bool
}

// newClaimLoop returns the state of a claim loop that polls first now.
func (w *Worker) newClaimLoop(q string, limit int) *claimLoopState {
	poll := w.jittered(w.cfg.PollInterval)
	return &claimLoopState{
		w: w, q: q,
		ends:      make(chan bool, 4*limit),
		timer:     clock.Or(w.cfg.Clock).NewTimer(poll),
		next:      w.now().Add(poll),
		batchMin:  max(1, limit/2),
		poke:      true,
		limitEnds: make(chan struct{}, limit),
	}
}

// claim claims up to free jobs, fewer while the breaker or the budget
// holds them, and starts them.
func (c *claimLoopState) claim(free int) {
	w := c.w
	c.poke = false
	now := w.now()
	// Leave what the breaker or the budget would refuse where
	// it is (hold.go), and look again when that ends.
	h := w.holdAt(now)
	if !h.until.IsZero() && h.until.Before(c.next) {
		c.timer.Reset(h.until.Sub(now))
		c.next = h.until
	}
	var jobs []*Job
	var err error
	c.held = false
	n, capped := free, false
	switch {
	case h.probe:
		n, capped = 1, true // the breaker admits a few probes, not a batch
	case h.grant > 0 && h.grant < n && !h.first:
		n, capped = h.grant, true // what the budget may grant, not a batch to defer
	}
	if !h.all && !(capped && c.limited > 0) {
		w.active.claimStart()
		jobs, c.held, err = w.claim(jobstore.ClaimParams{Queue: c.q, Limit: n, Now: now,
			LeaseUntil: now.Add(w.cfg.Lease), Worker: w.cfg.ID, FirstOnly: h.first})
		w.active.claimEnd(len(jobs))
		if err != nil {
			w.storeFailed("claim "+c.q, err)
		} else {
			w.storeOK()
		}
	}
	if capped {
		c.limited += len(jobs)
	}
	for _, job := range jobs {
		c.start(job, capped)
	}
	// While something is held, a job that ends (a probe, a retry
	// that succeeded) may end the hold: look again then.
	c.more = err == nil && (len(jobs) == n || !h.until.IsZero() || capped)
}

// start runs job in its own goroutine; a capped job (of a limited claim)
// tells limitEnds when it ends.
func (c *claimLoopState) start(job *Job, capped bool) {
	w, ends, limitEnds := c.w, c.ends, c.limitEnds
	c.running++
	w.jobs.Add(1)
	go func() {
		if capped {
			defer func() { limitEnds <- struct{}{} }()
		}
		ran := false
		release := func() {
			if !ran {
				ran = true
				ends <- true
			}
		}
		defer func() { release(); w.active.jobEnd(); ends <- false; w.jobs.Done() }()
		w.run(job, release)
	}()
}

// wait waits for the next event: a job that ran or ended, a wake-up, a
// retry due soon, or the poll timer; it returns false when w stops.
func (c *claimLoopState) wait() bool {
	w := c.w
	select {
	case <-w.stopping:
		return false
	case <-c.limitEnds:
		c.limited--
	case ran := <-c.ends:
		if ran {
			c.running--
			c.storing++
		} else {
			c.storing--
			c.poke = c.poke || c.held // its place is free once its result is stored
		}
	case <-w.wake[c.q]:
		c.poke = true
	case at := <-w.soon[c.q]:
		// One of our retries is due at at: poll then if that is
		// sooner than the timer.
		if at.Before(c.next) {
			now := w.now()
			c.timer.Reset(max(at.Sub(now), 0))
			c.next = at
		}
	case <-c.timer.C():
		c.poke = true
		poll := w.jittered(w.cfg.PollInterval)
		c.timer.Reset(poll)
		c.next = w.now().Add(poll)
	}
	return true
}

// rescueLoop periodically takes running jobs whose lease expired and
// decides about their lost attempt.
func (w *Worker) rescueLoop() {
	timer := clock.Or(w.cfg.Clock).NewTimer(w.jittered(w.cfg.RescueInterval))
	defer timer.Stop()
	for {
		w.rescue()
		select {
		case <-w.stopping:
			return
		case <-timer.C():
			timer.Reset(w.jittered(w.cfg.RescueInterval))
		}
	}
}

func (w *Worker) rescue() {
	for {
		now := w.now()
		jobs, err := w.store.JobRescue(w.ctx, jobstore.RescueParams{Now: now, LeaseUntil: now.Add(w.cfg.Lease), Limit: 100})
		if err != nil {
			w.storeFailed("rescue", err)
			return
		}
		w.storeOK()
		for _, job := range jobs {
			w.emit(Event{Kind: EventLost, Job: job, Err: errLeaseExpired})
			p := w.policyFor(job)
			t, d := decideLost(&p, job, now, w.cfg.Rand)
			w.finish(job, t, d, 0)
		}
		if len(jobs) < 100 {
			return
		}
	}
}

// finish stores t and reports it.
func (w *Worker) finish(job *Job, t jobstore.Transition, d retry.Decision, dur time.Duration) {
	if err := w.storeResult(t); err != nil { // retried: see storeResult
		if err = w.whyLost(job.ID, err); errors.Is(err, ErrCancelled) {
			w.emit(Event{Kind: EventCancelled, Job: job, Err: err, Duration: dur})
		} else if errors.Is(err, jobstore.ErrLeaseLost) {
			w.emit(Event{Kind: EventLeaseLost, Job: job, Err: err})
		} else {
			// The lease will expire and the rescuer will retry the job.
			w.log(fmt.Sprintf("store the result of job %d", job.ID), err)
		}
		return
	}
	if se, ok := errors.AsType[*snoozeError](d.Err); ok && se.declined != nil && t.State == StateAvailable {
		w.declined.set(DeclinedJob{ID: job.ID, Queue: job.Queue, Kind: job.Kind, Reason: errorText(se.declined)})
	} else {
		w.declined.remove(job.ID)
	}
	if t.State == StateAvailable {
		// A retry due before the next poll: tell the claim loop, so that
		// "retry in 20ms" runs in 20 ms and not at the next poll.
		select {
		case w.soon[job.Queue] <- t.AvailableAt:
		default: // full: the next poll picks it up
		}
	}
	kind := EventRetried
	switch {
	case t.State == StateSucceeded:
		kind = EventSucceeded
	case t.State == StateDead:
		kind = EventDead
	case t.Entry.Outcome == jobstore.OutcomeSnoozed:
		kind = EventSnoozed
	case t.Entry.Outcome == jobstore.OutcomeReleased:
		kind = EventReleased
	case t.Entry.Outcome == jobstore.OutcomeDeferred:
		kind = EventDeferred
	}
	w.emit(Event{Kind: kind, Job: job, Decision: d, Duration: dur, Err: d.Err})
}

// run runs one attempt of job, as the call protocol admits it, and stores
// what follows. It calls release once the handler has returned, before
// the result is stored (not at all when the handler did not run).
func (w *Worker) run(job *Job, release func()) {
	if w.unknownKind(job) {
		return
	}
	p := w.policyFor(job)
	c := call(&p, job, w.cfg.Rand)
	start := w.now()
	lim, ok := c.Admit(start)
	if !ok {
		// Deferred by the breaker or the retry budget, or out of time
		// before it could start: the handler does not run.
		last := c.Last()
		t, d := refused(job, last, w.cfg.ID, start, w.cfg.Rand)
		w.refusedBy(last, start)
		w.finish(job, t, d, 0)
		return
	}
	w.emit(Event{Kind: EventStarted, Job: job})

	lctx, lost := context.WithCancelCause(w.jobCtx)
	defer lost(nil)
	w.cancels.add(job.ID, lost)
	defer w.cancels.remove(job.ID)
	actx := lctx
	cancel := context.CancelFunc(func() {})
	if !lim.At.IsZero() {
		actx, cancel = context.WithTimeout(lctx, lim.At.Sub(start))
	}

	stopRenew := make(chan struct{})
	var renewWG sync.WaitGroup
	renewWG.Go(func() { w.renew(job, lost, stopRenew) })

	res := result{started: start, worker: w.cfg.ID}
	res.err, res.stack = w.call(actx, job)
	// A job has no caller's deadline: a context that ran out is the
	// attempt's own timeout or the time budget.
	res.timedOut = res.err != nil && lctx.Err() == nil && errors.Is(actx.Err(), context.DeadlineExceeded)
	cancel()
	close(stopRenew)
	renewWG.Wait()
	release()
	now := w.now()
	dur := now.Sub(start)

	if cause := context.Cause(lctx); errors.Is(cause, ErrCancelled) {
		// The store has the job cancelled: there is nothing to write.
		c.Abandon(now)
		w.emit(Event{Kind: EventCancelled, Job: job, Err: cause, Duration: dur})
		return
	} else if cause != nil && res.err != nil {
		switch {
		case errors.Is(cause, jobstore.ErrLeaseLost):
			c.Abandon(now)
			w.emit(Event{Kind: EventLeaseLost, Job: job, Err: cause, Duration: dur})
			return
		case errors.Is(cause, errShutdown):
			c.Abandon(now)
			w.finish(job, decideRelease(job, res, now), retry.Decision{Attempt: job.Attempt, Err: res.err, At: now}, dur)
			return
		}
	}
	t, d := settle(&c, job, res, now)
	if d.Action == retry.Done && d.Attempt > 1 && w.cfg.Policy.Budget != nil {
		w.retrySucceeded()
	}
	w.finish(job, t, d, dur)
}

// call runs job's handler, turning a panic into a *PanicError.
func (w *Worker) call(ctx context.Context, job *Job) (err error, stack string) {
	w.mu.Lock()
	h := w.handlers[job.Kind]
	w.mu.Unlock()
	if h == nil { // unknownKind checked before the attempt started
		return retry.Permanent(fmt.Errorf("queue: no handler for kind %q on worker %s", job.Kind, w.cfg.ID)), ""
	}
	defer func() {
		if v := recover(); v != nil {
			pe := &PanicError{Value: v, Stack: string(debug.Stack())}
			err, stack = pe, pe.Stack
		}
	}()
	return h(ctx, job), ""
}

// renew extends job's lease whenever a third of it has passed, until stop
// closes. (Counting from the lease's end, not from the claim, keeps a slow
// claim from eating the lease.) When the lease is lost it cancels the
// handler's context with ErrLeaseLost.
func (w *Worker) renew(job *Job, lost context.CancelCauseFunc, stop <-chan struct{}) {
	third := w.cfg.Lease / 3
	until := job.LeaseUntil // the lease as the store has it
	due := func() time.Duration { return max(until.Add(-2*third).Sub(w.now()), 0) }
	timer := clock.Or(w.cfg.Clock).NewTimer(due())
	defer timer.Stop()
	for {
		select {
		case <-stop:
			return
		case <-timer.C():
		}
		// A slow store gets until the lease ends to answer.
		now := w.now()
		next := now.Add(w.cfg.Lease)
		ctx, cancel := context.WithTimeout(w.ctx, max(until.Sub(now), third))
		err := w.store.JobLeaseExtend(ctx, jobstore.LeaseParams{ID: job.ID, LeaseToken: job.LeaseToken, LeaseUntil: next})
		cancel()
		switch {
		case errors.Is(err, jobstore.ErrLeaseLost):
			lost(w.whyLost(job.ID, err))
			return
		case err != nil:
			w.storeFailed(fmt.Sprintf("renew the lease of job %d", job.ID), err)
			timer.Reset(third / 4) // try again soon
			continue
		}
		until = next
		timer.Reset(due())
	}
}
