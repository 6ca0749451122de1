package ui_test

import (
	"strings"
	"testing"
	"time"

	"github.com/heed-go/heed/clock/clocktest"
	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
	"github.com/heed-go/heed/ui"
)

// TestPeriodic: the periodic jobs' page shows each ticked periodic job's
// schedule, latest and next tick (overdue when past), and links to its
// jobs; one ticked by an older worker shows its tick only.
func TestPeriodic(t *testing.T) {
	stores(t, func(t *testing.T, s jobstore.Store) {
		ctx := t.Context()
		now := time.Now().UTC()
		tick := func(kind string, at time.Time, schedule string, next time.Time) {
			t.Helper()
			in, err := queue.NewJobInsert(kind, nil, queue.EnqueueOptions{Queue: "cron", At: at}, at)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.(jobstore.TickInserter).JobInsertTick(ctx, in, at); err != nil {
				t.Fatal(err)
			}
			if schedule != "" {
				if err := s.(jobstore.ScheduleRecorder).JobScheduleRecord(ctx, jobstore.PeriodicSchedule{Kind: kind, Queue: "cron",
					Schedule: schedule, NextTick: next, SeenAt: at.Add(time.Second)}); err != nil {
					t.Fatal(err)
				}
			}
		}
		hour := now.Truncate(time.Hour)
		tick("report", hour, "every 1h0m0s", hour.Add(time.Hour))
		tick("digest", hour.Add(-3*time.Hour), "cron 0 */2 * * *", hour.Add(-time.Hour))
		tick("legacy", hour, "", time.Time{})
		// The page's clock stands 100 ms before report's next tick, the
		// worst case for it: not yet overdue; then just past it.
		clk := clocktest.New(hour.Add(time.Hour - 100*time.Millisecond))
		e := newEnv(t, s, ui.Config{Token: token, Clock: clk}, 0)
		code, body, hdr := e.get(t, "/periodic")
		if code != 200 {
			t.Fatalf("GET /periodic: %d\n%s", code, body)
		}
		checkPage(t, "GET /periodic", body, hdr)
		for _, want := range []string{`<code>every 1h0m0s</code>`, `<code>cron 0 */2 * * *</code>`, "overdue",
			"not recorded (ticked by an older worker)", `href="/jobs?kind=report&amp;queue=cron"`, `aria-current="page">Periodic`, `data-live=`} {
			if !strings.Contains(body, want) {
				t.Errorf("GET /periodic: no %q in\n%s", want, body)
			}
		}
		if strings.Count(body, "overdue") != 1 || !strings.Contains(body, ">in 100ms</td>") {
			t.Errorf("GET /periodic: %d overdue, want 1 (digest), and report's next tick in 100ms\n%s", strings.Count(body, "overdue"), body)
		}
		clk.Advance(200 * time.Millisecond)
		if _, body, _ := e.get(t, "/periodic"); strings.Count(body, "overdue") != 2 {
			t.Errorf("GET /periodic 100 ms after report's next tick: %d overdue, want 2 (digest, report)\n%s", strings.Count(body, "overdue"), body)
		}
	})
}
