package pgstore

import (
	"testing"
	"time"

	"github.com/heed-go/heed/clock/clocktest"
	"github.com/heed-go/heed/queue/jobstore"
	"github.com/heed-go/heed/queue/storetest"
)

// TestPeriodicThreeStores: three workers, each with a store (a pool and a
// listener) of its own on one schema, as three processes would be, race
// for every tick of a periodic job over 20 periods: exactly 20 jobs run.
func TestPeriodicThreeStores(t *testing.T) {
	_, u := testSchema(t)
	stores := make([]jobstore.Store, 3)
	for i := range stores {
		s, err := Open(t.Context(), u)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		stores[i] = s
	}
	storetest.RunPeriodic(t, clocktest.New(time.Time{}), stores)
}

// TestPeriodicAfterRetention: a worker restarted within the period of a
// tick whose job retention deleted does not run that tick again.
func TestPeriodicAfterRetention(t *testing.T) {
	_, u := testSchema(t)
	s, err := Open(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	storetest.RunPeriodicAfterRetention(t, clocktest.New(time.Time{}), s)
}

// TestDrain: a drain with the zero options waits for a retry due within
// a minute and not for a job its handler declines, over a fake clock.
func TestDrain(t *testing.T) {
	_, u := testSchema(t)
	s, err := Open(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	storetest.RunDrain(t, clocktest.New(time.Time{}), s)
}

// TestBudgetBacklog: 500 jobs under a default retry budget drain within
// 15 s of their dependency's recovery after a 15 s outage.
func TestBudgetBacklog(t *testing.T) {
	storetest.RunBudgetBacklog(t, openTest(t))
}
