package queue

import (
	"context"
	"log/slog"
	"time"

	"github.com/heed-go/heed/queue/jobstore"
	"github.com/heed-go/heed/retry"
)

// EventKind says what happened to a job.
type EventKind uint8

// The kinds of [Event].
const (
	EventEnqueued  EventKind = iota // a Client inserted the job
	EventStarted                    // a worker started an attempt
	EventSucceeded                  // the attempt succeeded
	EventRetried                    // the attempt failed; the job runs again at Decision.At
	EventSnoozed                    // the handler snoozed; the job runs again at Decision.At
	EventDead                       // the job gave up: it is in the dead-letter (Decision.Reason)
	EventReleased                   // shutdown handed the job back, its attempt not counted
	EventLost                       // the rescuer found the job's lease expired (then EventRetried or EventDead)
	EventLeaseLost                  // this worker lost the job's lease while running it; its result was dropped
	EventDeferred                   // the breaker or the retry budget refused the attempt; the job runs at Decision.At, its attempt not counted
	EventCancelled                  // an operator cancelled the job while this worker ran it; its result was dropped
)

// eventNames spell an event that is also a history entry with that entry's
// Outcome word, and one that ends in a state with the state's.
var eventNames = [...]string{
	EventEnqueued:  "enqueued",
	EventStarted:   "started",
	EventSucceeded: string(StateSucceeded),
	EventRetried:   "retried",
	EventSnoozed:   jobstore.OutcomeSnoozed,
	EventDead:      string(StateDead),
	EventReleased:  jobstore.OutcomeReleased,
	EventLost:      jobstore.OutcomeLost,
	EventLeaseLost: "lease_lost",
	EventDeferred:  jobstore.OutcomeDeferred,
	EventCancelled: jobstore.OutcomeCancelled,
}

// String returns the event's name, such as "retried".
func (k EventKind) String() string {
	if int(k) < len(eventNames) {
		return eventNames[k]
	}
	return "unknown"
}

// Event is what an observer sees (ClientConfig.Observe, WorkerConfig.Observe).
//
// Events are reported after the store has recorded what they describe, from
// the goroutine that did it, so the events of one job can arrive out of
// order when its next attempt starts at once (a retry's "retried" after
// that retry's "started"): order them by Job.Attempt when it matters.
type Event struct {
	Kind EventKind // what happened
	// Job is the job as it was when the event happened (before the
	// transition the event describes). Observers must not modify it.
	Job *Job
	// Decision is the retry decision for EventSucceeded, EventRetried and
	// EventDead. For EventSnoozed it carries the snooze (Action Retry, At
	// and Delay; no Reason: a snooze is the handler's choice, not a retry).
	Decision retry.Decision
	// Duration is how long the attempt ran (events after an attempt).
	Duration time.Duration
	// Err is the attempt's error, or the store's error for EventLeaseLost.
	Err error
}

// LogObserver returns an observer that writes one record per event to l:
// retries and releases at Info, dead jobs and lost leases at Warn, the rest
// at Debug, with the attributes job_id, kind, queue, attempt, event and,
// when they apply, decision, reason, delay, duration and error (redacted
// and cut at MaxErrorText, as a history entry keeps it).
func LogObserver(l *slog.Logger) func(context.Context, Event) {
	return func(ctx context.Context, e Event) {
		level := slog.LevelDebug
		switch e.Kind {
		case EventRetried, EventReleased, EventLost, EventDeferred, EventCancelled:
			level = slog.LevelInfo
		case EventDead, EventLeaseLost:
			level = slog.LevelWarn
		}
		if !l.Enabled(ctx, level) {
			return
		}
		attrs := []slog.Attr{
			slog.Int64("job_id", e.Job.ID),
			slog.String("kind", e.Job.Kind),
			slog.String("queue", e.Job.Queue),
			slog.Int("attempt", e.Job.Attempt),
			slog.String("event", e.Kind.String()),
		}
		switch e.Kind {
		case EventSucceeded, EventRetried, EventDead, EventDeferred:
			attrs = append(attrs,
				slog.String("decision", e.Decision.Action.String()),
				slog.String("reason", e.Decision.Reason.Key()),
				slog.Duration("delay", e.Decision.Delay),
				slog.Duration("duration", e.Duration))
		case EventSnoozed: // not a retry decision: no reason
			attrs = append(attrs, slog.Duration("delay", e.Decision.Delay), slog.Duration("duration", e.Duration))
		}
		if e.Err != nil {
			attrs = append(attrs, slog.String("error", errorText(e.Err)))
		}
		l.LogAttrs(ctx, level, "job "+e.Kind.String(), attrs...)
	}
}
