package tsrt

import (
	"fmt"
	"math"
)

// Comparing a model's outputs with references, as tune run --reference
// does.

// DiffStats compares a model's output with a reference.
type DiffStats struct {
	MaxAbs float64 // max |got − want|
	MaxRel float64 // max |got − want| / |want| over the elements with |want| ≥ the atol
	Bad    int     // elements beyond atol + rtol·|want|; a NaN matches only NaN, an infinity only itself
}

// Diff compares got with want (of the same length) elementwise.
func Diff(got, want []float32, rtol, atol float64) DiffStats {
	f64 := func(x float32) float64 { return float64(x) }
	return diff(convert(got, f64), convert(want, f64), rtol, atol)
}

// diffTensors compares got with want, of the same number of elements and
// any dtypes, elementwise.
func diffTensors(got, want Tensor, rtol, atol float64) (DiffStats, error) {
	g, err := float64sOf(got)
	if err != nil {
		return DiffStats{}, err
	}
	w, err := float64sOf(want)
	if err != nil {
		return DiffStats{}, err
	}
	if len(g) != len(w) {
		return DiffStats{}, fmt.Errorf("%d elements, the output has %d", len(w), len(g))
	}
	return diff(g, w, rtol, atol), nil
}

func diff(got, want []float64, rtol, atol float64) DiffStats {
	var d DiffStats
	for i := range want {
		g, w := got[i], want[i]
		if math.IsNaN(g) || math.IsNaN(w) || math.IsInf(g, 0) || math.IsInf(w, 0) {
			if !(g == w || math.IsNaN(g) && math.IsNaN(w)) {
				d.Bad++
				d.MaxAbs, d.MaxRel = math.Inf(1), math.Inf(1)
			}
			continue
		}
		e := math.Abs(g - w)
		d.MaxAbs = max(d.MaxAbs, e)
		if math.Abs(w) >= atol && w != 0 {
			d.MaxRel = max(d.MaxRel, e/math.Abs(w))
		}
		if e > atol+rtol*math.Abs(w) {
			d.Bad++
		}
	}
	return d
}
