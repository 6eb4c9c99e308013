package te

import (
	"slices"

	"github.com/tessera-ml/tessera/tir"
)

// TopK is ONNX TopK along axis: the k largest (or smallest) elements in
// order, equal ones by position, and their positions. Each element's rank
// is a reduction counting the elements ahead of it (name_rank), and output
// r gathers the element of rank r by a second reduction over the axis
// (name, and name_indices for the positions): quadratic in the axis's
// extent, with no data-dependent control flow.
func TopK(name string, x *Tensor, k, axis int, largest bool) (values, indices *Tensor, err error) {
	name = orDefault(name, "top_k")
	if err := checkInputs("TopK", name, x); err != nil {
		return nil, nil, err
	}
	if axis, err = normAxis("TopK", name, axis, len(x.Shape)); err != nil {
		return nil, nil, err
	}
	n := x.Shape[axis]
	if k <= 0 || k > n {
		return nil, nil, opError("TopK", name, "k %d for an axis of %d", k, n)
	}
	at := func(i []tir.Expr, j tir.Expr) []tir.Expr {
		xi := slices.Clone(i)
		xi[axis] = j
		return xi
	}
	ahead := tir.GT
	if !largest {
		ahead = tir.LT
	}
	rank := Reduce(name+"_rank", x.Shape, Sum, []int{n}, func(i, r []tir.Expr) tir.Expr {
		a, b := x.At(at(i, r[0])...), x.At(i...)
		before := tir.OrE(tir.Cmp(ahead, a, b), tir.AndE(tir.Cmp(tir.EQ, a, b), tir.Cmp(tir.LT, r[0], i[axis])))
		return tir.SelectE(before, tir.F32(1), tir.F32(0))
	})
	out := slices.Clone(x.Shape)
	out[axis] = k
	pick := func(suffix string, v func(i, r []tir.Expr) tir.Expr) *Tensor {
		return Reduce(name+suffix, out, Sum, []int{n}, func(i, r []tir.Expr) tir.Expr {
			hit := tir.Cmp(tir.EQ, rank.At(at(i, r[0])...), &tir.Cast{To: tir.Float32, X: i[axis]})
			return tir.SelectE(hit, v(i, r), tir.F32(0))
		})
	}
	values = pick("", func(i, r []tir.Expr) tir.Expr { return x.At(at(i, r[0])...) })
	indices = pick("_indices", func(i, r []tir.Expr) tir.Expr { return &tir.Cast{To: tir.Float32, X: r[0]} })
	return values, indices, nil
}
