package heedotel

import (
	"errors"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// scopeName is the instrumentation scope of heed's meter.
const scopeName = "github.com/heed-go/heed/heedotel"

// Attribute keys used by heed's instruments, besides the OpenTelemetry
// semantic-convention keys of the HTTP instruments (http.request.method,
// server.address, server.port, http.response.status_code, error.type).
const (
	// keyOperation names the operation given to [Metrics.RetryObserver].
	keyOperation = attribute.Key("heed.operation")
	// keyOutcome is an attempt's outcome class, retry.Outcome.Key():
	// "success", "transient", "timeout", "pushback", "permanent" or
	// "refused".
	keyOutcome = attribute.Key("heed.retry.outcome")
	// keyReason is a decision's reason, retry.Reason.Key(): "success",
	// "transient", "attempts", "deadline", "budget", "breaker_open", ...
	keyReason = attribute.Key("heed.retry.reason")
	// keyStatusClass is an HTTP attempt's status class: "1xx" to "5xx", or
	// "error" when no response came back.
	keyStatusClass = attribute.Key("heed.http.status_class")
	// keyBreaker names the breaker given to [Metrics.ObserveBreaker] and
	// [Metrics.BreakerObserver].
	keyBreaker = attribute.Key("heed.breaker.name")
	// keyBreakerState is a breaker state, breaker.State.Key(): "closed",
	// "open" or "half_open".
	keyBreakerState = attribute.Key("heed.breaker.state")
	// keyBreakerFrom is the state a breaker left, on a transition.
	keyBreakerFrom = attribute.Key("heed.breaker.previous_state")
	// keyBudget names the budget given to [Metrics.ObserveBudget].
	keyBudget = attribute.Key("heed.budget.name")
	// keyBudgetDecision is "allowed" or "denied".
	keyBudgetDecision = attribute.Key("heed.budget.decision")
	// keyQueue is a job's queue.
	keyQueue = attribute.Key("heed.queue.name")
	// keyJobKind is a job's kind (the handler's name: a set fixed by the
	// program, so bounded).
	keyJobKind = attribute.Key("heed.job.kind")
	// keyJobState is a job state: "available", "scheduled", "running",
	// "succeeded" or "dead".
	keyJobState = attribute.Key("heed.job.state")
	// keyJobResult is how a job's attempt ended, the name of the queue
	// event (queue.EventKind.String()): "succeeded", "retried",
	// "snoozed", "dead", "released" or "lease_lost".
	keyJobResult = attribute.Key("heed.job.result")
	// keyOverload names the limiter given to [Metrics.OverloadObserver]
	// and [Metrics.ObserveOverload].
	keyOverload = attribute.Key("heed.overload.name")
	// keyOverloadReason is why a limiter refused a request,
	// overload.Reason.Key(): "queue_full", "queue_time", "deadline",
	// "retry" or "caller_gone".
	keyOverloadReason = attribute.Key("heed.overload.reason")
)

// Bucket boundaries, in seconds, of heed's histograms. Change them with an
// SDK View if they do not suit.
var (
	// durationBuckets are the HTTP semantic conventions' boundaries for
	// http.client.request.duration, plus 30 s and 60 s for long calls.
	durationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 30, 60}
	// delayBuckets cover retry.Do's default backoff (100 ms to 5 s) and
	// server pushback (up to 30 s).
	delayBuckets = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}
	// jobBuckets cover jobs, which wait and run for seconds to hours.
	jobBuckets = []float64{0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600, 21600, 86400}
)

// Metrics turns heed's observer events into OpenTelemetry metrics. Make one
// with [New] per meter provider and share it: it is safe for concurrent use,
// and every observer it returns records into the same instruments.
//
// Wire it into the executors you use:
//
//	policy.Observe = m.RetryObserver("payments")             // retry.Do
//	client.Transport = m.Transport(&retryhttp.Transport{})  // retryhttp
//	queue.WorkerConfig{Observe: m.QueueObserver()}          // queue workers
//	m.ObserveQueue(store)                                   // job gauges
//	breaker.Config{OnStateChange: m.BreakerObserver("payments")}
//	m.ObserveBreaker("payments", b); m.ObserveBudget("payments", bud)
//
// The zero Metrics is not usable.
type Metrics struct {
	meter metric.Meter

	// retry.Do (RetryObserver)
	attempts   metric.Int64Counter
	retries    metric.Int64Counter
	giveUps    metric.Int64Counter
	refused    metric.Int64Counter
	delay      metric.Float64Histogram
	attemptDur metric.Float64Histogram
	callDur    metric.Float64Histogram

	// retryhttp (Transport)
	httpReqDur   metric.Float64Histogram
	httpAttempts metric.Int64Counter
	httpRetries  metric.Int64Counter
	httpGiveUps  metric.Int64Counter
	httpRefused  metric.Int64Counter
	httpDelay    metric.Float64Histogram
	httpCallDur  metric.Float64Histogram
	httpHedges   metric.Int64Counter
	httpHedgeWon metric.Int64Counter

	// breaker and budget
	breakerState       metric.Int64ObservableGauge
	breakerTransitions metric.Int64Counter
	budgetRequests     metric.Int64ObservableGauge
	budgetRetries      metric.Int64ObservableGauge

	// queue
	jobsEnqueued  metric.Int64Counter
	jobsStarted   metric.Int64Counter
	jobsSucceeded metric.Int64Counter
	jobsRetried   metric.Int64Counter
	jobsSnoozed   metric.Int64Counter
	jobsDead      metric.Int64Counter
	jobsReleased  metric.Int64Counter
	jobsLost      metric.Int64Counter
	jobsLeaseLost metric.Int64Counter
	jobWait       metric.Float64Histogram
	jobDur        metric.Float64Histogram
	jobsGauge     metric.Int64ObservableGauge
	deadOldest    metric.Float64ObservableGauge

	// overload (OverloadObserver, ObserveOverload)
	overloadRefused  metric.Int64Counter
	overloadWait     metric.Float64Histogram
	overloadLimit    metric.Int64ObservableGauge
	overloadInFlight metric.Int64ObservableGauge
	overloadQueued   metric.Int64ObservableGauge

	hosts  hostTable  // per-destination attribute sets of the HTTP instruments
	jobs   sync.Map   // jobKey -> *jobSets
	jobsMu sync.Mutex // serialises adding to jobs
	jobsN  int        // entries in jobs
}

// New returns a Metrics whose instruments are created with mp's meter
// named "github.com/heed-go/heed/heedotel" (the instrumentation scope to
// select in an SDK View). A nil mp means otel.GetMeterProvider(), the global
// provider. Most applications call it once, with the meter provider their
// SDK set up, and share the result.
func New(mp metric.MeterProvider) (*Metrics, error) {
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m := &Metrics{meter: mp.Meter(scopeName)}
	b := builder{meter: m.meter}

	m.attempts = b.counter("heed.retry.attempts", "{attempt}", "Attempts made by retry.Do, by outcome class.")
	m.retries = b.counter("heed.retry.retries", "{retry}", "Retries decided by retry.Do (each one followed by a wait), by reason.")
	m.giveUps = b.counter("heed.retry.give_ups", "{call}", "Calls of retry.Do that gave up, by reason.")
	m.refused = b.counter("heed.retry.breaker.refused", "{call}", "Attempts of retry.Do refused by an open circuit breaker before they started.")
	m.delay = b.histogram("heed.retry.delay", "s", "Wait before a retry of retry.Do, by reason.", delayBuckets)
	m.attemptDur = b.histogram("heed.retry.attempt.duration", "s", "Duration of one attempt of retry.Do, by outcome class.", durationBuckets)
	m.callDur = b.histogram("heed.retry.call.duration", "s", "Duration of a call of retry.Do from its first attempt to its final decision, waits included, by final reason.", durationBuckets)

	m.httpReqDur = b.histogram("http.client.request.duration", "s", "Duration of HTTP client requests: each attempt of a retryhttp call.", durationBuckets)
	m.httpAttempts = b.counter("heed.http.client.attempts", "{attempt}", "HTTP attempts made by retryhttp, by status class and outcome class.")
	m.httpRetries = b.counter("heed.http.client.retries", "{retry}", "HTTP retries decided by retryhttp, by status class of the attempt retried and reason.")
	m.httpGiveUps = b.counter("heed.http.client.give_ups", "{call}", "HTTP calls on which retryhttp gave up, by status class of the last attempt and reason.")
	m.httpRefused = b.counter("heed.http.client.breaker.refused", "{call}", "HTTP attempts refused by an open per-host circuit breaker before they were sent.")
	m.httpDelay = b.histogram("heed.http.client.retry.delay", "s", "Wait before an HTTP retry, by reason.", delayBuckets)
	m.httpHedges = b.counter("heed.http.client.hedges", "{attempt}", "Hedges retryhttp sent beside a slow attempt (retry.Policy.Hedge); heed.http.client.attempts counts a race as one attempt.")
	m.httpHedgeWon = b.counter("heed.http.client.hedges.won", "{call}", "Races of retryhttp whose result came from a hedge, not from the attempt it raced.")
	m.httpCallDur = b.histogram("heed.http.client.call.duration", "s", "Duration of an HTTP call through retryhttp, all attempts and waits included, by final status class and reason.", durationBuckets)

	m.breakerState = b.gauge("heed.breaker.state", "{state}", "1 for the state a circuit breaker is in, 0 for the others.")
	m.breakerTransitions = b.counter("heed.breaker.transitions", "{transition}", "Changes of state of a circuit breaker, by previous and new state.")
	m.budgetRequests = b.gauge("heed.budget.window.requests", "{request}", "Requests (first attempts) counted in a retry budget's sliding window.")
	m.budgetRetries = b.gauge("heed.budget.window.retries", "{retry}", "Retries allowed and denied in a retry budget's sliding window.")

	m.jobsEnqueued = b.counter("heed.queue.jobs.enqueued", "{job}", "Jobs inserted by a queue.Client.")
	m.jobsStarted = b.counter("heed.queue.jobs.started", "{attempt}", "Job attempts started by workers.")
	m.jobsSucceeded = b.counter("heed.queue.jobs.succeeded", "{job}", "Jobs whose attempt succeeded.")
	m.jobsRetried = b.counter("heed.queue.jobs.retried", "{attempt}", "Job attempts that failed and were scheduled again, by reason.")
	m.jobsSnoozed = b.counter("heed.queue.jobs.snoozed", "{attempt}", "Job attempts the handler snoozed (given back, not counted).")
	m.jobsDead = b.counter("heed.queue.jobs.dead", "{job}", "Jobs that gave up and went to the dead-letter, by reason.")
	m.jobsReleased = b.counter("heed.queue.jobs.released", "{attempt}", "Job attempts handed back at shutdown (not counted).")
	m.jobsLost = b.counter("heed.queue.jobs.lost", "{attempt}", "Job attempts whose lease expired, found by a rescuer (a crashed or hung worker).")
	m.jobsLeaseLost = b.counter("heed.queue.jobs.lease_lost", "{attempt}", "Job attempts whose worker lost the lease while running; their result was dropped.")
	m.jobWait = b.histogram("heed.queue.job.wait.duration", "s", "Time from a job's available time to the start of its attempt.", jobBuckets)
	m.jobDur = b.histogram("heed.queue.job.duration", "s", "Duration of a job's attempt (its handler's run), by result.", jobBuckets)
	m.jobsGauge = b.gauge("heed.queue.jobs", "{job}", "Jobs in the store, by queue and state (dead: the dead-letter's size).")
	m.deadOldest = b.floatGauge("heed.queue.dead_letter.oldest_age", "s", "Age of the oldest job in the dead-letter (since it died), all queues together; absent when empty.")
	m.overloadRefused = b.counter("heed.overload.refused", "{request}", "Requests an overload.Limiter refused, by reason.")
	m.overloadWait = b.histogram("heed.overload.queue.duration", "s", "Time a request admitted by an overload.Limiter waited in its queue (0 when admitted at once).", delayBuckets)
	m.overloadLimit = b.gauge("heed.overload.limit", "{request}", "An overload.Limiter's concurrency limit.")
	m.overloadInFlight = b.gauge("heed.overload.in_flight", "{request}", "Requests in the handlers behind an overload.Limiter.")
	m.overloadQueued = b.gauge("heed.overload.queued", "{request}", "Requests waiting in an overload.Limiter's queue.")
	if b.err != nil {
		return nil, b.err
	}
	return m, nil
}

// builder creates instruments and keeps the first error.
type builder struct {
	meter metric.Meter
	err   error
}

func (b *builder) counter(name, unit, desc string) metric.Int64Counter {
	c, err := b.meter.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
	b.err = errors.Join(b.err, err)
	return c
}

func (b *builder) histogram(name, unit, desc string, bounds []float64) metric.Float64Histogram {
	h, err := b.meter.Float64Histogram(name, metric.WithUnit(unit), metric.WithDescription(desc),
		metric.WithExplicitBucketBoundaries(bounds...))
	b.err = errors.Join(b.err, err)
	return h
}

func (b *builder) gauge(name, unit, desc string) metric.Int64ObservableGauge {
	g, err := b.meter.Int64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
	b.err = errors.Join(b.err, err)
	return g
}

func (b *builder) floatGauge(name, unit, desc string) metric.Float64ObservableGauge {
	g, err := b.meter.Float64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
	b.err = errors.Join(b.err, err)
	return g
}

// opts is one attribute set, ready to pass to Add and Record without
// allocating: the option slices are built once.
type opts struct {
	add []metric.AddOption
	rec []metric.RecordOption
	obs []metric.ObserveOption
}

func newOpts(kv ...attribute.KeyValue) opts {
	o := metric.WithAttributeSet(attribute.NewSet(kv...))
	return opts{add: []metric.AddOption{o}, rec: []metric.RecordOption{o}, obs: []metric.ObserveOption{o}}
}
