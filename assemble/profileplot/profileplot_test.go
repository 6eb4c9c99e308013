package profileplot

import (
	"bytes"
	"encoding/xml"
	"errors"
	"html"
	"image/png"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/tsrt"
)

// report is a made-up profiled run: five steps of three tasks, two with
// records.
func report() *tsrt.BenchReport {
	m := &tsrt.Manifest{Model: "m.onnx", Target: "cpu threads=1 | cc",
		Tasks: []tsrt.TaskReport{{Index: 0, Record: &tsrt.RecordUsed{Cost: 0.5e-3}}, {Index: 1}, {Index: 2, Record: &tsrt.RecordUsed{Cost: 2e-6}}},
		Steps: []tsrt.StepReport{{Group: 0, Task: 0, Ops: "Conv+Relu"}, {Group: 1, Task: 1, Ops: "MaxPool"}, {Group: 2, Task: 0, Ops: "Conv+Relu"},
			{Group: 3, Task: 2, Ops: "Add"}, {Group: 4, Task: 1, Ops: "MaxPool"}},
	}
	r := &tsrt.BenchReport{Model: m.Model, Target: m.Target, Threads: 1, Batch: 1, RunsMs: []float64{1.6, 1.7, 1.5}}
	r.Profile = m.Profile([]float64{0.6e-3, 0.1e-3, 0.7e-3, 3e-6, 0.1234567e-3}, []float64{1.6e-3, 1.7e-3, 1.5e-3})
	return r
}

func TestDraw(t *testing.T) {
	var b bytes.Buffer
	if err := Draw(&b, ".svg", report()); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	if err := xml.NewDecoder(strings.NewReader(svg)).Decode(new(struct{})); err != nil && !errors.Is(err, io.EOF) {
		t.Fatalf("not XML: %v", err)
	}
	text := html.UnescapeString(svg)
	for _, want := range []string{"m.onnx on cpu threads=1: mean time of each step", "0  Conv+Relu (task 0)", "4  MaxPool (task 1)", "×1.20", "×1.40", "×1.50", "no record",
		"in the model (mean over 3 runs", "(3 of 5 steps have one)", ">ms<"} {
		if !strings.Contains(text, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
	b.Reset()
	if err := Draw(&b, ".png", report()); err != nil {
		t.Fatal(err)
	}
	if dir := os.Getenv("TESSERA_PLOT_DIR"); dir != "" {
		os.WriteFile(dir+"/profile.png", b.Bytes(), 0o644)
	}
	img, err := png.Decode(&b)
	if err != nil {
		t.Fatal(err)
	}
	if h := img.Bounds().Dy(); h < 200 || h > 500 {
		t.Errorf("a figure of 5 steps %d pixels high", h)
	}
	for r, want := range map[float64]string{1.404: "×1.40", 0.28: "×0.28", 0.0021: "×0.0021", 2602.04: "×2602.04"} {
		if got := ratioText(r); got != want {
			t.Errorf("ratioText(%v) = %q, want %q", r, got, want)
		}
	}
	r := report()
	r.Profile = nil
	if err := Draw(io.Discard, ".svg", r); err == nil {
		t.Error("a plot without a profile")
	}
}
