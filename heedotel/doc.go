// Package heedotel turns heed's observer events into OpenTelemetry metrics,
// so that operators see what retries hide: how many attempts, how many
// retries, why retrying stopped, how long calls waited, what the budget and
// the breaker refused, and what the dead-letter holds.
//
// It records through the OpenTelemetry metric API: the application brings
// its SDK and exporter and passes the meter provider to [New] (nil: the
// global one). The OpenTelemetry dependency lives here only; heed's core
// packages stay standard-library only. (The name follows redisotel and
// friends: the instrumented library, then "otel".)
//
// Most callers make one [Metrics] and hook it into each executor they use:
//
//	m, err := heedotel.New(meterProvider)
//	policy.Observe = m.RetryObserver("payments.charge")       // retry.Do
//	client := &http.Client{Transport: m.Transport(&retryhttp.Transport{})}
//	workerCfg.Observe = m.QueueObserver()                      // queue.Worker
//	clientCfg.Observe = m.QueueObserver()                      // queue.Client
//	reg, err := m.ObserveQueue(store)                          // job gauges
//	brkCfg.OnStateChange = m.BreakerObserver("payments")       // breaker.Config
//	reg, err = m.ObserveBreaker("payments", brk)               // breaker state
//	reg, err = m.ObserveBudget("payments", bud)                // budget window
//	limCfg.Observe = m.OverloadObserver("api")                 // overload.Config
//	reg, err = m.ObserveOverload("api", lim)                   // limit, in flight, queued
//
// Package heedotel/promexport serves a Metrics in the Prometheus text
// format, for programs without an SDK of their own (heed jobs work
// --metrics-addr).
//
// # Instruments
//
// Counters count from the start of the process; histograms are in seconds
// with explicit buckets from 1 ms (5 ms for durations) to 60 s, and up to
// 24 h for jobs (change them with an SDK View); gauges are read at
// collection time.
//
//	retry.Do (RetryObserver)               attributes: heed.operation and
//	heed.retry.attempts          {attempt}   heed.retry.outcome
//	heed.retry.retries           {retry}     heed.retry.reason
//	heed.retry.give_ups          {call}      heed.retry.reason
//	heed.retry.breaker.refused   {call}      -
//	heed.retry.delay             s           heed.retry.reason
//	heed.retry.attempt.duration  s           heed.retry.outcome
//	heed.retry.call.duration     s           heed.retry.reason (final)
//
//	retryhttp (Transport)                  attributes: http.request.method,
//	                                         server.address, server.port and
//	http.client.request.duration     s          http.response.status_code, error.type
//	heed.http.client.attempts        {attempt}  heed.http.status_class, heed.retry.outcome
//	heed.http.client.retries         {retry}    heed.http.status_class, heed.retry.reason
//	heed.http.client.give_ups        {call}     heed.http.status_class, heed.retry.reason
//	heed.http.client.breaker.refused {call}     -
//	heed.http.client.hedges          {attempt}  -
//	heed.http.client.hedges.won      {call}     -
//	heed.http.client.retry.delay     s          heed.retry.reason
//	heed.http.client.call.duration   s          heed.http.status_class, heed.retry.reason (final)
//
//	breaker and budget
//	heed.breaker.state           {state}      heed.breaker.name, heed.breaker.state
//	heed.breaker.transitions     {transition} heed.breaker.name, heed.breaker.previous_state, heed.breaker.state
//	heed.budget.window.requests  {request}    heed.budget.name
//	heed.budget.window.retries   {retry}      heed.budget.name, heed.budget.decision
//
//	queue (QueueObserver, ObserveQueue)    attributes: heed.queue.name and
//	heed.queue.jobs.enqueued     {job}       heed.job.kind
//	heed.queue.jobs.started      {attempt}   heed.job.kind
//	heed.queue.jobs.succeeded    {job}       heed.job.kind
//	heed.queue.jobs.retried      {attempt}   heed.job.kind, heed.retry.reason
//	heed.queue.jobs.snoozed      {attempt}   heed.job.kind
//	heed.queue.jobs.dead         {job}       heed.job.kind, heed.retry.reason
//	heed.queue.jobs.released     {attempt}   heed.job.kind
//	heed.queue.jobs.lost         {attempt}   heed.job.kind
//	heed.queue.jobs.lease_lost   {attempt}   heed.job.kind
//	heed.queue.job.wait.duration s           heed.job.kind
//	heed.queue.job.duration      s           heed.job.kind, heed.job.result
//	heed.queue.jobs              {job}       heed.job.state (gauge)
//	heed.queue.dead_letter.oldest_age s      (no attributes; gauge)
//
//	overload (OverloadObserver,            attributes: heed.overload.name and
//	ObserveOverload)
//	heed.overload.refused        {request}   heed.overload.reason
//	heed.overload.queue.duration s           -
//	heed.overload.limit          {request}   (gauge)
//	heed.overload.in_flight      {request}   (gauge)
//	heed.overload.queued         {request}   (gauge)
//
// The package's README lists what each one means.
//
// # Cardinality
//
// Every attribute value comes from a small fixed set (outcomes, reasons,
// states, status classes, known HTTP methods) or from a name the program
// chooses (operation, breaker, budget, queue, job kind). Destinations are
// host and port only, never URLs, paths or query strings (a host label
// that looks like a token is recorded as REDACTED), and at most 256
// of them are told apart.
//
// # Cost
//
// [Metrics.RetryObserver] builds its attribute sets when it is called, so
// recording an event allocates nothing: on retry.Do's success path the
// adapter adds one counter increment and two histogram records (about
// 0.5 µs with the SDK), and no allocation.
package heedotel
