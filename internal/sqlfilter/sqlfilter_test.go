package sqlfilter

import (
	"reflect"
	"testing"
	"time"

	"github.com/heed-go/heed/queue/jobstore"
)

func TestWhere(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	pg := Dialect{Placeholder: Dollar, Time: func(t time.Time) any { return t },
		IDs: func(ph string, ids []int64) (string, any) { return "id = ANY(" + ph + ")", ids }}
	lite := Dialect{Placeholder: Question, Time: func(t time.Time) any { return t.UnixMicro() },
		IDs: func(ph string, ids []int64) (string, any) { return "id IN (" + ph + ")", "[1,2]" }}
	for _, tc := range []struct {
		name     string
		d        Dialect
		f        jobstore.JobFilter
		dead     bool
		want     string
		wantArgs []any
	}{
		{"all", pg, jobstore.JobFilter{}, false, "1 = 1", nil},
		{"no IDs", lite, jobstore.JobFilter{IDs: []int64{}}, false, "1 = 1 AND 1 = 0", nil},
		{"dead wins over State", pg, jobstore.JobFilter{State: jobstore.StateRunning, Kind: "k"}, true,
			"1 = 1 AND state = 'dead' AND kind = $1", []any{"k"}},
		{"every field, pg", pg, jobstore.JobFilter{State: jobstore.StateAvailable, IDs: []int64{1, 2}, Kind: "k", Queue: "q", DeadReason: "r",
			FinishedBefore: t0, AfterID: 3, BeforeID: 9, AvailableAfter: t0, AvailableBy: t0, Retried: true}, false,
			"1 = 1 AND state = 'available' AND id = ANY($1) AND kind = $2 AND queue = $3 AND dead_reason = $4 AND finished_at < $5 AND id > $6 AND id < $7 AND available_at > $8 AND available_at <= $9 AND attempt > 0",
			[]any{[]int64{1, 2}, "k", "q", "r", t0, int64(3), int64(9), t0, t0}},
		{"a state that is not one stays a parameter", lite, jobstore.JobFilter{State: "x'"}, false,
			"1 = 1 AND state = ?", []any{"x'"}},
		{"times and IDs, sqlite", lite, jobstore.JobFilter{IDs: []int64{1, 2}, FinishedBefore: t0}, false,
			"1 = 1 AND id IN (?) AND finished_at < ?", []any{"[1,2]", t0.UnixMicro()}},
	} {
		var args []any
		if got := Where(tc.d, &tc.f, tc.dead, &args); got != tc.want || !reflect.DeepEqual(args, tc.wantArgs) {
			t.Errorf("%s: Where =\n %s %v\nwant\n %s %v", tc.name, got, args, tc.want, tc.wantArgs)
		}
	}
	if Limit(&jobstore.JobFilter{Limit: 5}) != " LIMIT 5" || Limit(&jobstore.JobFilter{}) != "" {
		t.Error("Limit")
	}
	if Order(&jobstore.JobFilter{}) != " ORDER BY id" || Order(&jobstore.JobFilter{Newest: true}) != " ORDER BY id DESC" {
		t.Error("Order")
	}
}
