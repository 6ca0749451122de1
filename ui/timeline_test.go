package ui

import (
	"math"
	"testing"
	"time"

	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
)

func TestDuration(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"}, {500 * time.Microsecond, "500µs"}, {1500 * time.Microsecond, "1.5ms"}, {850 * time.Millisecond, "850ms"},
		{999900 * time.Microsecond, "1000ms"}, {1500 * time.Millisecond, "1.5s"}, {2 * time.Second, "2s"},
		{42 * time.Second, "42s"}, {150 * time.Second, "2m30s"}, {3 * time.Hour, "3h"}, {52 * time.Hour, "2d4h"},
		{-2 * time.Second, "-2s"},
	} {
		if got := brief(tc.d); got != tc.want {
			t.Errorf("brief(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

func TestNewTimeline(t *testing.T) {
	t0 := time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	// Enqueued at 0; attempt 1 at 0-100ms retries in 200ms; attempt 2 at
	// 300-400 retries in 400ms (backoff 2×); attempt 3 at 800-900 pushed
	// back 1s; attempt 4 at 1900-2000 gives up: time budget (2s from the
	// first attempt's start).
	j := &queue.Job{ID: 7, State: queue.StateDead, CreatedAt: t0, StartedAt: t0, Attempt: 4,
		Policy: queue.JobPolicy{TimeBudget: 2 * time.Second}, DeadReason: "time_budget",
		History: []queue.Attempt{
			{Attempt: 1, StartedAt: at(0), FinishedAt: at(100), Outcome: "transient", Action: "retry", Reason: "transient", Delay: 200 * time.Millisecond},
			{Attempt: 2, StartedAt: at(300), FinishedAt: at(400), Outcome: "transient", Action: "retry", Reason: "transient", Delay: 400 * time.Millisecond},
			{Attempt: 3, StartedAt: at(800), FinishedAt: at(900), Outcome: "pushback", Action: "retry", Reason: "pushback", Delay: time.Second},
			{Attempt: 4, StartedAt: at(1900), FinishedAt: at(2000), Outcome: "transient", Action: "give_up", Reason: "time_budget"},
		}}
	tl := newTimeline(j, 0, at(5000))
	if !tl.Start.Equal(t0) || !tl.End.Equal(at(2000)) {
		t.Errorf("axis %v..%v, want %v..%v", tl.Start, tl.End, t0, at(2000))
	}
	if !tl.Budget.Equal(at(2000)) || tl.BudgetX != axisWidth {
		t.Errorf("budget %v at %v, want %v at %d", tl.Budget, tl.BudgetX, at(2000), axisWidth)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	for i, want := range []struct {
		x, w, wait float64
		class      string
		note       string
		dur        time.Duration
	}{
		{0, 50, 100, "retry", "transient: retry after 200ms", 100 * time.Millisecond},
		{150, 50, 200, "retry", "backoff 2.0× the last wait", 100 * time.Millisecond},
		{400, 50, 500, "retry", "the server asked to wait 1s", 100 * time.Millisecond},
		{950, 50, 0, "dead", "no retry fits in the time budget left", 100 * time.Millisecond},
	} {
		r := tl.Rows[i]
		if !near(r.X, want.x) || !near(r.W, want.w) || !near(r.WaitW, want.wait) || r.Class != want.class || r.Note != want.note || r.Duration != want.dur {
			t.Errorf("row %d = x %v w %v wait %v %q %q %v, want %+v", i, r.X, r.W, r.WaitW, r.Class, r.Note, r.Duration, want)
		}
	}
	if len(tl.Ticks) < 2 || tl.Ticks[0].Label != "+0s" || tl.Ticks[1].Label != "+500ms" || !near(tl.Ticks[1].X, 250) {
		t.Errorf("ticks %+v, want +0s, +500ms at 250, ...", tl.Ticks)
	}

	// A running job after a requeue: the operator's row, the running
	// attempt up to now, and the workers' budget (far off: not drawn).
	r := &queue.Job{ID: 8, State: queue.StateRunning, CreatedAt: t0, StartedAt: at(3000), AttemptedAt: at(3000), Attempt: 1, Worker: "w2",
		History: []queue.Attempt{
			{Attempt: 1, StartedAt: at(0), FinishedAt: at(1000), Outcome: "permanent", Action: "give_up", Reason: "permanent"},
			{Attempt: 0, Worker: "alice", StartedAt: at(2000), FinishedAt: at(2000), Outcome: jobstore.OutcomeRequeued, Action: "requeue"},
		}}
	tl = newTimeline(r, time.Hour, at(4000))
	if len(tl.Rows) != 3 || tl.Rows[1].Class != "operator" || tl.Rows[1].Note != "requeued by alice" ||
		!tl.Rows[2].Running || tl.Rows[2].Class != "running" || tl.Rows[2].Duration != time.Second || !near(tl.Rows[2].X, 750) {
		t.Errorf("running timeline rows %+v", tl.Rows)
	}
	if !tl.Budget.Equal(at(3000).Add(time.Hour)) || tl.BudgetX != 0 || !tl.End.Equal(at(4000)) {
		t.Errorf("running timeline: budget %v at %v, end %v; want the budget off the axis, end at now", tl.Budget, tl.BudgetX, tl.End)
	}
	if tl.Rows[0].W != 250 || tl.Rows[1].W != 2 {
		t.Errorf("widths %v %v, want 250 and the minimum 2", tl.Rows[0].W, tl.Rows[1].W)
	}

	// A fresh job: one instant, no rows, no division by zero.
	tl = newTimeline(&queue.Job{State: queue.StateAvailable, CreatedAt: t0}, 0, t0)
	if len(tl.Rows) != 0 || !tl.End.After(tl.Start) || len(tl.Ticks) == 0 {
		t.Errorf("empty timeline %+v", tl)
	}
	if tl := newTimeline(nil, 0, t0); len(tl.Rows) != 0 {
		t.Errorf("nil job: %+v", tl)
	}
}

// TestOperatorRows: the entries operators add are told apart by the
// queue's Action constants (a run-now entry was once missed because the
// timeline spelled its action "run now").
func TestOperatorRows(t *testing.T) {
	for _, tc := range []struct {
		action, class, note string
	}{
		{jobstore.ActionRequeue, "operator", "requeued by op"},
		{jobstore.ActionCancel, "operator", "cancelled by op"},
		{jobstore.ActionRunNow, "operator", "run now by op"},
	} {
		a := queue.Attempt{Attempt: 2, Worker: "op", Action: tc.action}
		if got := rowClass(a); got != tc.class {
			t.Errorf("rowClass(%s) = %q, want %q", tc.action, got, tc.class)
		}
		r := timelineRow{Attempt: a}
		if got := rowNote(&r, 0); got != tc.note {
			t.Errorf("rowNote(%s) = %q, want %q", tc.action, got, tc.note)
		}
	}
}

// A run of deferrals is one row, whose note counts them.
func TestDeferralRunRow(t *testing.T) {
	t0 := time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC)
	j := &queue.Job{ID: 8, State: queue.StateAvailable, CreatedAt: t0, Attempt: 0, History: []queue.Attempt{
		{Attempt: 1, StartedAt: t0, FinishedAt: t0.Add(12 * time.Second), Outcome: jobstore.OutcomeDeferred, Action: "defer",
			Reason: "breaker_open", Delay: 4 * time.Second, Count: 5},
	}}
	tl := newTimeline(j, 0, t0.Add(time.Minute))
	if len(tl.Rows) != 1 || tl.Rows[0].Class != "wait" ||
		tl.Rows[0].Note != "deferred 5 times (breaker_open) over 12s: the attempt was given back each time" {
		t.Errorf("rows %+v", tl.Rows)
	}
}
