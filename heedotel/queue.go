package heedotel

import (
	"context"
	"sync"
	"time"

	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
	"go.opentelemetry.io/otel/metric"
)

// Job results, the values of heed.job.result on heed.queue.job.duration:
// the names of the queue events that end an attempt (queue.EventKind.String).
var jobResults = [...]string{
	resSucceeded: queue.EventSucceeded.String(),
	resRetried:   queue.EventRetried.String(),
	resSnoozed:   queue.EventSnoozed.String(),
	resDead:      queue.EventDead.String(),
	resReleased:  queue.EventReleased.String(),
	resLeaseLost: queue.EventLeaseLost.String(),
}

const (
	resSucceeded = iota
	resRetried
	resSnoozed
	resDead
	resReleased
	resLeaseLost
)

// maxJobKinds caps the (queue, kind) pairs the queue instruments tell
// apart. A worker reports whatever kinds were enqueued in its queues, so
// further pairs are recorded with heed.job.kind "_OTHER".
const maxJobKinds = 256

type jobKey struct{ queue, kind string }

// jobSets are the attribute sets of one queue and kind, built on its first
// event.
type jobSets struct {
	base    opts                  // queue, kind
	reasons [numReasons]opts      // queue, kind, reason
	results [len(jobResults)]opts // queue, kind, result
}

func (m *Metrics) jobSets(q, kind string) *jobSets {
	k := jobKey{q, kind}
	if v, ok := m.jobs.Load(k); ok {
		return v.(*jobSets)
	}
	m.jobsMu.Lock()
	defer m.jobsMu.Unlock()
	if v, ok := m.jobs.Load(k); ok {
		return v.(*jobSets)
	}
	if m.jobsN >= maxJobKinds {
		k.kind = "_OTHER"
		if v, ok := m.jobs.Load(k); ok {
			return v.(*jobSets)
		}
	}
	m.jobsN++
	qa, ka := keyQueue.String(k.queue), keyJobKind.String(k.kind)
	s := &jobSets{base: newOpts(qa, ka)}
	for i := range s.reasons {
		s.reasons[i] = newOpts(qa, ka, keyReason.String(reasonName(i)))
	}
	for i := range s.results {
		s.results[i] = newOpts(qa, ka, keyJobResult.String(jobResults[i]))
	}
	m.jobs.Store(k, s)
	return s
}

// QueueObserver returns a function for queue.WorkerConfig.Observe and
// queue.ClientConfig.Observe that counts job events by queue and kind:
// heed.queue.jobs.enqueued, .started, .succeeded, .retried (by reason),
// .snoozed, .dead (by reason), .released, .lost and .lease_lost; and records
// heed.queue.job.wait.duration when an attempt starts (from the job's
// available time) and heed.queue.job.duration when it ends, by result.
// Attempts that did not run (a lost attempt decided by the rescuer, a job
// whose time budget ended before it started) report no duration and are
// not recorded in heed.queue.job.duration.
//
// Job kinds become attribute values: they are the program's handler names,
// a fixed set. To keep another observer, call both from your own function.
func (m *Metrics) QueueObserver() func(context.Context, queue.Event) {
	return m.observeQueue
}

func (m *Metrics) observeQueue(ctx context.Context, e queue.Event) {
	if e.Job == nil {
		return
	}
	s := m.jobSets(e.Job.Queue, e.Job.Kind)
	res := -1
	switch e.Kind {
	case queue.EventEnqueued:
		m.jobsEnqueued.Add(ctx, 1, s.base.add...)
	case queue.EventStarted:
		m.jobsStarted.Add(ctx, 1, s.base.add...)
		if j := e.Job; !j.AvailableAt.IsZero() && !j.AttemptedAt.IsZero() {
			m.jobWait.Record(ctx, max(j.AttemptedAt.Sub(j.AvailableAt), 0).Seconds(), s.base.rec...)
		}
	case queue.EventSucceeded:
		m.jobsSucceeded.Add(ctx, 1, s.base.add...)
		res = resSucceeded
	case queue.EventRetried:
		m.jobsRetried.Add(ctx, 1, s.reasons[reasonIndex(e.Decision.Reason)].add...)
		res = resRetried
	case queue.EventSnoozed:
		m.jobsSnoozed.Add(ctx, 1, s.base.add...)
		res = resSnoozed
	case queue.EventDead:
		m.jobsDead.Add(ctx, 1, s.reasons[reasonIndex(e.Decision.Reason)].add...)
		res = resDead
	case queue.EventReleased:
		m.jobsReleased.Add(ctx, 1, s.base.add...)
		res = resReleased
	case queue.EventLost:
		m.jobsLost.Add(ctx, 1, s.base.add...)
	case queue.EventLeaseLost:
		m.jobsLeaseLost.Add(ctx, 1, s.base.add...)
		res = resLeaseLost
	}
	if res >= 0 && e.Duration > 0 {
		m.jobDur.Record(ctx, e.Duration.Seconds(), s.results[res].rec...)
	}
}

// StatsReader is what [Metrics.ObserveQueue] reads: a jobstore.Store (such as
// sqlitestore's or pgstore's) has this method.
type StatsReader interface {
	Stats(ctx context.Context, now time.Time) (queue.Stats, error)
}

// jobStates are the values of heed.job.state, in the order of queueCounts.
var jobStates = [...]string{"available", "scheduled", "running", "succeeded", "dead"}

func queueCounts(q *jobstore.QueueStats) [len(jobStates)]int {
	return [...]int{q.Available, q.Scheduled, q.Running, q.Succeeded, q.Dead}
}

// ObserveQueue reports the jobs of st at collection time, read with one
// st.Stats call per collection: heed.queue.jobs by queue and state
// ("available" now, "scheduled" for later, "running", "succeeded", "dead":
// the dead-letter's size per queue), and heed.queue.dead_letter.oldest_age,
// the age of the oldest dead job (across queues: the store reports the
// oldest for all of them). Queues with no jobs have no series. An error
// from st is reported to the SDK (otel.Handle) and that collection has no
// queue gauges.
//
// Each collection queries the store (a few aggregate queries): mind it when
// choosing the collection interval. It returns the callback's registration:
// Unregister it before closing st.
func (m *Metrics) ObserveQueue(st StatsReader) (metric.Registration, error) {
	var sets sync.Map // queue name -> *[len(jobStates)]opts
	setsFor := func(q string) *[len(jobStates)]opts {
		if v, ok := sets.Load(q); ok {
			return v.(*[len(jobStates)]opts)
		}
		var s [len(jobStates)]opts
		for i := range s {
			s[i] = newOpts(keyQueue.String(q), keyJobState.String(jobStates[i]))
		}
		v, _ := sets.LoadOrStore(q, &s)
		return v.(*[len(jobStates)]opts)
	}
	return m.meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		now := time.Now()
		stats, err := st.Stats(ctx, now)
		if err != nil {
			return err
		}
		for i := range stats.Queues {
			q := &stats.Queues[i]
			s := setsFor(q.Queue)
			for j, n := range queueCounts(q) {
				o.ObserveInt64(m.jobsGauge, int64(n), s[j].obs...)
			}
		}
		if !stats.OldestDead.IsZero() {
			o.ObserveFloat64(m.deadOldest, max(now.Sub(stats.OldestDead), 0).Seconds())
		}
		return nil
	}, m.jobsGauge, m.deadOldest)
}
