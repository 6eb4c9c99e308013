package measure

import (
	"fmt"
	"math"

	"github.com/tessera-ml/tessera/te"
)

// Compare reports whether got matches want elementwise within
// |got-want| <= atol + rtol*|want|. NaN matches only NaN, and an infinity only
// the same infinity. On a mismatch msg names the count, the first and the
// worst offending element (index, got, want); callers turn it into a
// WrongResult.
func Compare(got, want []float32, rtol, atol float64) (ok bool, msg string) {
	if len(got) != len(want) {
		return false, fmt.Sprintf("length: got %d elements, want %d", len(got), len(want))
	}
	first, worst, bad := -1, -1, 0
	worstErr := -1.0
	for i := range got {
		g, w := float64(got[i]), float64(want[i])
		e, match := elemError(g, w, rtol, atol)
		if match {
			continue
		}
		bad++
		if first < 0 {
			first = i
		}
		if e > worstErr {
			worst, worstErr = i, e
		}
	}
	if bad == 0 {
		return true, ""
	}
	return false, fmt.Sprintf("%d of %d elements differ (rtol %g, atol %g); first [%d]: got %g, want %g; worst [%d]: got %g, want %g",
		bad, len(got), rtol, atol, first, got[first], want[first], worst, got[worst], want[worst])
}

// CompareOutput is Compare for output o of DAG d: an integer output
// (tir's slots) must be within d.IntTolerance(o) of the reference.
func CompareOutput(d *te.DAG, o *te.Tensor, got, want []float32, rtol, atol float64) (ok bool, msg string) {
	dt := o.DType()
	if !dt.IntElem() {
		return Compare(got, want, rtol, atol)
	}
	if i, m := te.Mismatch(dt, got, want, 0, d.IntTolerance(o)); i >= 0 {
		return false, fmt.Sprintf("%v element [%d]: %s", dt, i, m)
	}
	return true, ""
}

// elemError returns how far g is from w (+Inf when they cannot be compared
// numerically) and whether it is within tolerance.
func elemError(g, w, rtol, atol float64) (float64, bool) {
	gn, wn := math.IsNaN(g), math.IsNaN(w)
	switch {
	case gn && wn:
		return 0, true
	case gn || wn:
		return math.Inf(1), false
	case math.IsInf(g, 0) || math.IsInf(w, 0):
		if g == w {
			return 0, true
		}
		return math.Inf(1), false
	}
	e := math.Abs(g - w)
	return e, e <= atol+rtol*math.Abs(w)
}
