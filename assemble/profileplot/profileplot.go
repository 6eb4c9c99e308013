// Package profileplot draws the profile of a built model's steps, as
// `tune bench --profile --plot` writes it: for every step of the
// executor, in the order it runs them from the top, its mean time in the
// model beside the time its task's record was measured at when tuning,
// as a grouped horizontal bar chart labelled by step and ops, with the
// ratio of the two at the end of each pair. The figure's style is that of
// the tuning curves (package curveplot). Draw is the entry point.
package profileplot

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/tessera-ml/tessera/records/curveplot"
	"github.com/tessera-ml/tessera/tsrt"
)

// The height of one step's row, and of the rest of the figure (title,
// axis, margins).
const (
	rowHeight = 0.32 * vg.Inch
	frame     = 1.4 * vg.Inch
)

// Draw draws the profile of r (r.Profile, from tune bench --profile) and
// writes it in format (".svg" or ".png"; curveplot.FormatOf).
func Draw(w io.Writer, format string, r *tsrt.BenchReport) error {
	p := r.Profile
	if p == nil || len(p.Steps) == 0 {
		return errors.New("a plot needs the profile of the steps (--profile)")
	}
	n := len(p.Steps)
	// gonum counts a nominal axis up from the bottom: step i is row n-1-i,
	// so that the first step is at the top.
	model, record := make(plotter.Values, n), make(plotter.Values, n)
	labels := make([]string, n)
	ratios := plotter.XYLabels{XYs: make(plotter.XYs, n), Labels: make([]string, n)}
	most := 0.0
	records := 0
	for i, s := range p.Steps {
		row := n - 1 - i
		model[row] = s.Ms
		labels[row] = fmt.Sprintf("%d  %s (task %d)", s.Step, s.Ops, s.Task)
		end := s.Ms
		ratios.Labels[row] = "no record"
		if s.RecordMs != nil {
			record[row] = *s.RecordMs
			end = max(end, *s.RecordMs)
			records++
		}
		if s.Ratio != nil {
			ratios.Labels[row] = ratioText(*s.Ratio)
		}
		ratios.XYs[row] = plotter.XY{X: end, Y: float64(row)}
		most = max(most, end)
	}
	target, _, _ := strings.Cut(r.Target, " | ")
	what := "mean time of each step"
	if p.PerSample {
		what += fmt.Sprintf(" per sample (batch %s=%d)", r.BatchName, r.Batch)
	}
	pl := curveplot.NewPanel(fmt.Sprintf("%s on %s: %s in the model and of its task's record", r.Model, target, what), "ms")
	const barWidth = 8 // points, for each of a step's two bars
	inModel, err := plotter.NewBarChart(model, vg.Points(barWidth))
	if err != nil {
		return err
	}
	inRecord, err := plotter.NewBarChart(record, vg.Points(barWidth))
	if err != nil {
		return err
	}
	for k, b := range []*plotter.BarChart{inModel, inRecord} {
		b.Horizontal = true
		b.Color = plotutil.Color(k)
		b.LineStyle.Width = 0
		b.Offset = vg.Points(barWidth/2 - barWidth*float64(k)) // the model's bar above its record's
	}
	text, err := plotter.NewLabels(ratios)
	if err != nil {
		return err
	}
	for i := range text.TextStyle {
		text.TextStyle[i].YAlign = draw.YCenter // on the row
	}
	text.Offset = vg.Point{X: vg.Points(4), Y: vg.Points(barWidth / 2)} // beside the model's bar
	pl.Add(inModel, inRecord, text)
	pl.NominalY(labels...)
	pl.Legend.Add(fmt.Sprintf("in the model (mean over %d runs; steps %.3f ms of a %.3f ms run)", len(r.RunsMs), p.StepsMs, p.MeanRunMs), inModel)
	pl.Legend.Add(fmt.Sprintf("its task's record, as tuning measured it alone (%d of %d steps have one)", records, n), inRecord)
	pl.Legend.Top = true
	pl.Legend.XOffs, pl.Legend.YOffs = vg.Points(-4), vg.Points(-4)
	pl.X.Min, pl.X.Max = 0, most*1.15 // room for the ratios
	// The legend's two lines sit above the first step.
	pl.Y.Max += 2
	height := vg.Length(n)*rowHeight + frame
	return curveplot.WritePanels(w, format, curveplot.Width, height, curveplot.Panel{Plot: pl, YLabel: ""})
}

// ratioText writes a ratio with two decimals, or two significant digits
// below 0.1 (×0.0021, not ×0.00).
func ratioText(r float64) string {
	if r < 0.095 {
		return fmt.Sprintf("×%.2g", r)
	}
	return fmt.Sprintf("×%.2f", r)
}
