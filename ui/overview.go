package ui

import (
	"context"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
)

// chartMinutes is how many minutes the overview's charts cover.
const chartMinutes = 60

// overview is what the overview page shows, counted at At.
type overview struct {
	At     time.Time
	Took   time.Duration // how long the count took
	Queues []queueRow
	Dead   int
	// OldestDead is when the oldest dead job died (zero: none).
	OldestDead time.Time
	Totals     jobstore.QueueStats // all queues together
}

// queueRow is one queue of the overview.
type queueRow struct {
	jobstore.QueueStats
	Lag      time.Duration // age of the oldest due job (0: none due)
	Paused   bool
	PausedAt time.Time
	Chart    chart
}

type seriesKey struct {
	queue  string
	minute time.Time
	action string
}

// chart is the last hour of one queue, per minute, as stacked SVG bars
// (succeeded at the bottom, then retried, then dead) in a viewBox of
// chartW × chartH.
type chart struct {
	Bars                       []bar
	DoneN, RetryN, DeadN, Peak int // totals over the hour, and the busiest minute's
	// SVG is the chart's markup, drawn once per count rather than per
	// request: numbers and fixed class names only.
	SVG template.HTML
}

// bar is one rectangle of a chart.
type bar struct {
	X, Y, H float64
	Class   string // "s-ok", "s-retry" or "s-dead"
}

const (
	chartBar = 3 // width of a minute
	chartW   = chartBar * chartMinutes
	chartH   = 36
)

// newChart draws three series of chartMinutes counts each, scaled to the
// busiest minute.
func newChart(done, retry, dead []int) chart {
	var c chart
	for i := range done {
		c.Peak = max(c.Peak, done[i]+retry[i]+dead[i])
		c.DoneN += done[i]
		c.RetryN += retry[i]
		c.DeadN += dead[i]
	}
	if c.Peak == 0 {
		c.SVG = c.svg()
		return c
	}
	scale := float64(chartH-1) / float64(c.Peak)
	for i := range done {
		y := float64(chartH)
		for _, part := range []struct {
			n     int
			class string
		}{{done[i], "s-ok"}, {retry[i], "s-retry"}, {dead[i], "s-dead"}} {
			if part.n == 0 {
				continue
			}
			h := float64(part.n) * scale
			y -= h
			c.Bars = append(c.Bars, bar{X: float64(i * chartBar), Y: y, H: h, Class: part.class})
		}
	}
	c.SVG = c.svg()
	return c
}

// svg draws c.
func (c *chart) svg() template.HTML {
	var b strings.Builder
	num := func(v float64) { b.WriteString(strconv.FormatFloat(v, 'f', 1, 64)) }
	fmt.Fprintf(&b, `<svg viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="per minute over the last hour: %d succeeded, %d retried, %d dead">`,
		chartW, chartH, chartW, chartH, c.DoneN, c.RetryN, c.DeadN)
	fmt.Fprintf(&b, `<title>last hour: %d succeeded, %d retried, %d dead (busiest minute %d)</title>`, c.DoneN, c.RetryN, c.DeadN, c.Peak)
	fmt.Fprintf(&b, `<line class="base" x1="0" x2="%d" y1="%d" y2="%d"/>`, chartW, chartH, chartH)
	for _, r := range c.Bars {
		b.WriteString(`<rect class="`)
		b.WriteString(r.Class) // a constant
		b.WriteString(`" x="`)
		num(r.X)
		b.WriteString(`" y="`)
		num(r.Y)
		b.WriteString(`" width="2.4" height="`)
		num(r.H)
		b.WriteString(`"/>`)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) // #nosec: only numbers and constants
}

// countNow counts the overview from the store.
func (c *counter) countNow(ctx context.Context) (*overview, error) {
	h := c.h
	start := time.Now()
	now := h.now()
	// The four questions are independent: ask them at once, so that the
	// count takes as long as the slowest, not their sum.
	var (
		st     queue.Stats
		lags   map[string]time.Time
		paused map[string]time.Time
		series map[seriesKey]int
		errs   [4]error
		wg     sync.WaitGroup
	)
	first := now.Truncate(time.Minute).Add(-(chartMinutes - 1) * time.Minute)
	wg.Add(4)
	go func() { defer wg.Done(); st, errs[0] = h.client.Stats(ctx) }()
	go func() { defer wg.Done(); lags, errs[1] = h.inspect.QueueLags(ctx, now) }()
	go func() { defer wg.Done(); paused, errs[2] = h.paused(ctx) }()
	go func() { defer wg.Done(); series, errs[3] = c.throughput(ctx, first, now) }()
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	ov := &overview{At: now, Dead: st.Dead, OldestDead: st.OldestDead}
	names := map[string]bool{}
	for _, q := range st.Queues {
		names[q.Queue] = true
	}
	for q := range paused {
		names[q] = true
	}
	for k := range series {
		names[k.queue] = true
	}
	byName := map[string]jobstore.QueueStats{}
	for _, q := range st.Queues {
		byName[q.Queue] = q
	}
	for _, name := range slices.Sorted(mapsKeys(names)) {
		row := queueRow{QueueStats: byName[name]}
		row.Queue = name
		if at, ok := lags[name]; ok {
			row.Lag = max(now.Sub(at), 0)
		}
		if at, ok := paused[name]; ok {
			row.Paused, row.PausedAt = true, at
		}
		done, retry, dead := make([]int, chartMinutes), make([]int, chartMinutes), make([]int, chartMinutes)
		for i := range chartMinutes {
			m := first.Add(time.Duration(i) * time.Minute)
			done[i] = series[seriesKey{name, m, actDone}]
			retry[i] = series[seriesKey{name, m, actRetry}]
			dead[i] = series[seriesKey{name, m, actGiveUp}]
		}
		row.Chart = newChart(done, retry, dead)
		ov.Queues = append(ov.Queues, row)
		t := &ov.Totals
		t.Available += row.Available
		t.Scheduled += row.Scheduled
		t.Running += row.Running
		t.Succeeded += row.Succeeded
		t.Dead += row.Dead
		t.Cancelled += row.Cancelled
	}
	ov.Took = time.Since(start)
	return ov, nil
}

func mapsKeys(m map[string]bool) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// throughput returns the counts per queue, minute and action from first
// to now. Finished minutes do not change, so it reads only what it has
// not read before, and the last two minutes again (for entries written
// late), keeping the rest from earlier counts.
func (c *counter) throughput(ctx context.Context, first, now time.Time) (map[seriesKey]int, error) {
	c.seriesMu.Lock()
	defer c.seriesMu.Unlock()
	since := first
	if reread := c.covered.Truncate(time.Minute).Add(-2 * time.Minute); reread.After(since) && !c.covered.After(now) {
		since = reread
	}
	counts, err := c.h.inspect.Throughput(ctx, since, now)
	if err != nil {
		return nil, err
	}
	for k := range c.series {
		if k.minute.Before(first) || !k.minute.Before(since) {
			delete(c.series, k)
		}
	}
	for _, t := range counts {
		c.series[seriesKey{t.Queue, t.Minute, t.Action}] += t.Count
	}
	c.covered = now
	out := make(map[seriesKey]int, len(c.series))
	for k, v := range c.series {
		out[k] = v
	}
	return out, nil
}

// paused returns the paused queues and when they were paused.
func (h *Handler) paused(ctx context.Context) (map[string]time.Time, error) {
	qs, err := h.client.Paused(ctx)
	if err != nil {
		return nil, err
	}
	m := make(map[string]time.Time, len(qs))
	for _, q := range qs {
		m[q.Queue] = q.PausedAt
	}
	return m, nil
}

func (h *Handler) overview(w http.ResponseWriter, r *http.Request) {
	ov, err := h.count.get(r.Context())
	if err != nil {
		h.internal(w, r, "count the overview", err)
		return
	}
	h.render(w, r, "overview", "Overview", ov)
}

// ago writes how long before now t was ("3m ago"), or "—" for the zero
// time.
func ago(now, t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	d := now.Sub(t)
	if d < 0 {
		return "in " + brief(-d.Round(time.Millisecond))
	}
	if d < time.Second {
		return "just now"
	}
	return brief(d.Round(time.Second)) + " ago"
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05.000Z")
}
