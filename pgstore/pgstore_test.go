package pgstore

import (
	"testing"

	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/storetest"
	"github.com/heed-go/heed/retry/executortest"
)

// TestStore runs queue's conformance suite, each test in a fresh schema.
func TestStore(t *testing.T) {
	testURL(t)
	storetest.Run(t, func(t *testing.T) queue.Store {
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
	executortest.Run(t, storetest.Executor(func(t *testing.T) queue.Store {
		_, u := testSchema(t)
		s, err := Open(t.Context(), u)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return s
	}, false))
}
