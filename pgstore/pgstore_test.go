package pgstore

import (
	"testing"

	"github.com/heed-go/heed/queue/jobstore"
	"github.com/heed-go/heed/queue/storetest"
	"github.com/heed-go/heed/retry/executortest"
	"github.com/heed-go/heed/retry/overtimetest"
)

// TestStore runs queue's conformance suite, each test in a fresh schema.
func TestStore(t *testing.T) {
	testURL(t)
	storetest.Run(t, func(t *testing.T) jobstore.Store {
		_, u := testSchema(t)
		s, err := Open(t.Context(), u)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return s
	})
}

// TestExecutorConformance: the job queue over PostgreSQL takes the same
// decisions as every other executor of a retry.Policy (in real time: the
// cases wait out a breaker's cooldown and a server's pushback of 5 s).
func TestExecutorConformance(t *testing.T) {
	testURL(t)
	executortest.Run(t, storetest.Executor(func(t *testing.T) jobstore.Store {
		_, u := testSchema(t)
		s, err := Open(t.Context(), u)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return s
	}, false))
}

// TestOverTime: the job queue over PostgreSQL keeps the over-time bounds
// of every executor, in a synctest bubble's virtual time, the store
// reached from outside the bubble (storetest.OverTime with remote). Each
// outage takes 8 to 28 s of real time on a busy machine: two of the ten
// offsets run here (all ten passed when this was written, 124 s in all).
func TestOverTime(t *testing.T) {
	testURL(t)
	skip := storetest.OverTimeSlow("slow over PostgreSQL (8 to 28 s of real time each)")
	overtimetest.Run(t, overtimetest.Skip(storetest.OverTime(func(t *testing.T) jobstore.Store {
		_, u := testSchema(t)
		s, err := Open(t.Context(), u)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return s
	}, true), skip))
}
