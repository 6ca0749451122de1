package chart

import (
	"bytes"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot/plotter"

	"github.com/heed-go/heed/sim"
)

func results(t *testing.T) (sim.Scenario, []*sim.Result) {
	t.Helper()
	s, _ := sim.Builtin("spike")
	s.Horizon = 40 * time.Second
	rs, err := sim.Run(s, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s, rs
}

func TestWrite(t *testing.T) {
	s, rs := results(t)
	for _, format := range []string{"png", "svg"} {
		var b bytes.Buffer
		if err := Write(&b, format, Options{Title: s.Name, Faults: s.Faults}, rs...); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		switch format {
		case "png":
			if !bytes.HasPrefix(b.Bytes(), []byte("\x89PNG")) {
				t.Errorf("png: no PNG signature")
			}
		case "svg":
			if !strings.Contains(b.String(), "<svg") || !strings.Contains(b.String(), "naive") {
				t.Errorf("svg: no <svg> or no policy name")
			}
		}
		if out := os.Getenv("HEED_CHART_OUT"); out != "" {
			_ = os.WriteFile(out+"."+format, b.Bytes(), 0o644)
		}
	}
	if err := Write(&bytes.Buffer{}, "gif", Options{}, rs...); err == nil || !strings.Contains(err.Error(), `unknown format "gif"`) {
		t.Errorf("gif: %v", err)
	}
	if err := Write(&bytes.Buffer{}, "png", Options{}); err == nil {
		t.Error("no results: no error")
	}
}

// Counts get whole-number ticks, however short their range.
func TestIntegerTicks(t *testing.T) {
	for _, hi := range []float64{1, 2, 5, 8, 250, 6000, 80000} {
		labelled := 0
		for _, tk := range (integerTicks{}).Ticks(0, hi) {
			if tk.Value != float64(int(tk.Value)) {
				t.Errorf("0..%v: tick at %v", hi, tk.Value)
			}
			if tk.Label != "" {
				labelled++
				if strings.ContainsAny(tk.Label, ".e") {
					t.Errorf("0..%v: label %q", hi, tk.Label)
				}
			}
		}
		if labelled < 2 {
			t.Errorf("0..%v: %d labelled ticks", hi, labelled)
		}
	}
	for _, tk := range (plainTicks{}).Ticks(0, 0.3) {
		if len(tk.Label) > 4 {
			t.Errorf("0..0.3: label %q", tk.Label)
		}
	}
}

// An interval in which no user request finished has no p99: a gap, not a
// zero.
func TestFinishedRuns(t *testing.T) {
	r := &sim.Result{Interval: time.Second}
	for _, done := range []int64{0, 1, 2, 0, 0, 3, 0, 4} {
		r.Series = append(r.Series, sim.Point{Goodput: done})
	}
	xy := make(plotter.XYs, len(r.Series))
	for i := range xy {
		xy[i].X = float64(i)
	}
	var got [][]float64
	for _, run := range finishedRuns(r, xy) {
		var xs []float64
		for _, p := range run {
			xs = append(xs, p.X)
		}
		got = append(got, xs)
	}
	if want := [][]float64{{1, 2}, {5}, {7}}; !reflect.DeepEqual(got, want) {
		t.Errorf("runs %v, want %v", got, want)
	}
}

// Each quantity has its own axis with its unit, and the caption states the
// peaks of every policy, since the panels are not on one scale.
func TestWriteLabels(t *testing.T) {
	s, rs := results(t)
	var b bytes.Buffer
	if err := Write(&b, "svg", Options{Title: s.Name, Faults: s.Faults}, rs...); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	for _, want := range []string{"requests per second", "attempts in flight (count)", "p99 latency (s)", "time (s)",
		"Each panel is scaled to its own data", "attempts at the bottom service: naive ", ", heed ", "a gap: none finished"} {
		if !strings.Contains(svg, want) {
			t.Errorf("the chart has no %q", want)
		}
	}
}
