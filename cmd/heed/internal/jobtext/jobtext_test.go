package jobtext

import (
	"strings"
	"testing"
	"time"

	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
)

// heed jobs show prints a run of deferrals as one row with its count.
func TestWriteDeferralRun(t *testing.T) {
	t0 := time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC)
	j := &queue.Job{ID: 8, Kind: "k", Queue: "default", State: queue.StateAvailable, CreatedAt: t0, AvailableAt: t0.Add(time.Minute),
		History: []queue.Attempt{{Attempt: 1, Worker: "w1", StartedAt: t0, FinishedAt: t0.Add(12 * time.Second), Outcome: jobstore.OutcomeDeferred,
			Error: "breaker: circuit open", Action: "defer", Reason: "breaker_open", Delay: 4 * time.Second, Count: 5}}}
	var b strings.Builder
	Write(&b, j, t0.Add(time.Minute))
	if !strings.Contains(b.String(), "deferred 5 times  defer (breaker_open)") {
		t.Errorf("heed jobs show:\n%s\nwant the run's row with its count", b.String())
	}
}
