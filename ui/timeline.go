package ui

import (
	"fmt"
	"time"

	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
	"github.com/heed-go/heed/retry"
)

// The history's words the timeline tells apart: the keys of the retry
// package and the queue's constants, never spelled here.
var (
	actDone   = retry.Done.Key()
	actRetry  = retry.Retry.Key()
	actGiveUp = retry.GiveUp.Key()
	actDefer  = retry.Defer.Key()

	outPushback = retry.OutcomePushback.Key()

	whyTimeBudget = retry.ReasonTimeBudget.Key()
	whyAttempts   = retry.ReasonAttempts.Key()
	whyPermanent  = retry.ReasonPermanent.Key()
)

// axisWidth is the width of a [timeline]'s axis, in the units of its X
// and W fields (an SVG viewBox scales it to the page).
const axisWidth = 1000

// timeline is a job's history laid out on a time axis: one row per entry
// (each attempt with the decision taken after it, and each operator's
// action), so that a reader sees the backoff grow, a server's pushback,
// and where no retry fits in the time budget left. Build one with [newTimeline]; the
// zero value is an empty timeline.
type timeline struct {
	// Start and End bound the axis: from the job's enqueue to the end of
	// its last entry's wait (or the time budget's end, or now for a
	// running job, whichever is last).
	Start, End time.Time
	Rows       []timelineRow
	Ticks      []tick
	// Budget is when the job's time budget ends (zero when unknown), and
	// BudgetX where that is on the axis.
	Budget  time.Time
	BudgetX float64
}

// timelineRow is one entry of a [timeline].
type timelineRow struct {
	queue.Attempt
	// Running marks the row of an attempt still running (no entry yet):
	// Outcome and Action are empty and FinishedAt is now.
	Running  bool
	Duration time.Duration // FinishedAt - StartedAt
	// X and W place the entry on the axis, in [0, axisWidth]; W is at
	// least 2 so that an instant stays visible. WaitW is the width of the
	// wait decided after it (Delay), drawn from X+W.
	X, W, WaitW float64
	// Class is what the row was, for colour: "ok", "retry", "dead",
	// "wait" (snooze, defer, release), "operator" (requeue, cancel, run
	// now), "cut" or "running".
	Class string
	// Note explains the decision in words ("the server asked to wait 2s",
	// "backoff 2.0× the last wait", "no retry fits in the time budget left").
	Note string
}

// tick is a labelled mark on a [timeline]'s axis.
type tick struct {
	X     float64
	Label string // the time since the axis's start, such as "+1.5s"
}

// newTimeline lays out j's history. budget is the time budget that
// applies to j when j.Policy has none (the workers' retry.Policy
// TimeBudget; 0 when unknown): with one, the axis marks where it ends,
// counted from j.StartedAt. now places a running attempt's end. It is pure
// and safe for concurrent use.
func newTimeline(j *queue.Job, budget time.Duration, now time.Time) timeline {
	var tl timeline
	if j == nil {
		return tl
	}
	if j.Policy.TimeBudget > 0 {
		budget = j.Policy.TimeBudget
	}
	rows := make([]timelineRow, 0, len(j.History)+1)
	for _, a := range j.History {
		rows = append(rows, timelineRow{Attempt: a, Duration: a.FinishedAt.Sub(a.StartedAt), Class: rowClass(a)})
	}
	if j.State == queue.StateRunning && !j.AttemptedAt.IsZero() {
		end := now
		if end.Before(j.AttemptedAt) {
			end = j.AttemptedAt
		}
		rows = append(rows, timelineRow{Attempt: queue.Attempt{Attempt: j.Attempt, Worker: j.Worker,
			StartedAt: j.AttemptedAt, FinishedAt: end}, Running: true, Duration: end.Sub(j.AttemptedAt), Class: "running"})
	}
	tl.Start, tl.End = j.CreatedAt, j.CreatedAt
	extend := func(t time.Time) {
		if t.IsZero() {
			return
		}
		if tl.Start.IsZero() || t.Before(tl.Start) {
			tl.Start = t
		}
		if t.After(tl.End) {
			tl.End = t
		}
	}
	for _, r := range rows {
		if r.Outcome == jobstore.OutcomeCut {
			continue // zero times
		}
		extend(r.StartedAt)
		extend(r.FinishedAt.Add(r.Delay))
	}
	if budget > 0 && !j.StartedAt.IsZero() {
		tl.Budget = j.StartedAt.Add(budget)
		// Show the budget's end only when it is near what happened:
		// a budget of days would squash a history of seconds.
		if span := tl.End.Sub(tl.Start); tl.Budget.Sub(tl.Start) <= 2*span || span == 0 {
			extend(tl.Budget)
		}
	}
	span := tl.End.Sub(tl.Start)
	if span <= 0 {
		span = time.Millisecond
		tl.End = tl.Start.Add(span)
	}
	x := func(t time.Time) float64 {
		v := float64(t.Sub(tl.Start)) / float64(span) * axisWidth
		return min(max(v, 0), axisWidth)
	}
	if !tl.Budget.IsZero() && !tl.Budget.After(tl.End) {
		tl.BudgetX = x(tl.Budget)
	}
	var lastWait time.Duration
	for i := range rows {
		r := &rows[i]
		if r.Outcome == jobstore.OutcomeCut {
			r.Note = fmt.Sprintf("%d entries cut here", r.Cut)
			if i > 0 {
				r.X = rows[i-1].X + rows[i-1].W + rows[i-1].WaitW
			}
			r.W = 2
			continue
		}
		r.X = x(r.StartedAt)
		r.W = max(x(r.FinishedAt)-r.X, 2)
		if r.Delay > 0 {
			r.WaitW = x(r.FinishedAt.Add(r.Delay)) - x(r.FinishedAt)
		}
		r.Note = rowNote(r, lastWait)
		if r.Action == actRetry && r.Outcome != outPushback {
			// Backoff compares with backoff, not with a server's wait.
			lastWait = r.Delay
		}
	}
	tl.Rows = rows
	tl.Ticks = ticks(span)
	return tl
}

func rowClass(a queue.Attempt) string {
	switch {
	case a.Outcome == jobstore.OutcomeCut:
		return "cut"
	case a.Attempt == 0 || a.Action == jobstore.ActionRequeue || a.Action == jobstore.ActionCancel || a.Action == jobstore.ActionRunNow:
		return "operator"
	}
	switch a.Action {
	case actDone:
		return "ok"
	case actRetry:
		return "retry"
	case actGiveUp:
		return "dead"
	}
	return "wait"
}

// rowNote explains r's decision; lastWait is the delay of the retry
// before it (0 if none).
func rowNote(r *timelineRow, lastWait time.Duration) string {
	switch {
	case r.Running:
		return "running"
	case r.Action == actGiveUp && r.Reason == whyTimeBudget:
		return "no retry fits in the time budget left"
	case r.Action == actGiveUp && r.Reason == whyAttempts:
		return "no attempts left"
	case r.Action == actGiveUp && r.Reason == whyPermanent:
		return "the error is permanent: retrying cannot help"
	case r.Action == actGiveUp:
		return "gave up: " + words(r.Reason)
	case r.Outcome == outPushback:
		return "the server asked to wait " + brief(r.Delay)
	case r.Action == actRetry && lastWait > 0 && r.Delay > 0 && r.Delay != lastWait:
		return fmt.Sprintf("backoff %.1f× the last wait", float64(r.Delay)/float64(lastWait))
	case r.Action == actRetry:
		return "transient: retry after " + brief(r.Delay)
	case r.Action == actDefer && r.Count > 1:
		return fmt.Sprintf("deferred %d times (%s) over %s: the attempt was given back each time", r.Count, r.Reason, brief(r.Duration))
	case r.Action == actDefer:
		return "deferred (" + words(r.Reason) + "): the attempt was given back"
	case r.Action == jobstore.ActionSnooze:
		return "the handler snoozed for " + brief(r.Delay)
	case r.Action == jobstore.ActionRelease:
		return "handed back at shutdown"
	case r.Action == jobstore.ActionRequeue:
		return "requeued by " + r.Worker
	case r.Action == jobstore.ActionCancel:
		return "cancelled by " + r.Worker
	case r.Action == jobstore.ActionRunNow:
		return "run now by " + r.Worker
	case r.Action == actDone:
		return "succeeded"
	}
	return ""
}

// tickSteps are the spacings ticks may have.
var tickSteps = []time.Duration{
	time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond,
	50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour, 48 * time.Hour,
	7 * 24 * time.Hour, 14 * 24 * time.Hour, 28 * 24 * time.Hour,
}

// ticks returns at most 6 ticks (besides the origin) over span.
func ticks(span time.Duration) []tick {
	step := tickSteps[len(tickSteps)-1]
	for _, s := range tickSteps {
		if span/s <= 6 {
			step = s
			break
		}
	}
	for span/step > 6 {
		step *= 2
	}
	var out []tick
	for t := time.Duration(0); t <= span; t += step {
		out = append(out, tick{X: float64(t) / float64(span) * axisWidth, Label: "+" + brief(t)})
	}
	return out
}

// brief writes d briefly, with at most two units: "0s", "850ms",
// "1.5s", "2m30s", "3h", "2d4h".
func brief(d time.Duration) string {
	if d < 0 {
		return "-" + brief(-d)
	}
	const day = 24 * time.Hour
	switch {
	case d == 0:
		return "0s"
	case d < time.Millisecond:
		return d.String()
	case d < 10*time.Millisecond:
		return oneDecimal(float64(d)/float64(time.Millisecond)) + "ms"
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Round(time.Millisecond)/time.Millisecond)
	case d < 10*time.Second:
		return oneDecimal(d.Seconds()) + "s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", d.Round(time.Second)/time.Second)
	case d < time.Hour:
		return units(d, time.Minute, "m", time.Second, "s")
	case d < day:
		return units(d, time.Hour, "h", time.Minute, "m")
	}
	return units(d, day, "d", time.Hour, "h")
}

func units(d, big time.Duration, bigName string, small time.Duration, smallName string) string {
	d = d.Round(small)
	n, rest := d/big, (d%big)/small
	if rest == 0 {
		return fmt.Sprintf("%d%s", n, bigName)
	}
	return fmt.Sprintf("%d%s%d%s", n, bigName, rest, smallName)
}

// oneDecimal writes v with one decimal, dropping ".0".
func oneDecimal(v float64) string {
	s := fmt.Sprintf("%.1f", v)
	if len(s) > 2 && s[len(s)-2:] == ".0" {
		return s[:len(s)-2]
	}
	return s
}
