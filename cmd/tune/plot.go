package main

import (
	"cmp"
	"flag"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
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

	"tessera/records"
)

// The size of a plot: 96 dots per inch in a PNG.
const (
	plotWidth  = 9 * vg.Inch
	plotHeight = 9 * vg.Inch
)

// plotLegendTasks is how many tasks the GFLOP/s panel names; the others
// are drawn in grey under one legend entry.
const plotLegendTasks = 8

// runPlot is `tune records plot [flags] [model.onnx]`.
func runPlot(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tune records plot", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var mf modelFlags
	mf.register(fs)
	db := fs.String("db", "tuning.db", "records database `FILE`")
	target := fs.String("target", "", "target key, or a part of it that names one target (default: the only target of the records)")
	out := fs.String("o", "tuning.svg", "output `FILE`: .svg or .png")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `usage: tune records plot [flags] [model.onnx]

Draws the tuning curve of --db: the estimated model latency (the sum over
tasks of weight × best latency so far) and each task's best GFLOP/s, against
the trials in measurement order. With a model, its tasks and weights are
plotted; without, every task stored in --db that has records on the target.

`)
		fs.PrintDefaults()
	}
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		fmt.Fprintln(stderr, "usage: tune records plot [flags] [model.onnx] (at most one model; run 'tune records plot -h')")
		return errUsage
	}
	format := strings.ToLower(filepath.Ext(*out))
	if format != ".svg" && format != ".png" {
		return fmt.Errorf("-o %s: the output is .svg or .png", *out)
	}
	store, err := openExisting(*db)
	if err != nil {
		return err
	}
	defer store.Close()

	var tasks []records.TaskInfo
	var names []string
	title := filepath.Base(*db)
	if len(pos) == 1 {
		mts, err := modelTasks(pos[0], mf)
		if err != nil {
			return err
		}
		for i, t := range mts {
			tasks = append(tasks, records.TaskInfo{Key: t.Key, FLOPs: t.FLOPs, Weight: t.Weight})
			names = append(names, fmt.Sprintf("%d %s", i, t.Ops()))
		}
		title = filepath.Base(pos[0])
	} else if tasks, err = store.Tasks(); err != nil {
		return err
	}
	targets, err := targetsOf(store, tasks)
	if err != nil {
		return err
	}
	key, err := pickTarget(targets, *target, *db)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		// The stored tasks measured on the target, named by their key.
		tasks = slices.DeleteFunc(tasks, func(t records.TaskInfo) bool { return targets[key][t.Key] == 0 })
		for _, t := range tasks {
			names = append(names, shortKey(t.Key))
		}
	}
	c, err := store.Curve(key, tasks)
	if err != nil {
		return err
	}
	switch {
	case c.Trials == 0:
		return fmt.Errorf("%s has no records of these tasks on %s: nothing to plot", *db, key)
	case c.Valid == 0:
		return fmt.Errorf("%s has %d records of these tasks on %s, none successful: nothing to plot", *db, c.Trials, key)
	}

	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	err = drawCurve(f, format, c, names, title)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("-o %s: %w", *out, err)
	}
	lat := c.Latency()
	fmt.Fprintf(stdout, "wrote %s: %d trials (%d successful) of %d tasks on %s\n", *out, c.Trials, c.Valid, len(tasks), key)
	if len(lat) == 0 {
		fmt.Fprintln(stdout, "estimated model latency: not defined yet (a task has no successful record)")
	} else {
		fmt.Fprintf(stdout, "estimated model latency: %.4f ms after trial %d, %.4f ms after trial %d\n",
			lat[0].Value*1e3, lat[0].Trial, lat[len(lat)-1].Value*1e3, lat[len(lat)-1].Trial)
	}
	return nil
}

// shortKey abbreviates a workload key as the task tables do.
func shortKey(key string) string {
	if len(key) > 11 {
		return key[:11]
	}
	return key
}

// drawCurve draws the curve's two panels (only the GFLOP/s one while the
// latency is not defined) and writes them in format (".svg" or ".png").
func drawCurve(w io.Writer, format string, c *records.Curve, names []string, title string) error {
	target, _, _ := strings.Cut(c.Target, " | ")
	var panels []panel
	if lat := c.Latency(); len(lat) > 0 {
		p := newPanel(fmt.Sprintf("%s on %s: estimated model latency = Σ weight × best latency", title, target))
		line, err := stepLine(stepPoints(lat, c.Trials, 1e3))
		if err != nil {
			return err
		}
		line.Color = plotutil.Color(0)
		line.Width = vg.Points(1.5)
		p.Add(line)
		p.Legend.Add(fmt.Sprintf("%.4f ms after %d trials", lat[len(lat)-1].Value*1e3, c.Trials), line)
		p.Legend.Top = true
		p.Legend.XOffs, p.Legend.YOffs = vg.Points(-4), vg.Points(-4)
		panels = append(panels, panel{p, "estimated latency (ms)"})
	}

	p := newPanel(fmt.Sprintf("%s on %s: best GFLOP/s of each task", title, target))
	// Name the tasks with the largest share of the latency (weight × best
	// cost); grey for the rest.
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
			return err
		}
		if rank < plotLegendTasks {
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
		p.Legend.Add(fmt.Sprintf("%d other tasks", len(order)-plotLegendTasks), others)
	}
	if n := len(c.Tasks) - len(order); n > 0 {
		p.Title.Text += fmt.Sprintf(" (%d without a successful record)", n)
	}
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(-4), vg.Points(4)
	panels = append(panels, panel{p, "best GFLOP/s"})
	return writePanels(w, format, panels)
}

// panel is one plot of a figure and its y-axis label, which writePanels
// draws itself: gonum/plot centres a y label at the arithmetic middle of
// the axis range, which on a log axis lies near the top, and then shrinks
// the data area to make room above it.
type panel struct {
	p      *plot.Plot
	ylabel string
}

// newPanel returns a plot of values against trials, with a grid.
func newPanel(title string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "trials (measurements of all tasks, in order)"
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

// writePanels lays the panels out one above the other, their data areas
// aligned, and writes them as SVG or PNG.
func writePanels(w io.Writer, format string, panels []panel) error {
	var c interface {
		vg.CanvasSizer
		io.WriterTo
	}
	if format == ".svg" {
		c = vgsvg.New(plotWidth, plotHeight)
	} else {
		c = vgimg.PngCanvas{Canvas: vgimg.New(plotWidth, plotHeight)}
	}
	const labelWidth = 24 // points left of each panel for its y label
	tiles := draw.Tiles{Rows: len(panels), Cols: 1, PadTop: vg.Points(8), PadBottom: vg.Points(8),
		PadLeft: vg.Points(labelWidth), PadRight: vg.Points(16), PadY: vg.Points(28)}
	dc := draw.New(c)
	plots := make([][]*plot.Plot, len(panels))
	for i, pn := range panels {
		setRange(pn.p)
		plots[i] = []*plot.Plot{pn.p}
	}
	canvases := plot.Align(plots, tiles, dc)
	for i, pn := range panels {
		pc := canvases[i][0]
		pn.p.Draw(pc)
		data := pn.p.DataCanvas(pc)
		sty := pn.p.X.Label.TextStyle
		sty.Rotation = math.Pi / 2
		sty.XAlign, sty.YAlign = draw.XCenter, draw.YCenter
		dc.FillText(sty, vg.Point{X: vg.Points(labelWidth / 2), Y: (data.Min.Y + data.Max.Y) / 2}, pn.ylabel)
	}
	_, err := c.WriteTo(w)
	return err
}
