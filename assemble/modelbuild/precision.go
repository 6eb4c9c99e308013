package modelbuild

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"

	"github.com/tessera-ml/tessera/tsrt"
)

// PrecisionDiff is how far one output of a bf16 build is from the same
// model's float32 build on one input (CompareFloat32).
type PrecisionDiff struct {
	Output string
	MaxAbs float64 // the largest |bf16 - float32| over the output's elements
	MaxRef float64 // the largest |float32| of the output
	NaN    int     // elements where exactly one of the two is NaN
}

// CompareFloat32 measures what the bf16 precision (Options.Load.BF16)
// costs in accuracy: it builds the model at path again in float32, with
// the same records and target (tasks without a float32 record take their
// default schedules), into a temporary directory, runs both builds on one
// input drawn at random (floats uniform in [-1, 1), integers 0 or 1, as
// tune bench draws them; the seed fixed) and returns, per output, the
// largest difference. A build over ranges is not compared (nil). dir is
// the bf16 build's directory; o its options.
func CompareFloat32(ctx context.Context, path, dir string, o Options) ([]PrecisionDiff, error) {
	if !o.Load.BF16 || len(o.Ranges) > 0 {
		return nil, nil
	}
	tmp, err := os.MkdirTemp("", "tessera-float32-twin-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	t := o
	t.Load.BF16, t.Dir = false, tmp
	t.Assemble.Warn, t.Assemble.SingleFile = io.Discard, false
	if len(t.Layouts) > 1 {
		t.Layouts = t.Layouts[:1] // no second race of the layouts
	}
	twin, err := Open(ctx, path, t)
	if err != nil {
		return nil, fmt.Errorf("the float32 build: %w", err)
	}
	defer twin.Close()
	if _, err := twin.Run(ctx, io.Discard); err != nil {
		return nil, fmt.Errorf("the float32 build: %w", err)
	}
	outs := make([][][]float32, 2)
	for i, d := range []string{dir, tmp} {
		m, err := tsrt.Open(d)
		if err != nil {
			return nil, err
		}
		outs[i], err = m.RunFloat32(ctx, sampleInputs(m.Manifest()), tsrt.RunOptions{Threads: o.Target.Threads})
		m.Close()
		if err != nil {
			return nil, fmt.Errorf("running %s: %w", d, err)
		}
	}
	m, err := tsrt.Open(dir)
	if err != nil {
		return nil, err
	}
	names := m.Manifest().Outputs
	m.Close()
	var diffs []PrecisionDiff
	for k, got := range outs[0] {
		if k >= len(outs[1]) || len(got) != len(outs[1][k]) {
			return nil, fmt.Errorf("output %d: the bf16 and float32 builds disagree on its size", k)
		}
		d := PrecisionDiff{Output: names[k].Name}
		for i, g := range got {
			w := outs[1][k][i]
			gn, wn := g != g, w != w
			switch {
			case gn && wn:
			case gn || wn:
				d.NaN++
			default:
				d.MaxAbs = max(d.MaxAbs, math.Abs(float64(g)-float64(w)))
				d.MaxRef = max(d.MaxRef, math.Abs(float64(w)))
			}
		}
		diffs = append(diffs, d)
	}
	return diffs, nil
}

// WritePrecision prints diffs as tune build reports them.
func WritePrecision(w io.Writer, diffs []PrecisionDiff) {
	if len(diffs) == 0 {
		return
	}
	fmt.Fprintln(w, "bf16 against float32 (this model built in float32 beside it, one random input):")
	for _, d := range diffs {
		rel := 0.0
		if d.MaxRef > 0 {
			rel = d.MaxAbs / d.MaxRef
		}
		fmt.Fprintf(w, "  output %s: largest difference %.3g (%.2f%% of its largest |value| %.3g)", d.Output, d.MaxAbs, 100*rel, d.MaxRef)
		if d.NaN > 0 {
			fmt.Fprintf(w, ", %d elements NaN in one build only", d.NaN)
		}
		fmt.Fprintln(w)
	}
}

// sampleInputs draws one input per manifest input, as tune bench does.
func sampleInputs(man *tsrt.Manifest) [][]float32 {
	rng := rand.New(rand.NewPCG(3, 4))
	in := make([][]float32, len(man.Inputs))
	for i, t := range man.Inputs {
		in[i] = make([]float32, t.Elems())
		for k := range in[i] {
			if t.DType == "float32" || t.DType == "float16" {
				in[i][k] = float32(rng.Float64()*2 - 1)
			} else {
				in[i][k] = float32(rng.IntN(2))
			}
		}
	}
	return in
}
