package main

import (
	"fmt"
	"image/color"
	"io"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/tessera-ml/tessera/records/curveplot"
)

var modeColors = map[string]color.Color{
	"cold": color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	"new":  color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
}

// plotCurves draws the end-to-end latency of every run's checkpoints
// against trials (top) and wall time (bottom), onnxruntime as a dashed
// line, into curve.png and curve.svg.
func plotCurves(c config, ort *point, points []*point) error {
	byTrials := newPanel(fmt.Sprintf("%s, %d thread(s): latency of the model built from the records so far", filepath.Base(c.model), c.threads), "trials")
	byWall := newPanel("", "wall time (minutes)")
	for _, mode := range c.modes {
		var xt, xw plotter.XYs
		for _, p := range points {
			if p.mode == mode {
				xt = append(xt, plotter.XY{X: float64(p.trials), Y: p.median()})
				xw = append(xw, plotter.XY{X: p.wall.Minutes(), Y: p.median()})
			}
		}
		if len(xt) == 0 {
			continue
		}
		for _, pn := range []struct {
			p   *plot.Plot
			pts plotter.XYs
		}{{byTrials, xt}, {byWall, xw}} {
			l, s, err := plotter.NewLinePoints(pn.pts)
			if err != nil {
				return err
			}
			col := modeColors[mode]
			l.Color, s.Color = col, col
			pn.p.Add(l, s)
			pn.p.Legend.Add(mode, l, s)
		}
	}
	for _, p := range []*plot.Plot{byTrials, byWall} {
		line, err := plotter.NewLine(plotter.XYs{{X: p.X.Min, Y: ort.median()}, {X: p.X.Max, Y: ort.median()}})
		if err != nil {
			return err
		}
		line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		line.Color = color.Gray{Y: 0x60}
		p.Add(line)
		p.Legend.Add("onnxruntime", line)
	}
	for _, ext := range []string{".png", ".svg"} {
		f, err := os.Create(filepath.Join(c.out, "curve"+ext))
		if err != nil {
			return err
		}
		werr := writeTiles(f, ext, byTrials, byWall)
		if err := f.Close(); werr == nil {
			werr = err
		}
		if werr != nil {
			return werr
		}
		fmt.Fprintf(os.Stderr, "wrote %s\n", f.Name())
	}
	return nil
}

func newPanel(title, xlabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xlabel
	p.Y.Label.Text = "ms"
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	return p
}

// writeTiles draws the panels one above the other.
func writeTiles(w io.Writer, ext string, panels ...*plot.Plot) error {
	c := curveplot.NewCanvas(ext, 8*vg.Inch, 7*vg.Inch)
	tiles := draw.Tiles{Rows: len(panels), Cols: 1, PadTop: vg.Points(8), PadBottom: vg.Points(8),
		PadLeft: vg.Points(8), PadRight: vg.Points(16), PadY: vg.Points(24)}
	rows := make([][]*plot.Plot, len(panels))
	for i, p := range panels {
		rows[i] = []*plot.Plot{p}
	}
	dc := draw.New(c)
	canvases := plot.Align(rows, tiles, dc)
	for i, p := range panels {
		p.Draw(canvases[i][0])
	}
	_, err := c.WriteTo(w)
	return err
}
