package ui

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/heed-go/heed/queue"
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
	Totals     queue.QueueStats // all queues together
}

// queueRow is one queue of the overview.
type queueRow struct {
	queue.QueueStats
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

// chart is the last hour of one queue, per minute, as SVG polylines in a
// viewBox of chartW × chartH.
type chart struct {
	Done, Retry, Dead          string // polyline points
	DoneN, RetryN, DeadN, Peak int    // totals over the hour, and the busiest minute
}

const (
	chartW = 2 * (chartMinutes - 1)
	chartH = 32
)

// newChart draws three series of chartMinutes counts each.
func newChart(done, retry, dead []int) chart {
	peak := 0
	for i := range done {
		peak = max(peak, done[i], retry[i], dead[i])
	}
	line := func(v []int) (string, int) {
		var b strings.Builder
		total := 0
		for i, n := range v {
			total += n
			y := float64(chartH - 1)
			if peak > 0 {
				y = float64(chartH-1) - float64(n)/float64(peak)*float64(chartH-2)
			}
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(strconv.Itoa(2 * i))
			b.WriteByte(',')
			b.WriteString(strconv.FormatFloat(y, 'f', 1, 64))
		}
		return b.String(), total
	}
	var c chart
	c.Done, c.DoneN = line(done)
	c.Retry, c.RetryN = line(retry)
	c.Dead, c.DeadN = line(dead)
	c.Peak = peak
	return c
}

// countNow counts the overview from the store.
func (c *counter) countNow(ctx context.Context) (*overview, error) {
	h := c.h
	start := time.Now()
	now := h.now()
	st, err := h.client.Stats(ctx)
	if err != nil {
		return nil, err
	}
	lags, err := h.inspect.QueueLags(ctx, now)
	if err != nil {
		return nil, err
	}
	paused, err := h.paused(ctx)
	if err != nil {
		return nil, err
	}
	first := now.Truncate(time.Minute).Add(-(chartMinutes - 1) * time.Minute)
	series, err := c.throughput(ctx, first, now)
	if err != nil {
		return nil, err
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
	byName := map[string]queue.QueueStats{}
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
			done[i] = series[seriesKey{name, m, "done"}]
			retry[i] = series[seriesKey{name, m, "retry"}]
			dead[i] = series[seriesKey{name, m, "give up"}]
		}
		row.Chart = newChart(done, retry, dead)
		ov.Queues = append(ov.Queues, row)
		t := &ov.Totals
		t.Available += row.Available
		t.Scheduled += row.Scheduled
		t.Running += row.Running
		t.Succeeded += row.Succeeded
		t.Dead += row.Dead
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
	return map[string]time.Time{}, nil
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
		return "in " + Duration(-d.Round(time.Millisecond))
	}
	if d < time.Second {
		return "just now"
	}
	return Duration(d.Round(time.Second)) + " ago"
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05.000Z")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
