package te

import "github.com/tessera-ml/tessera/tir"

// CumSum is ONNX CumSum along axis: out[..., j, ...] sums x[..., k, ...]
// over k ≤ j (k < j when exclusive; k ≥ j, or k > j, when reverse). One
// reduction over the axis, its terms selected by position, so the tuner
// schedules it like any other reduction (quadratic in the axis's extent).
func CumSum(name string, x *Tensor, axis int, exclusive, reverse bool) (*Tensor, error) {
	name = orDefault(name, "cumsum")
	if err := checkInputs("CumSum", name, x); err != nil {
		return nil, err
	}
	axis, err := normAxis("CumSum", name, axis, len(x.Shape))
	if err != nil {
		return nil, err
	}
	op := map[[2]bool]tir.CmpOp{{false, false}: tir.LE, {true, false}: tir.LT, {false, true}: tir.GE, {true, true}: tir.GT}[[2]bool{exclusive, reverse}]
	return Reduce(name, x.Shape, Sum, []int{x.Shape[axis]}, func(i, r []tir.Expr) tir.Expr {
		xi := append([]tir.Expr(nil), i...)
		xi[axis] = r[0]
		return tir.SelectE(tir.Cmp(op, r[0], i[axis]), x.At(xi...), tir.F32(0))
	}), nil
}
