package sqlitestore_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/heed-go/heed/clock/clocktest"
	"github.com/heed-go/heed/queue/jobstore"
	"github.com/heed-go/heed/queue/storetest"
	"github.com/heed-go/heed/sqlitestore"
)

// TestPeriodicThreeStores: three workers, each with a store of its own on
// one file, as three processes would be, race for every tick of a
// periodic job over 20 periods: exactly 20 jobs run.
func TestPeriodicThreeStores(t *testing.T) {
	path := filepath.Join(t.TempDir(), "heed.db")
	stores := make([]jobstore.Store, 3)
	for i := range stores {
		s, err := sqlitestore.Open(context.Background(), path)
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
	s := open(t)
	defer s.Close()
	storetest.RunPeriodicAfterRetention(t, clocktest.New(time.Time{}), s)
}

// TestDrain: a drain with the zero options waits for a retry due within
// a minute and not for a job its handler declines, over a fake clock.
func TestDrain(t *testing.T) {
	s := open(t)
	defer s.Close()
	storetest.RunDrain(t, clocktest.New(time.Time{}), s)
}

// TestBudgetBacklog: 500 jobs under a default retry budget drain within
// 15 s of their dependency's recovery after a 15 s outage.
func TestBudgetBacklog(t *testing.T) {
	s := open(t)
	defer s.Close()
	storetest.RunBudgetBacklog(t, s)
}
