package build

import "math"

// DiffStats compares a model's output with a reference.
type DiffStats struct {
	MaxAbs float64 // max |got − want|
	MaxRel float64 // max |got − want| / |want| over the elements with |want| ≥ the atol
	Bad    int     // elements beyond atol + rtol·|want|; a NaN matches only NaN, an infinity only itself
}

// Diff compares got with want (of the same length) elementwise.
func Diff(got, want []float32, rtol, atol float64) DiffStats {
	var d DiffStats
	for i := range want {
		g, w := float64(got[i]), float64(want[i])
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
