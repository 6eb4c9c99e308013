// Package curveplot draws the tuning curve of a records database (a
// records.Curve) with gonum/plot, as `tune records plot` writes it: the
// estimated model latency and each task's best GFLOP/s against the trials,
// one panel above the other, as SVG or PNG. Draw is the entry point.
package curveplot

import (
	"cmp"
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/tessera-ml/tessera/records"
)

// The size of a figure: 96 dots per inch in a PNG. Width is that of
// every figure of Tessera's (tune bench --plot draws its own height).
const (
	Width  = 9 * vg.Inch
	height = 9 * vg.Inch
)

// LegendTasks is how many tasks the GFLOP/s panel names; the others are
// drawn in grey under one legend entry.
const LegendTasks = 8

// FormatOf returns the format Draw writes for the file at path: ".svg" or
// ".png", from its extension.
func FormatOf(path string) (string, error) {
	format := strings.ToLower(filepath.Ext(path))
	if format != ".svg" && format != ".png" {
		return "", fmt.Errorf("-o %s: the output is .svg or .png", path)
	}
	return format, nil
}

// Draw draws the curve's two panels (only the GFLOP/s one while the
// latency is not defined) and writes them in format (".svg" or ".png").
// names[i] names task c.Tasks[i] in the legend; title names the model or
// the database.
func Draw(w io.Writer, format string, c *records.Curve, names []string, title string) error {
	target, _, _ := strings.Cut(c.Target, " | ")
	var panels []Panel
	if lat := c.Latency(); len(lat) > 0 {
		p, err := latencyPanel(c, lat, fmt.Sprintf("%s on %s: estimated model latency = Σ weight × best latency", title, target))
		if err != nil {
			return err
		}
		panels = append(panels, Panel{p, "estimated latency (ms)"})
	}
	p, err := gflopsPanel(c, names, fmt.Sprintf("%s on %s: best GFLOP/s of each task", title, target))
	if err != nil {
		return err
	}
	panels = append(panels, Panel{p, "best GFLOP/s"})
	for _, pn := range panels {
		setRange(pn.Plot)
	}
	return WritePanels(w, format, Width, height, panels...)
}

// latencyPanel plots the estimated model latency lat of the curve.
func latencyPanel(c *records.Curve, lat []records.CurvePoint, title string) (*plot.Plot, error) {
	p := NewPanel(title, trialsLabel)
	line, err := stepLine(stepPoints(lat, c.Trials, 1e3))
	if err != nil {
		return nil, err
	}
	line.Color = plotutil.Color(0)
	line.Width = vg.Points(1.5)
	p.Add(line)
	p.Legend.Add(fmt.Sprintf("%.4f ms after %d trials", lat[len(lat)-1].Value*1e3, c.Trials), line)
	p.Legend.Top = true
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(-4), vg.Points(-4)
	return p, nil
}

// gflopsPanel plots each task's best GFLOP/s, naming the LegendTasks tasks
// with the largest share of the latency (weight × best cost); grey for
// the rest.
func gflopsPanel(c *records.Curve, names []string, title string) (*plot.Plot, error) {
	p := NewPanel(title, trialsLabel)
	order := make([]int, 0, len(c.Tasks))
	share := make([]float64, len(c.Tasks))
	for t, b := range c.Best {
		if len(b) > 0 {
			order = append(order, t)
			share[t] = float64(c.Tasks[t].Weight) * b[len(b)-1].Value
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(share[b], share[a]) })
	var others *plotter.Line
	for rank, t := range order {
		pts := stepPoints(c.Best[t], c.Trials, 1)
		for i := range pts {
			pts[i].Y = c.Tasks[t].FLOPs / pts[i].Y / 1e9
		}
		line, err := stepLine(pts)
		if err != nil {
			return nil, err
		}
		if rank < LegendTasks {
			line.Color = plotutil.Color(rank)
			line.Width = vg.Points(1.5)
			line.Dashes = plotutil.Dashes(rank / len(plotutil.DefaultColors))
			p.Legend.Add(fmt.Sprintf("task %s ×%d", names[t], c.Tasks[t].Weight), line)
		} else {
			line.Color = color.Gray{Y: 170}
			others = line
		}
		p.Add(line)
	}
	if others != nil {
		p.Legend.Add(fmt.Sprintf("%d other tasks", len(order)-LegendTasks), others)
	}
	if n := len(c.Tasks) - len(order); n > 0 {
		p.Title.Text += fmt.Sprintf(" (%d without a successful record)", n)
	}
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(-4), vg.Points(4)
	return p, nil
}

// Panel is one plot of a figure and its y-axis label, which WritePanels
// draws itself: gonum/plot centres a y label at the arithmetic middle of
// the axis range, which on a log axis lies near the top, and then shrinks
// the data area to make room above it.
type Panel struct {
	Plot   *plot.Plot
	YLabel string
}

// trialsLabel is the x label of the curve's panels.
const trialsLabel = "trials (measurements of all tasks, in order)"

// NewPanel returns a plot with a title, an x label and a grid, as every
// panel of Tessera's figures starts.
func NewPanel(title, xlabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xlabel
	p.Add(plotter.NewGrid())
	return p
}

// stepLine returns a line that keeps each value until the next point.
func stepLine(pts plotter.XYs) (*plotter.Line, error) {
	line, err := plotter.NewLine(pts)
	if err != nil {
		return nil, err
	}
	line.StepStyle = plotter.PostStep
	return line, nil
}

// stepPoints turns the improvements of a curve into the corners of a step
// line that runs to the last trial, values multiplied by scale.
func stepPoints(ps []records.CurvePoint, trials int, scale float64) plotter.XYs {
	out := make(plotter.XYs, 0, len(ps)+1)
	for _, p := range ps {
		out = append(out, plotter.XY{X: float64(p.Trial), Y: p.Value * scale})
	}
	if last := ps[len(ps)-1]; last.Trial < trials {
		out = append(out, plotter.XY{X: float64(trials), Y: last.Value * scale})
	}
	return out
}

// setRange starts the x axis at trial 0 and fits the y axis to the data:
// logarithmic when the values span more than a factor 10, with ticks at
// 1, 2 and 5 of each decade.
func setRange(p *plot.Plot) {
	p.X.Min = 0
	lo, hi := p.Y.Min, p.Y.Max // the data range, as the plotters set it
	if lo > 0 && hi/lo > 10 {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = logTicks{}
		p.Y.Min, p.Y.Max = lo/1.2, hi*1.2
		return
	}
	p.Y.Min, p.Y.Max = 0, hi*1.05
}

// logTicks labels 1, 2 and 5 times each power of ten (only the powers
// over more than four decades, every integer multiple when the range holds
// fewer than two labels otherwise).
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	choices := [][]float64{{1, 2, 5}, {1, 2, 3, 4, 5, 6, 7, 8, 9}}
	if math.Log10(hi/lo) > 4 {
		choices = [][]float64{{1}}
	}
	for _, labelled := range choices {
		ticks = ticks[:0]
		n := 0
		for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
			for m := 1.0; m <= 9; m++ {
				v := m * math.Pow(10, e)
				if v < lo || v > hi {
					continue
				}
				t := plot.Tick{Value: v}
				if slices.Contains(labelled, m) {
					t.Label = fmt.Sprintf("%g", v)
					n++
				}
				ticks = append(ticks, t)
			}
		}
		if n >= 2 {
			break
		}
	}
	return ticks
}

// Canvas is a canvas that writes itself as an image file.
type Canvas interface {
	vg.CanvasSizer
	io.WriterTo
}

// NewCanvas returns an SVG canvas for format ".svg", else a PNG one.
func NewCanvas(format string, width, height vg.Length) Canvas {
	if format == ".svg" {
		return vgsvg.New(width, height)
	}
	return vgimg.PngCanvas{Canvas: vgimg.New(width, height)}
}

// WritePanels lays the panels out one above the other in a figure of
// width × height, their data areas aligned and each y label beside its
// data area, and writes them as format (".svg" or ".png"; FormatOf).
func WritePanels(w io.Writer, format string, width, height vg.Length, panels ...Panel) error {
	c := NewCanvas(format, width, height)
	const labelWidth = 24 // points left of each panel for its y label
	tiles := draw.Tiles{Rows: len(panels), Cols: 1, PadTop: vg.Points(8), PadBottom: vg.Points(8),
		PadLeft: vg.Points(labelWidth), PadRight: vg.Points(16), PadY: vg.Points(28)}
	dc := draw.New(c)
	plots := make([][]*plot.Plot, len(panels))
	for i, pn := range panels {
		plots[i] = []*plot.Plot{pn.Plot}
	}
	canvases := plot.Align(plots, tiles, dc)
	for i, pn := range panels {
		pc := canvases[i][0]
		pn.Plot.Draw(pc)
		data := pn.Plot.DataCanvas(pc)
		sty := pn.Plot.X.Label.TextStyle
		sty.Rotation = math.Pi / 2
		sty.XAlign, sty.YAlign = draw.XCenter, draw.YCenter
		dc.FillText(sty, vg.Point{X: vg.Points(labelWidth / 2), Y: (data.Min.Y + data.Max.Y) / 2}, pn.YLabel)
	}
	_, err := c.WriteTo(w)
	return err
}
