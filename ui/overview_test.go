package ui

import (
	"math"
	"strings"
	"testing"
)

func TestNewChart(t *testing.T) {
	done, retry, dead := make([]int, chartMinutes), make([]int, chartMinutes), make([]int, chartMinutes)
	done[0], retry[0], dead[0] = 2, 1, 1 // the busiest minute: 4
	done[59] = 1
	c := newChart(done, retry, dead)
	if c.DoneN != 3 || c.RetryN != 1 || c.DeadN != 1 || c.Peak != 4 {
		t.Errorf("totals %d %d %d peak %d, want 3 1 1 peak 4", c.DoneN, c.RetryN, c.DeadN, c.Peak)
	}
	unit := float64(chartH-1) / 4
	want := []bar{
		{X: 0, Y: chartH - 2*unit, H: 2 * unit, Class: "s-ok"},
		{X: 0, Y: chartH - 3*unit, H: unit, Class: "s-retry"},
		{X: 0, Y: chartH - 4*unit, H: unit, Class: "s-dead"},
		{X: 59 * chartBar, Y: chartH - unit, H: unit, Class: "s-ok"},
	}
	if len(c.Bars) != len(want) {
		t.Fatalf("bars %+v, want %+v", c.Bars, want)
	}
	for i, w := range want {
		g := c.Bars[i]
		if g.Class != w.Class || math.Abs(g.X-w.X)+math.Abs(g.Y-w.Y)+math.Abs(g.H-w.H) > 1e-9 {
			t.Errorf("bar %d = %+v, want %+v", i, g, w)
		}
	}
	if n := strings.Count(string(c.SVG), "<rect "); n != 4 || !strings.HasPrefix(string(c.SVG), "<svg ") {
		t.Errorf("SVG has %d rects: %s", n, c.SVG)
	}
	empty := newChart(make([]int, chartMinutes), make([]int, chartMinutes), make([]int, chartMinutes))
	if len(empty.Bars) != 0 || !strings.Contains(string(empty.SVG), "0 succeeded") {
		t.Errorf("empty chart: %+v", empty)
	}
}
