package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
)

// notifyWait bounds how long a notification may take (a LISTEN/NOTIFY
// round trip on a busy machine); the test waits for the notification
// itself, and fails only when it never comes.
const notifyWait = 30 * time.Second

// testNotify checks a store that is a jobstore.Notifier: inserts, retries
// due at the transition's Now and requeues notify the job's queue, and
// the channel closes when the context ends. A store that is not a
// Notifier skips it.
func testNotify(t *testing.T, s jobstore.Store) {
	n, ok := s.(jobstore.Notifier)
	if !ok {
		t.Skip("the store is not a jobstore.Notifier")
	}
	nctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch, err := n.JobNotify(nctx)
	if err != nil {
		t.Fatal(err)
	}
	expect := func(what, q string) {
		t.Helper()
		timeout := time.After(notifyWait)
		for {
			select {
			case got, ok := <-ch:
				if !ok {
					t.Fatalf("%s: the channel closed", what)
				}
				if got == q {
					return
				}
				// Another queue's notification (coalesced or late): go on.
			case <-timeout:
				t.Fatalf("%s: no notification for queue %q in %v", what, q, notifyWait)
			}
		}
	}

	insert(t, s, "k", queue.EnqueueOptions{Queue: "n1"})
	expect("insert", "n1")

	c := claimOne(t, s, "n1", t0)
	if err := s.JobTransition(ctx, jobstore.Transition{ID: c.ID, LeaseToken: c.LeaseToken, State: jobstore.StateAvailable,
		Attempt: c.Attempt, AvailableAt: t0, Now: t0, Entry: entry(1, "transient", "retry", "transient", t0)}); err != nil {
		t.Fatal(err)
	}
	if !(&jobstore.Transition{State: jobstore.StateAvailable, AvailableAt: t0, Now: t0}).Wakes() {
		t.Fatal("a transition due at its Now does not wake")
	}
	expect("retry due now", "n1")

	kill(t, s, "k", "n2", "permanent", t0, "")
	if n, err := s.DeadRequeue(ctx, jobstore.OpParams{Filter: jobstore.JobFilter{Queue: "n2"}, Now: t0,
		Entry: jobstore.Attempt{Outcome: jobstore.OutcomeRequeued, Action: jobstore.ActionRequeue}}); err != nil || n != 1 {
		t.Fatalf("DeadRequeue = %d, %v", n, err)
	}
	expect("requeue", "n2")

	cancel()
	timeout := time.After(notifyWait)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-timeout:
			t.Fatalf("the channel did not close in %v after its context ended", notifyWait)
		}
	}
}
