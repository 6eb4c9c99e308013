package te

import (
	"github.com/tessera-ml/tessera/tir"
)

// ReduceAttrs are the attributes of the Reduce* ops. Axes lists the reduced
// axes (negative allowed); empty means all axes, or none when
// NoopWithEmptyAxes is set (the op is then the identity). KeepDims keeps
// reduced axes as extent-1 dimensions; ONNX's default is true, see
// DefaultReduceAttrs.
type ReduceAttrs struct {
	Axes              []int
	KeepDims          bool
	NoopWithEmptyAxes bool
}

// DefaultReduceAttrs returns ONNX's defaults: all axes, keepdims=1.
func DefaultReduceAttrs() ReduceAttrs { return ReduceAttrs{KeepDims: true} }

// reducePlan describes a reduction of x over some axes.
type reducePlan struct {
	out      []int  // output shape
	rshape   []int  // extents of the reduce axes
	reduced  []bool // per input axis
	identity bool   // nothing to reduce
}

func planReduce(op, name string, x *Tensor, a ReduceAttrs) (*reducePlan, error) {
	rank := len(x.Shape)
	axes := a.Axes
	if len(axes) == 0 {
		if a.NoopWithEmptyAxes || rank == 0 {
			return &reducePlan{out: x.Shape, identity: true}, nil
		}
		axes = make([]int, rank)
		for i := range axes {
			axes[i] = i
		}
	}
	axes, err := normAxes(op, name, axes, rank)
	if err != nil {
		return nil, err
	}
	p := &reducePlan{reduced: make([]bool, rank)}
	for _, ax := range axes {
		p.reduced[ax] = true
	}
	for i, d := range x.Shape {
		switch {
		case !p.reduced[i]:
			p.out = append(p.out, d)
		case a.KeepDims:
			p.out = append(p.out, 1)
			p.rshape = append(p.rshape, d)
		default:
			p.rshape = append(p.rshape, d)
		}
	}
	if p.out == nil {
		p.out = []int{}
	}
	return p, nil
}

// index returns the index into x for output indices i and reduce indices r.
func (p *reducePlan) index(keep bool, i, r []tir.Expr) []tir.Expr {
	idx := make([]tir.Expr, len(p.reduced))
	oi, ri := 0, 0
	for ax, red := range p.reduced {
		if red {
			idx[ax] = r[ri]
			ri++
			if keep {
				oi++
			}
		} else {
			idx[ax] = i[oi]
			oi++
		}
	}
	return idx
}

func reduceOp(op, def, name string, x *Tensor, a ReduceAttrs, red Reducer, mean bool) (*Tensor, error) {
	name = orDefault(name, def)
	if err := checkInputs(op, name, x); err != nil {
		return nil, err
	}
	p, err := planReduce(op, name, x, a)
	if err != nil {
		return nil, err
	}
	if p.identity {
		return copyOf(name, x), nil
	}
	rname := name
	if mean {
		rname = name + "_sum"
	}
	t := Reduce(rname, p.out, red, p.rshape, func(i, r []tir.Expr) tir.Expr {
		return x.At(p.index(a.KeepDims, i, r)...)
	})
	if !mean {
		return t, nil
	}
	n := float64(numElems(p.rshape))
	return Compute(name, p.out, func(i []tir.Expr) tir.Expr { return tir.DivE(t.At(i...), tir.F32(n)) }), nil
}

// ReduceSum sums x over the axes.
func ReduceSum(name string, x *Tensor, a ReduceAttrs) (*Tensor, error) {
	return reduceOp("ReduceSum", "reduce_sum", name, x, a, Sum, false)
}

// ReduceMean averages x over the axes: a sum stage (name_sum), then a
// division by the element count.
func ReduceMean(name string, x *Tensor, a ReduceAttrs) (*Tensor, error) {
	return reduceOp("ReduceMean", "reduce_mean", name, x, a, Sum, true)
}

// ReduceMax is the maximum of x over the axes.
func ReduceMax(name string, x *Tensor, a ReduceAttrs) (*Tensor, error) {
	return reduceOp("ReduceMax", "reduce_max", name, x, a, MaxReduce, false)
}

// ReduceMin is the minimum of x over the axes.
func ReduceMin(name string, x *Tensor, a ReduceAttrs) (*Tensor, error) {
	return reduceOp("ReduceMin", "reduce_min", name, x, a, MinReduce, false)
}

// ReduceAxes combines x over the axes with any reducer (ReduceProd's
// ProdReduce, or the reducers of the library's own Reduce ops).
func ReduceAxes(name string, x *Tensor, a ReduceAttrs, red Reducer) (*Tensor, error) {
	return reduceOp("Reduce", "reduce", name, x, a, red, false)
}
