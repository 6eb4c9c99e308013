package te

import (
	"fmt"

	"github.com/tessera-ml/tessera/tir"
)

// BroadcastShapes returns the numpy (ONNX multidirectional) broadcast of the
// shapes: right-aligned, each dimension equal or 1.
func BroadcastShapes(shapes ...[]int) ([]int, error) {
	rank := 0
	for _, s := range shapes {
		rank = max(rank, len(s))
	}
	out := make([]int, rank)
	for i := range out {
		out[i] = 1
	}
	for _, s := range shapes {
		off := rank - len(s)
		for i, d := range s {
			switch o := out[off+i]; {
			case d == o || d == 1:
			case o == 1:
				out[off+i] = d
			default:
				return nil, fmt.Errorf("shapes %v are not broadcastable (dimension %d: %d vs %d)", shapes, off+i-rank, o, d)
			}
		}
	}
	return out, nil
}

// broadcastsTo reports whether from is unidirectionally broadcastable to to.
func broadcastsTo(from, to []int) bool {
	if len(from) > len(to) {
		return false
	}
	off := len(to) - len(from)
	for i, d := range from {
		if d != 1 && d != to[off+i] {
			return false
		}
	}
	return true
}

// broadcastIndex maps idx, indices into a tensor of shape out, to indices
// into a tensor of shape from, which broadcasts to out (right-aligned;
// broadcast dimensions read index 0).
func broadcastIndex(from, out []int, idx []tir.Expr) []tir.Expr {
	off := len(out) - len(from)
	res := make([]tir.Expr, len(from))
	for i, d := range from {
		if d == 1 && out[off+i] != 1 {
			res[i] = Idx(0)
		} else {
			res[i] = idx[off+i]
		}
	}
	return res
}

// bcastAt loads t at the output indices idx of a tensor of shape out.
func bcastAt(t *Tensor, out []int, idx []tir.Expr) tir.Expr {
	return t.At(broadcastIndex(t.Shape, out, idx)...)
}

// Expand broadcasts x to shape (bidirectionally, as ONNX Expand: the output
// shape is the broadcast of x's shape and shape).
func Expand(name string, x *Tensor, shape []int) (*Tensor, error) {
	name = orDefault(name, "expand")
	if err := checkInputs("Expand", name, x); err != nil {
		return nil, err
	}
	out, err := BroadcastShapes(x.Shape, shape)
	if err != nil {
		return nil, opError("Expand", name, "%v", err)
	}
	if err := checkShape("Expand", name, out); err != nil {
		return nil, err
	}
	return Compute(name, out, func(i []tir.Expr) tir.Expr { return bcastAt(x, out, i) }), nil
}

// broadcastN is the single stage of an n-ary elementwise op with
// multidirectional broadcasting: out[i] = f(x0[...], x1[...], ...), each
// input read at its broadcast indices.
func broadcastN(op, name string, xs []*Tensor, f func(v []tir.Expr) tir.Expr) (*Tensor, error) {
	if len(xs) == 0 {
		return nil, opError(op, name, "no inputs")
	}
	if err := checkInputs(op, name, xs...); err != nil {
		return nil, err
	}
	shapes := make([][]int, len(xs))
	for i, x := range xs {
		shapes[i] = x.Shape
	}
	out, err := BroadcastShapes(shapes...)
	if err != nil {
		return nil, opError(op, name, "%v", err)
	}
	return Compute(name, out, func(i []tir.Expr) tir.Expr {
		v := make([]tir.Expr, len(xs))
		for k, x := range xs {
			v[k] = bcastAt(x, out, i)
		}
		return f(v)
	}), nil
}

// Elementwise defines out[i] = f(x0[...], x1[...], ...) over one or more
// inputs with multidirectional broadcasting: the one stage of an
// elementwise op written outside the library (package ops).
func Elementwise(name string, xs []*Tensor, f func(v []tir.Expr) tir.Expr) (*Tensor, error) {
	return broadcastN("Elementwise", orDefault(name, "elementwise"), xs, f)
}
