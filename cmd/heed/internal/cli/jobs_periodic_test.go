package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/heed-go/heed/cmd/heed/internal/storeurl"
	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
)

// heed jobs periodic lists each ticked periodic job with its schedule,
// latest and next tick, as text and JSON.
func TestJobsPeriodic(t *testing.T) {
	path := jobsTestDB(t)
	mustHeed(t, 0, "jobs", "migrate")
	if out := mustHeed(t, 0, "jobs", "periodic"); !strings.Contains(out, "no periodic job has ticked yet") {
		t.Errorf("periodic on an empty database: %q", out)
	}
	d, err := openDB(t.Context(), path, storeurl.Write)
	if err != nil {
		t.Fatal(err)
	}
	hour := time.Now().UTC().Truncate(time.Hour)
	in, err := queue.NewJobInsert("report", nil, queue.EnqueueOptions{Queue: "cron", At: hour}, hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.Jobs().(jobstore.TickInserter).JobInsertTick(t.Context(), in, hour); err != nil {
		t.Fatal(err)
	}
	if err := d.Jobs().(jobstore.ScheduleRecorder).JobScheduleRecord(t.Context(), jobstore.PeriodicSchedule{Kind: "report", Queue: "cron",
		Schedule: "every 1h0m0s", NextTick: hour.Add(time.Hour), SeenAt: hour}); err != nil {
		t.Fatal(err)
	}
	d.Close()
	out := mustHeed(t, 0, "jobs", "periodic")
	for _, want := range []string{"KIND", "report", "cron", "every 1h0m0s", hour.Format(time.RFC3339), hour.Add(time.Hour).Format(time.RFC3339) + " (in ", "heed jobs ls --kind KIND --queue QUEUE"} {
		if !strings.Contains(out, want) {
			t.Errorf("periodic: no %q in\n%s", want, out)
		}
	}
	var list []periodicJSON
	if err := json.Unmarshal([]byte(mustHeed(t, 0, "jobs", "periodic", "--json")), &list); err != nil || len(list) != 1 ||
		list[0].Schedule != "every 1h0m0s" || list[0].NextTick != hour.Add(time.Hour).Format(time.RFC3339) {
		t.Errorf("periodic --json: %+v, %v", list, err)
	}
}
