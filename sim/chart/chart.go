// Package chart draws the results of a [sim] run: one column per policy,
// side by side on the same scales, so the difference between policies is
// what the eye sees. It uses gonum.org/v1/plot and writes PNG or SVG.
//
// Most callers want [Write]. The heed command's "heed sim --chart" uses it.
package chart

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/heed-go/heed/sim"
)

// Options describe a chart. The zero value draws no fault windows and no
// title, at the default size.
type Options struct {
	// Title is printed above every column, before the policy's name.
	Title string
	// Faults are shaded behind the lines.
	Faults []sim.Fault
	// Width and Height of each column (default 4.5 and 5.5 inches).
	Width, Height vg.Length
}

var (
	colUsers    = color.RGBA{R: 0x55, G: 0x55, B: 0x55, A: 0xff}
	colAttempts = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	colGoodput  = color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}
	colInFlight = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	colP99      = color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}
	colFault    = color.NRGBA{R: 0xff, G: 0xa0, B: 0x40, A: 0x40}
)

// Write draws results (one column each, in order) and writes the chart to
// w as format "png" or "svg". The top row shows user requests, attempts at
// the bottom service and goodput per second; the bottom row the attempts
// the bottom service holds and the p99 latency of user requests. Rows share
// their scales across columns.
func Write(w io.Writer, format string, o Options, results ...*sim.Result) error {
	if len(results) == 0 {
		return fmt.Errorf("chart: no results to draw")
	}
	width, height := o.Width, o.Height
	if width == 0 {
		width = 4.5 * vg.Inch
	}
	if height == 0 {
		height = 5.5 * vg.Inch
	}
	totalW := width * vg.Length(len(results))
	var c vg.CanvasWriterTo
	switch format {
	case "png":
		c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(totalW, height), vgimg.UseDPI(110))}
	case "svg":
		c = vgsvg.New(totalW, height)
	default:
		return fmt.Errorf("chart: unknown format %q (want png or svg)", format)
	}

	var rateMax, inflightMax, p99Max float64
	for _, r := range results {
		sec := r.Interval.Seconds()
		for _, p := range r.Series {
			rateMax = max(rateMax, float64(p.UserRequests)/sec, float64(p.Attempts)/sec, float64(p.Goodput)/sec)
			inflightMax = max(inflightMax, float64(p.InFlight))
			p99Max = max(p99Max, p.P99.Seconds())
		}
	}
	rateMax = nice(rateMax)
	inflightMax = nice(inflightMax)
	p99Max = nice(p99Max)

	plots := make([][]*plot.Plot, 2)
	plots[0] = make([]*plot.Plot, len(results))
	plots[1] = make([]*plot.Plot, len(results))
	for i, r := range results {
		sec := r.Interval.Seconds()
		series := func(f func(sim.Point) float64) plotter.XYs {
			xy := make(plotter.XYs, len(r.Series))
			for k, p := range r.Series {
				xy[k].X = (p.At + r.Interval/2).Seconds()
				xy[k].Y = f(p)
			}
			return xy
		}
		xmax := (time.Duration(len(r.Series)) * r.Interval).Seconds()

		top := plot.New()
		top.Title.Text = r.Policy
		if o.Title != "" {
			top.Title.Text = o.Title + ": " + r.Policy
		}
		top.Title.TextStyle.Font.Size = vg.Points(13)
		top.Y.Label.Text = "per second"
		top.X.Min, top.X.Max = 0, xmax
		top.Y.Min, top.Y.Max = 0, rateMax
		if err := shade(top, o.Faults, xmax, rateMax); err != nil {
			return err
		}
		for _, l := range []struct {
			name string
			col  color.Color
			f    func(sim.Point) float64
		}{
			{"attempts at the bottom", colAttempts, func(p sim.Point) float64 { return float64(p.Attempts) / sec }},
			{"user requests", colUsers, func(p sim.Point) float64 { return float64(p.UserRequests) / sec }},
			{"goodput", colGoodput, func(p sim.Point) float64 { return float64(p.Goodput) / sec }},
		} {
			if err := addLine(top, l.name, l.col, series(l.f)); err != nil {
				return err
			}
		}
		top.Legend.Top, top.Legend.Left = true, true
		top.Legend.XOffs = vg.Millimeter * 2
		top.Legend.TextStyle.Font.Size = vg.Points(9)
		addSummary(top, r)

		bottom := plot.New()
		bottom.X.Label.Text = "time (s)"
		bottom.Y.Label.Text = "in flight at the bottom"
		bottom.X.Min, bottom.X.Max = 0, xmax
		bottom.Y.Min, bottom.Y.Max = 0, inflightMax
		if err := shade(bottom, o.Faults, xmax, inflightMax); err != nil {
			return err
		}
		if err := addLine(bottom, "in flight", colInFlight, series(func(p sim.Point) float64 { return float64(p.InFlight) })); err != nil {
			return err
		}
		// p99 latency, scaled onto the in-flight axis.
		scale := inflightMax / p99Max
		if err := addLine(bottom, fmt.Sprintf("p99 latency (%s at the top)", secs(p99Max)), colP99,
			series(func(p sim.Point) float64 { return p.P99.Seconds() * scale })); err != nil {
			return err
		}
		bottom.Legend.Top, bottom.Legend.Left = true, true
		bottom.Legend.XOffs = vg.Millimeter * 2
		bottom.Legend.TextStyle.Font.Size = vg.Points(9)

		plots[0][i], plots[1][i] = top, bottom
	}

	dc := draw.New(c)
	tiles := draw.Tiles{Rows: 2, Cols: len(results), PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align(plots, tiles, dc)
	for j := range plots {
		for i := range plots[j] {
			plots[j][i].Draw(canvases[j][i])
		}
	}
	_, err := c.WriteTo(w)
	return err
}

func addLine(p *plot.Plot, name string, col color.Color, xy plotter.XYs) error {
	l, err := plotter.NewLine(xy)
	if err != nil {
		return err
	}
	l.LineStyle.Color = col
	l.LineStyle.Width = vg.Points(1.5)
	p.Add(l)
	p.Legend.Add(name, l)
	return nil
}

// shade draws the fault windows as boxes behind the lines.
func shade(p *plot.Plot, faults []sim.Fault, xmax, ymax float64) error {
	for _, f := range faults {
		x0, x1 := f.Start.Seconds(), min(f.End.Seconds(), xmax)
		poly, err := plotter.NewPolygon(plotter.XYs{{X: x0, Y: 0}, {X: x1, Y: 0}, {X: x1, Y: ymax}, {X: x0, Y: ymax}})
		if err != nil {
			return err
		}
		poly.Color = colFault
		poly.LineStyle.Width = 0
		p.Add(poly)
	}
	return nil
}

// addSummary puts the run's summary in the plot's x-axis label.
func addSummary(p *plot.Plot, r *sim.Result) {
	s := &r.Summary
	p.X.Label.Text = fmt.Sprintf("%.2f attempts per user request, peak %.1f×, %.1f%% succeeded\n%s (shaded: faults)",
		s.AttemptsPerRequest, s.PeakAmplification, 100*s.SuccessRate, s.RecoveryString())
	p.X.Label.TextStyle.Font.Size = vg.Points(9)
}

// nice rounds v up to 1, 2 or 5 times a power of ten (at least 1).
func nice(v float64) float64 {
	if v <= 1 {
		return 1
	}
	e := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10} {
		if m*e >= v {
			return m * e
		}
	}
	return 10 * e
}

func secs(s float64) string {
	return time.Duration(s * float64(time.Second)).String()
}
