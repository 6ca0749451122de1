package queue

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/heed-go/heed/queue/jobstore"
)

func TestSchedules(t *testing.T) {
	at := func(s string) time.Time {
		tm, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	mustCron := func(e string) Schedule {
		s, err := Cron(e)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, tc := range []struct {
		name         string
		s            Schedule
		now          string
		latest, next string
	}{
		{"hourly", Every(time.Hour), "2026-03-04T05:06:07Z", "2026-03-04T05:00:00Z", "2026-03-04T06:00:00Z"},
		{"on a tick", Every(time.Hour), "2026-03-04T05:00:00Z", "2026-03-04T05:00:00Z", "2026-03-04T06:00:00Z"},
		{"daily", Every(24 * time.Hour), "2026-03-04T05:06:07+02:00", "2026-03-04T00:00:00Z", "2026-03-05T00:00:00Z"},
		{"cron weekdays 9:00", mustCron("0 9 * * 1-5"), "2026-03-08T12:00:00Z", "2026-03-06T09:00:00Z", "2026-03-09T09:00:00Z"}, // Sunday
		{"cron monthly", mustCron("@monthly"), "2026-03-04T05:06:07Z", "2026-03-01T00:00:00Z", "2026-04-01T00:00:00Z"},
		{"cron yearly", mustCron("@yearly"), "2026-03-04T05:06:07Z", "2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z"},
		{"cron zone", mustCron("CRON_TZ=Europe/Paris 0 9 * * *"), "2026-03-04T12:00:00Z", "2026-03-04T08:00:00Z", "2026-03-05T08:00:00Z"},
		{"cron every minute", mustCron("* * * * *"), "2026-03-04T05:06:07Z", "2026-03-04T05:06:00Z", "2026-03-04T05:07:00Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := at(tc.now)
			if got := latestTick(tc.s, now); !got.Equal(at(tc.latest)) {
				t.Errorf("latest tick at %s = %v, want %s", tc.now, got, tc.latest)
			}
			if got := tc.s.Next(now); !got.Equal(at(tc.next)) {
				t.Errorf("Next(%s) = %v, want %s", tc.now, got, tc.next)
			}
		})
	}
	for _, bad := range []string{"", "61 * * * *", "* * *", "@every 1h", "@sometimes", "CRON_TZ=Nowhere/City * * * * *"} {
		if _, err := Cron(bad); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "cron expression") {
			t.Errorf("Cron(%q): %v, want ErrInvalid naming the cron expression", bad, err)
		}
	}
}

func TestPeriodicInvalid(t *testing.T) {
	w, err := NewWorker(nopStore{}, WorkerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	ok := PeriodicJob{Kind: "report", Schedule: Every(time.Hour)}
	for name, p := range map[string]PeriodicJob{
		"no schedule": {Kind: "report"},
		"no kind":     {Schedule: Every(time.Hour)},
		"at":          {Kind: "report", Schedule: Every(time.Hour), Options: EnqueueOptions{In: time.Second}},
		"key":         {Kind: "report", Schedule: Every(time.Hour), Options: EnqueueOptions{UniqueKey: "k"}},
		"args":        {Kind: "report", Schedule: Every(time.Hour), Args: make(chan int)},
	} {
		if err := w.Periodic(p); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	if err := w.Periodic(ok); err != nil {
		t.Fatal(err)
	}
	if err := w.Periodic(ok); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "registered twice") {
		t.Errorf("twice: %v", err)
	}
	other := ok
	other.Options.Queue = "other"
	if err := w.Periodic(other); err != nil {
		t.Errorf("same kind, other queue: %v", err)
	}
}

// nopStore is a Store for tests that never reach it.
type nopStore struct{ jobstore.Store }

// Registering a handler wrongly panics at once, saying what was wrong,
// rather than when a job of the kind first runs.
func TestHandleMisuse(t *testing.T) {
	w, err := NewWorker(nopStore{}, WorkerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	panics := func(name, want string, f func()) {
		t.Helper()
		defer func() {
			if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), want) {
				t.Errorf("%s: panic %v, want one saying %q", name, r, want)
			}
		}()
		f()
	}
	panics("nil function", "kind email with a nil function", func() { Handle[struct{}](w, "email", nil) })
	panics("nil store", "NewClient with a nil store", func() { NewClient(nil, ClientConfig{}) })
	panics("empty kind", "empty kind", func() {
		Handle(w, "", func(context.Context, *Job, struct{}) error { return nil })
	})
}
