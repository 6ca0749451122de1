// Package chart draws the results of a [sim] run: one column per policy,
// side by side, each quantity on its own axis with its unit, each panel
// scaled to its own data, and a caption that states the comparison in
// numbers. It uses gonum.org/v1/plot and writes PNG or SVG.
//
// Most callers want [Write]. The heed command's "heed sim --chart" uses it.
package chart

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/heed-go/heed/internal/duration"
	"github.com/heed-go/heed/sim"
)

// Options describe a chart. The zero value draws no fault windows and no
// title, at the default size.
type Options struct {
	// Title is printed above every column, before the policy's name.
	Title string
	// Faults are shaded behind the lines.
	Faults []sim.Fault
	// Width and Height of each column (default 4.5 and 7.5 inches); the
	// legends and the caption take room beside and below them.
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

// Layout of the image, beside the columns.
const (
	legendWidth   = 2.7 * vg.Inch // the legend column, right of the panels
	captionHeight = 1.2 * vg.Inch
)

// Write draws results (one column each, in order) and writes the chart to
// w as format "png" or "svg". Three rows: user requests, attempts at the
// bottom service and goodput per second; the attempts the bottom service
// holds (a count, with integer ticks); the p99 latency of the user requests
// that finished in each interval, with a gap where none did. Each panel is
// scaled to its own data, so a calm policy is not flattened by a stormy one;
// the caption under the columns states the peaks side by side. Legends are
// in a column of their own, right of the data.
func Write(w io.Writer, format string, o Options, results ...*sim.Result) error {
	if len(results) == 0 {
		return fmt.Errorf("chart: no results to draw")
	}
	width, height := o.Width, o.Height
	if width == 0 {
		width = 4.5 * vg.Inch
	}
	if height == 0 {
		height = 7.5 * vg.Inch
	}
	totalW := width*vg.Length(len(results)) + legendWidth
	totalH := height + captionHeight
	var c vg.CanvasWriterTo
	switch format {
	case "png":
		c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(totalW, totalH), vgimg.UseDPI(110))}
	case "svg":
		c = vgsvg.New(totalW, totalH)
	default:
		return fmt.Errorf("chart: unknown format %q (want png or svg)", format)
	}

	const rows = 3
	plots := make([][]*plot.Plot, rows)
	for j := range plots {
		plots[j] = make([]*plot.Plot, len(results))
	}
	legends := make([]plot.Legend, rows)
	for j := range legends {
		legends[j] = plot.NewLegend()
		legends[j].Top, legends[j].Left = true, true
		legends[j].TextStyle.Font.Size = vg.Points(9.5)
	}
	peaks := make([]peak, len(results))
	for i, r := range results {
		pk := &peaks[i]
		pk.measure(r)
		xmax := (time.Duration(len(r.Series)) * r.Interval).Seconds()
		var l0, l1, l2 *plot.Legend
		if i == 0 { // the first column's lines stand for all in the legends
			l0, l1, l2 = &legends[0], &legends[1], &legends[2]
		}
		var err error
		if plots[0][i], err = rateRow(r, pk, o, xmax, l0); err != nil {
			return err
		}
		if plots[1][i], err = inFlightRow(r, pk, o, xmax, l1); err != nil {
			return err
		}
		if plots[2][i], err = latencyRow(r, pk, o, xmax, l2); err != nil {
			return err
		}
	}
	visible := false // a fault that starts before the horizon
	for _, f := range o.Faults {
		visible = visible || f.Start < time.Duration(len(results[0].Series))*results[0].Interval
	}
	if visible {
		for j := range legends {
			legends[j].Add("fault", faultThumb{})
		}
	}

	dc := draw.New(c)
	caption := draw.Crop(dc, 0, 0, 0, -(dc.Max.Y - dc.Min.Y - captionHeight))
	panels := draw.Crop(dc, 0, -legendWidth, captionHeight, 0)
	side := draw.Crop(dc, dc.Max.X-dc.Min.X-legendWidth, 0, captionHeight, 0)
	tiles := draw.Tiles{Rows: rows, Cols: len(results), PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align(plots, tiles, panels)
	for j := range plots {
		for i := range plots[j] {
			plots[j][i].Draw(canvases[j][i])
		}
		// The row's legend, beside its last panel, level with its top.
		cv := canvases[j][len(results)-1]
		lc := draw.Crop(side, 0, 0, cv.Min.Y-side.Min.Y, -(side.Max.Y - cv.Max.Y))
		legends[j].YOffs = -vg.Millimeter * 8
		legends[j].Draw(lc)
	}
	drawCaption(caption, peaks)
	_, err := c.WriteTo(w)
	return err
}

// measure sets pk to the peaks of r's series.
func (pk *peak) measure(r *sim.Result) {
	sec := r.Interval.Seconds()
	pk.policy = r.Chain
	for _, p := range r.Series {
		pk.attempts = max(pk.attempts, float64(p.Attempts)/sec)
		pk.rate = max(pk.rate, float64(p.UserRequests)/sec, float64(p.Attempts)/sec, float64(p.Goodput)/sec)
		pk.inFlight = max(pk.inFlight, p.InFlight)
		pk.p99 = max(pk.p99, p.P99)
	}
}

// seriesOf returns the points f takes from r's series, each at the middle
// of its interval.
func seriesOf(r *sim.Result, f func(sim.Point) float64) plotter.XYs {
	xy := make(plotter.XYs, len(r.Series))
	for k, p := range r.Series {
		xy[k].X = (p.At + r.Interval/2).Seconds()
		xy[k].Y = f(p)
	}
	return xy
}

// rateRow returns row 1 of r's column: rates. It adds its lines to
// legend, when not nil.
func rateRow(r *sim.Result, pk *peak, o Options, xmax float64, legend *plot.Legend) (*plot.Plot, error) {
	sec := r.Interval.Seconds()
	top := newPanel(0, xmax, nice(pk.rate))
	top.Title.Text = r.Chain
	if o.Title != "" {
		top.Title.Text = o.Title + ": " + r.Chain
	}
	top.Title.TextStyle.Font.Size = vg.Points(13)
	top.Y.Label.Text = "requests per second"
	top.Y.Tick.Marker = plainTicks{}
	if err := shade(top, o.Faults, xmax); err != nil {
		return nil, err
	}
	for _, l := range []struct {
		name string
		col  color.Color
		f    func(sim.Point) float64
	}{
		{"attempts at the bottom service", colAttempts, func(p sim.Point) float64 { return float64(p.Attempts) / sec }},
		{"user requests", colUsers, func(p sim.Point) float64 { return float64(p.UserRequests) / sec }},
		{"goodput (succeeded)", colGoodput, func(p sim.Point) float64 { return float64(p.Goodput) / sec }},
	} {
		line, err := addLine(top, l.col, seriesOf(r, l.f))
		if err != nil {
			return nil, err
		}
		if legend != nil {
			legend.Add(l.name+" (/s)", line)
		}
	}
	addSummary(top, r)
	return top, nil
}

// inFlightRow returns row 2 of r's column: a count, with integer ticks.
// It adds its line to legend, when not nil.
func inFlightRow(r *sim.Result, pk *peak, o Options, xmax float64, legend *plot.Legend) (*plot.Plot, error) {
	mid := newPanel(0, xmax, nice(float64(pk.inFlight)))
	mid.Y.Label.Text = "attempts in flight (count)"
	mid.Y.Tick.Marker = integerTicks{}
	if err := shade(mid, o.Faults, xmax); err != nil {
		return nil, err
	}
	line, err := addLine(mid, colInFlight, seriesOf(r, func(p sim.Point) float64 { return float64(p.InFlight) }))
	if err != nil {
		return nil, err
	}
	if legend != nil {
		legend.Add("attempts the bottom service holds,", line)
		legend.Add("in service or queued, at the")
		legend.Add("end of each interval")
	}
	return mid, nil
}

// latencyRow returns row 3 of r's column: latency, in seconds, with gaps
// where nothing finished. It adds its line to legend, when not nil.
func latencyRow(r *sim.Result, pk *peak, o Options, xmax float64, legend *plot.Legend) (*plot.Plot, error) {
	bottom := newPanel(0, xmax, niceUp(pk.p99.Seconds()))
	bottom.Y.Label.Text = "p99 latency (s)"
	bottom.Y.Tick.Marker = plainTicks{}
	bottom.X.Label.Text = "time (s)"
	if err := shade(bottom, o.Faults, xmax); err != nil {
		return nil, err
	}
	var thumb plot.Thumbnailer
	for _, run := range finishedRuns(r, seriesOf(r, func(p sim.Point) float64 { return p.P99.Seconds() })) {
		th, err := addRun(bottom, colP99, run)
		if err != nil {
			return nil, err
		}
		if thumb == nil {
			thumb = th
		}
	}
	if legend != nil && thumb != nil {
		legend.Add("p99 latency of the user requests", thumb)
		legend.Add("that finished in the interval;")
		legend.Add("a gap: none finished")
	}
	return bottom, nil
}

// peak is the largest value of each quantity in one run, for the caption.
type peak struct {
	policy   string
	rate     float64 // the largest of the three rates
	attempts float64 // per second
	inFlight int
	p99      time.Duration
}

// drawCaption states what the separate scales hide: the peaks of every
// policy side by side.
func drawCaption(c draw.Canvas, peaks []peak) {
	var att, inf, p99 []string
	for _, p := range peaks {
		att = append(att, fmt.Sprintf("%s %s/s", p.policy, thousands(int(math.Round(p.attempts)))))
		inf = append(inf, fmt.Sprintf("%s %s", p.policy, thousands(p.inFlight)))
		p99 = append(p99, fmt.Sprintf("%s %v", p.policy, duration.Round(p.p99)))
	}
	lines := []string{
		"Each panel is scaled to its own data; the highest value of an interval, side by side:",
		"    attempts at the bottom service: " + strings.Join(att, ", "),
		"    attempts in flight: " + strings.Join(inf, ", "),
		"    p99 latency of the user requests that finished in the interval: " + strings.Join(p99, ", "),
		"Points are per interval, at its middle; shaded: the scenario's faults.",
	}
	sty := plot.NewLegend().TextStyle
	sty.Font = font.From(plot.DefaultFont, 10)
	sty.XAlign = draw.XLeft
	sty.YAlign = draw.YTop
	y := c.Max.Y - vg.Millimeter*2
	for _, l := range lines {
		c.FillText(sty, vg.Point{X: c.Min.X + vg.Millimeter*4, Y: y}, l)
		y -= sty.Height(l) + vg.Millimeter
	}
}

// newPanel returns a plot with the given ranges.
func newPanel(xmin, xmax, ymax float64) *plot.Plot {
	p := plot.New()
	p.X.Min, p.X.Max = xmin, xmax
	p.Y.Min, p.Y.Max = 0, ymax
	return p
}

func addLine(p *plot.Plot, col color.Color, xy plotter.XYs) (*plotter.Line, error) {
	l, err := plotter.NewLine(xy)
	if err != nil {
		return nil, err
	}
	l.LineStyle.Color = col
	l.LineStyle.Width = vg.Points(1.5)
	p.Add(l)
	return l, nil
}

// addRun draws one run of points: a line, or a dot when it is a single
// point, which a line would not show.
func addRun(p *plot.Plot, col color.Color, xy plotter.XYs) (plot.Thumbnailer, error) {
	if len(xy) > 1 {
		return addLine(p, col, xy)
	}
	sc, err := plotter.NewScatter(xy)
	if err != nil {
		return nil, err
	}
	sc.GlyphStyle.Color = col
	sc.GlyphStyle.Radius = vg.Points(1.5)
	sc.GlyphStyle.Shape = draw.CircleGlyph{}
	p.Add(sc)
	return sc, nil
}

// finishedRuns splits xy (one point per interval of r) into the runs of
// intervals in which some user request finished: the p99 of an interval in
// which none did is not zero, it does not exist.
func finishedRuns(r *sim.Result, xy plotter.XYs) []plotter.XYs {
	var runs []plotter.XYs
	var cur plotter.XYs
	for k, p := range r.Series {
		if p.Goodput+p.Errors > 0 {
			cur = append(cur, xy[k])
			continue
		}
		if len(cur) > 0 {
			runs = append(runs, cur)
			cur = nil
		}
	}
	if len(cur) > 0 {
		runs = append(runs, cur)
	}
	return runs
}

// shade draws the fault windows as boxes behind the lines, over the
// panel's whole height.
func shade(p *plot.Plot, faults []sim.Fault, xmax float64) error {
	for _, f := range faults {
		x0, x1 := f.Start.Seconds(), min(f.End.Seconds(), xmax)
		if x0 >= x1 {
			continue // after the horizon
		}
		poly, err := plotter.NewPolygon(plotter.XYs{{X: x0, Y: p.Y.Min}, {X: x1, Y: p.Y.Min}, {X: x1, Y: p.Y.Max}, {X: x0, Y: p.Y.Max}})
		if err != nil {
			return err
		}
		poly.Color = colFault
		poly.LineStyle.Width = 0
		p.Add(poly)
	}
	return nil
}

// faultThumb is the legend's swatch of a fault window.
type faultThumb struct{}

func (faultThumb) Thumbnail(c *draw.Canvas) {
	pts := []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Min.X, Y: c.Max.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Max.X, Y: c.Min.Y}}
	c.FillPolygon(colFault, c.ClipPolygonY(pts))
}

// plainTicks are the default tick marks, labelled with no more digits than
// their values need: 250, not 250.00.
type plainTicks struct{}

func (plainTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := (plot.DefaultTicks{}).Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label != "" {
			// Rounded first: a tick computed as 3 × 0.1 is 0.30000000000000004.
			v := math.Round(ts[i].Value*1e9) / 1e9
			ts[i].Label = strconv.FormatFloat(v, 'f', -1, 64)
		}
	}
	return ts
}

// integerTicks are tick marks at whole numbers only, for counts.
type integerTicks struct{}

func (integerTicks) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	for _, t := range (plot.DefaultTicks{}).Ticks(lo, hi) {
		if t.Value != math.Trunc(t.Value) {
			continue
		}
		if t.Label != "" {
			t.Label = thousands(int(t.Value))
		}
		out = append(out, t)
	}
	if labelled(out) < 2 {
		// A range too short for the default ticks: every whole number.
		out = out[:0]
		for v := math.Ceil(lo); v <= hi; v++ {
			out = append(out, plot.Tick{Value: v, Label: thousands(int(v))})
		}
	}
	return out
}

func labelled(ts []plot.Tick) int {
	n := 0
	for _, t := range ts {
		if t.Label != "" {
			n++
		}
	}
	return n
}

// thousands formats n with commas between groups of three digits.
func thousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// addSummary puts the run's summary in the plot's x-axis label.
func addSummary(p *plot.Plot, r *sim.Result) {
	s := &r.Summary
	p.X.Label.Text = fmt.Sprintf("%.2f attempts per user request, peak %.1f×, %.1f%% succeeded\n%s",
		s.AttemptsPerRequest, s.PeakAmplification, 100*s.SuccessRate, s.RecoveryString())
	p.X.Label.TextStyle.Font.Size = vg.Points(9)
}

// nice is niceUp, at least 1: the top of an axis of counts or rates.
func nice(v float64) float64 { return max(1, niceUp(v)) }

// niceUp rounds v up to a round number: 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6 or
// 8 times a power of ten (1 for v <= 0).
func niceUp(v float64) float64 {
	if v <= 0 {
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
