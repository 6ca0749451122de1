package queue_test

import (
	encjson "encoding/json"
	"testing"
	"time"

	"github.com/heed-go/heed/breaker"
	"github.com/heed-go/heed/overload"
	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
	"github.com/heed-go/heed/retry"
)

// TestStoredWords pins the text of every word a job's history, a dead
// reason, a log line or a metric attribute may hold. These words are
// stored: changing one is a store migration (see migrations 5 and 8), never
// an edit here alone.
func TestStoredWords(t *testing.T) {
	pins := map[string]string{
		// retry.Outcome.Key: an attempt's outcome.
		retry.OutcomeSuccess.Key():   "success",
		retry.OutcomeTransient.Key(): "transient",
		retry.OutcomeTimeout.Key():   "timeout",
		retry.OutcomePushback.Key():  "pushback",
		retry.OutcomePermanent.Key(): "permanent",
		retry.OutcomeRefused.Key():   "refused",
		// The queue's own outcomes.
		jobstore.OutcomeLost:      "lost",
		jobstore.OutcomeSnoozed:   "snoozed",
		jobstore.OutcomeReleased:  "released",
		jobstore.OutcomeRequeued:  "requeued",
		jobstore.OutcomeExpired:   "expired",
		jobstore.OutcomeDeferred:  "deferred",
		jobstore.OutcomeCut:       "cut",
		jobstore.OutcomeCancelled: "cancelled",
		jobstore.OutcomeRunNow:    "run_now",
	}
	for got, want := range pins {
		if got != want {
			t.Errorf("outcome %q, pinned %q", got, want)
		}
	}
	for _, c := range []struct{ got, want string }{
		// retry.Action.Key and the queue's own actions.
		{retry.Done.Key(), "done"}, {retry.Retry.Key(), "retry"}, {retry.GiveUp.Key(), "give_up"}, {retry.Defer.Key(), "defer"},
		{jobstore.ActionSnooze, "snooze"}, {jobstore.ActionRelease, "release"}, {jobstore.ActionRequeue, "requeue"},
		{jobstore.ActionCut, "cut"}, {jobstore.ActionCancel, "cancel"}, {jobstore.ActionRunNow, "run_now"},
		// retry.Reason.Key: decisions' reasons and dead reasons.
		{retry.ReasonSuccess.Key(), "success"}, {retry.ReasonTransient.Key(), "transient"},
		{retry.ReasonTimeout.Key(), "timeout"}, {retry.ReasonPushback.Key(), "pushback"},
		{retry.ReasonPermanent.Key(), "permanent"}, {retry.ReasonAttempts.Key(), "attempts"},
		{retry.ReasonTimeBudget.Key(), "time_budget"}, {retry.ReasonDeadline.Key(), "deadline"},
		{retry.ReasonBudget.Key(), "budget"}, {retry.ReasonBreakerOpen.Key(), "breaker_open"},
		{retry.ReasonNotRepeatable.Key(), "not_repeatable"}, {retry.ReasonServerRefused.Key(), "server_refused"},
		{retry.ReasonUpstreamOwns.Key(), "upstream_owns"}, {retry.ReasonPushbackTooLong.Key(), "pushback_too_long"},
		{jobstore.ReasonUnknownKind, "unknown_kind"},
		// States, and the breaker's states as metric values.
		{string(queue.StateAvailable), "available"}, {string(queue.StateRunning), "running"},
		{string(queue.StateSucceeded), "succeeded"}, {string(queue.StateDead), "dead"},
		{string(queue.StateCancelled), "cancelled"},
		{breaker.Closed.Key(), "closed"}, {breaker.Open.Key(), "open"}, {breaker.HalfOpen.Key(), "half_open"},
		// overload.Reason.Key: a server's refusals, as metric values.
		{overload.ReasonQueueFull.Key(), "queue_full"}, {overload.ReasonQueueTime.Key(), "queue_time"},
		{overload.ReasonDeadline.Key(), "deadline"}, {overload.ReasonRetry.Key(), "retry"},
		{overload.ReasonGone.Key(), "caller_gone"},
	} {
		if c.got != c.want {
			t.Errorf("word %q, pinned %q", c.got, c.want)
		}
	}
}

// TestEventWords: an event that is also a history entry, or that ends in a
// state, is named with that entry's outcome or that state: one word per
// happening.
func TestEventWords(t *testing.T) {
	for k, want := range map[queue.EventKind]string{
		queue.EventEnqueued: "enqueued", queue.EventStarted: "started", queue.EventRetried: "retried",
		queue.EventSucceeded: string(queue.StateSucceeded), queue.EventDead: string(queue.StateDead),
		queue.EventSnoozed: jobstore.OutcomeSnoozed, queue.EventReleased: jobstore.OutcomeReleased,
		queue.EventLost: jobstore.OutcomeLost, queue.EventDeferred: jobstore.OutcomeDeferred,
		queue.EventCancelled: jobstore.OutcomeCancelled, queue.EventLeaseLost: "lease_lost",
	} {
		if got := k.String(); got != want {
			t.Errorf("EventKind(%d).String() = %q, want %q", k, got, want)
		}
	}
}

// TestStoredEntryKeys pins the JSON keys of a history entry as stores keep
// it, the run of deferrals' "count" (migration 10) among them.
func TestStoredEntryKeys(t *testing.T) {
	at := time.Date(2026, 5, 4, 3, 2, 1, 0, time.UTC)
	b, err := encjson.Marshal(queue.Attempt{Attempt: 2, Worker: "w", StartedAt: at, FinishedAt: at, Outcome: jobstore.OutcomeDeferred,
		Error: "e", Panic: "p", Action: retry.Defer.Key(), Reason: retry.ReasonBreakerOpen.Key(), Delay: time.Second, Cut: 1, Count: 3})
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"attempt":2,"worker":"w","started_at":"2026-05-04T03:02:01Z","finished_at":"2026-05-04T03:02:01Z",` +
		`"outcome":"deferred","error":"e","panic":"p","action":"defer","reason":"breaker_open","cut":1,"count":3,"delay":"1s"}`
	if string(b) != want {
		t.Errorf("stored entry\n%s\nwant\n%s", b, want)
	}
}
