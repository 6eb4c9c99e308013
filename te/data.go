package te

import (
	"fmt"
	"math"

	"github.com/tessera-ml/tessera/tir"
)

// DType is the element type of t's buffer.
func (t *Tensor) DType() tir.DType { return t.Buf.DType }

// RandomSlots fills slots (tir's one-slot-per-element form) with random
// data of type dt from uniform, a source of numbers in [0, 1): floats
// uniform in [-1, 1); 8- and 16-bit integers over their whole range; int32
// over ±2^20 (an int32 input is a bias or an accumulator: values that
// leave room for the arithmetic after it).
func RandomSlots(dt tir.DType, slots []float32, uniform func() float64) {
	if !dt.IntElem() {
		for i := range slots {
			slots[i] = tir.ValueSlot(dt, uniform()*2-1)
		}
		return
	}
	lo, hi := dt.Range()
	if dt == tir.Int32 {
		lo, hi = -1<<20, 1<<20
	}
	for i := range slots {
		v := lo + int64(uniform()*float64(hi-lo+1))
		slots[i] = tir.IntSlot(min(v, hi))
	}
}

// Mismatch returns the first element of got that differs from want, the
// reference evaluator's output of type dt, and a description of it; -1
// when they agree. Integer outputs must be within intTol (DAG.IntTolerance);
// float outputs within tol·(1+|want|), NaN matching NaN only.
func Mismatch(dt tir.DType, got, want []float32, tol float64, intTol int64) (int, string) {
	if len(got) != len(want) {
		return 0, fmt.Sprintf("%d elements, want %d", len(got), len(want))
	}
	if dt.IntElem() {
		for i := range want {
			if g, w := tir.SlotInt(dt, got[i]), tir.SlotInt(dt, want[i]); g-w > intTol || w-g > intTol {
				return i, fmt.Sprintf("got %d, want %d", g, w)
			}
		}
		return -1, ""
	}
	for i := range want {
		g, w := float64(got[i]), float64(want[i])
		if math.IsNaN(w) && math.IsNaN(g) {
			continue
		}
		if !(math.Abs(g-w) <= tol*(1+math.Abs(w))) {
			return i, fmt.Sprintf("got %v, want %v", got[i], want[i])
		}
	}
	return -1, ""
}

// IntTolerance returns how far an integer output o of d may be from
// Eval's value: 0 when every conversion from float to integer on its way
// converts a float that C computes exactly as Eval does, else 1. A float
// can differ by one rounding where a compiler contracts a product and a
// sum into a fused multiply-add (a Mul that is an operand of an Add or
// Sub) or sums a reduction in another order, and a rounding to an integer
// then by one.
func (d *DAG) IntTolerance(o *Tensor) int64 {
	memo := map[*Tensor]bool{}
	if convertsInexact(o, memo) {
		return 1
	}
	return 0
}

// convertsInexact reports whether tensor t, or a computed tensor it reads,
// converts an inexact float (floatInexact) to an integer.
func convertsInexact(t *Tensor, memo map[*Tensor]bool) bool {
	if r, ok := memo[t]; ok || t.IsPlaceholder() {
		return r
	}
	memo[t] = false
	found := false
	tir.WalkExpr(t.Body, func(e tir.Expr) bool {
		switch e := e.(type) {
		case *tir.Cast:
			if e.To.IntElem() && e.X.Type() == tir.Float32 && floatInexact(e.X, map[*Tensor]bool{}) {
				found = true
			}
		case *tir.Load:
			if src, ok := e.Buf.Owner.(*Tensor); ok && convertsInexact(src, memo) {
				found = true
			}
		}
		return !found
	})
	memo[t] = found
	return found
}

// floatInexact reports whether C may compute float expression e one
// rounding apart from Eval.
func floatInexact(e tir.Expr, memo map[*Tensor]bool) bool {
	found := false
	isMul := func(x tir.Expr) bool {
		b, ok := x.(*tir.Binary)
		return ok && b.Op == tir.Mul && b.Type() == tir.Float32
	}
	tir.WalkExpr(e, func(x tir.Expr) bool {
		switch x := x.(type) {
		case *tir.Binary:
			if (x.Op == tir.Add || x.Op == tir.Sub) && x.Type() == tir.Float32 && (isMul(x.A) || isMul(x.B)) {
				found = true
			}
		case *tir.Load:
			src, ok := x.Buf.Owner.(*Tensor)
			if !ok || src.IsPlaceholder() || !src.DType().IsFloat() {
				break
			}
			if r, seen := memo[src]; seen {
				found = found || r
				break
			}
			memo[src] = false
			r := src.Reducer != NoReduce || floatInexact(src.Body, memo)
			memo[src] = r
			found = found || r
		}
		return !found
	})
	return found
}
