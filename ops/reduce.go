package ops

import (
	"fmt"
	"slices"

	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/te"
	"github.com/tessera-ml/tessera/tir"
)

// Reductions over axes.

func init() {
	for _, name := range []string{"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceL1", "ReduceL2",
		"ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp", "ReduceProd"} {
		define(&Op{Name: name, MinIn: 1, MaxIn: 2, Pattern: CommReduce, Lower: lowerReduce})
	}
	define(
		&Op{Name: "ArgMax", MinIn: 1, MaxIn: 1, Pattern: CommReduce, OutType: fixed(graph.Int64), Lower: lowerArg},
		&Op{Name: "ArgMin", MinIn: 1, MaxIn: 1, Pattern: CommReduce, OutType: fixed(graph.Int64), Lower: lowerArg},
		&Op{Name: "Hardmax", MinIn: 1, MaxIn: 1, Pattern: CommReduce, Lower: lowerHardmax},
		&Op{Name: "CumSum", MinIn: 2, MaxIn: 2, Pattern: CommReduce, Lower: lowerCumSum},
		&Op{Name: "TopK", MinIn: 1, MaxIn: 2, Pattern: Opaque, Infer: inferTopK, Lower: lowerTopK},
	)
}

// topK reads TopK's k (the attribute before opset 10, a constant input
// after) and axis.
func topK(g *graph.Graph, n *graph.Node, rank int) (k, axis int, err error) {
	v, ok, err := graph.IntsParam(g, n, 1, "k", "k")
	if err != nil {
		return 0, 0, err
	}
	if !ok || len(v) != 1 {
		return 0, 0, n.Errorf("k %v, want one value", v)
	}
	a, err := n.Int("axis", -1)
	if err != nil {
		return 0, 0, err
	}
	axis, err = normAxisInt(int(a), rank)
	return int(v[0]), axis, err
}

func inferTopK(c *InferCtx) error {
	k, axis, err := topK(c.G, c.N, len(c.Shape(0)))
	if err != nil {
		return err
	}
	if k <= 0 || k > c.Shape(0)[axis] {
		return c.Errorf("k %d for an axis of %d", k, c.Shape(0)[axis])
	}
	out := slices.Clone(c.Shape(0))
	out[axis] = k
	c.Set(0, c.DType(0), out)
	c.Set(1, graph.Int64, out)
	return nil
}

// lowerTopK: the order is always sorted (sorted=0 allows any).
func lowerTopK(c *lowerCtx) ([]*te.Tensor, error) {
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	k, axis, err := topK(c.g, c.n, len(x.Shape))
	if err != nil {
		return nil, err
	}
	largest, err := c.n.Int("largest", 1)
	if err != nil {
		return nil, err
	}
	v, idx, err := te.TopK(c.name(0), x, k, axis, largest != 0)
	if err != nil {
		return nil, err
	}
	return []*te.Tensor{v, idx}, nil
}

// lowerCumSum: the axis is a constant input (a scalar).
func lowerCumSum(c *lowerCtx) ([]*te.Tensor, error) {
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	t := c.g.ConstOf(c.n.Input(1))
	if t == nil {
		return nil, &graph.NotConstantError{Value: c.n.Input(1), Node: c.n.Name, Op: c.n.OpType, What: "axis"}
	}
	if t.Len() != 1 {
		return nil, fmt.Errorf("axis has shape %v, want one element", t.Shape)
	}
	ex, err := c.n.Int("exclusive", 0)
	if err != nil {
		return nil, err
	}
	rev, err := c.n.Int("reverse", 0)
	if err != nil {
		return nil, err
	}
	return one(te.CumSum(c.name(0), x, int(t.Int64s()[0]), ex != 0, rev != 0))
}

// lowerReduce lowers the Reduce ops. Axes are an attribute, or an input
// from opset 13 (ReduceSum) or 18 (the others). ReduceL1, ReduceL2,
// ReduceSumSquare, ReduceLogSum and ReduceLogSumExp are compositions.
func lowerReduce(c *lowerCtx) ([]*te.Tensor, error) {
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	axes, _, err := c.intsParam(1, "axes", "axes")
	if err != nil {
		return nil, err
	}
	keep, err := c.n.Int("keepdims", 1)
	if err != nil {
		return nil, err
	}
	noop, err := c.n.Int("noop_with_empty_axes", 0)
	if err != nil {
		return nil, err
	}
	a := te.ReduceAttrs{Axes: axes, KeepDims: keep != 0, NoopWithEmptyAxes: noop != 0}
	out := c.name(0)
	switch c.n.OpType {
	case "ReduceSum":
		return one(te.ReduceSum(out, x, a))
	case "ReduceMean":
		return one(te.ReduceMean(out, x, a))
	case "ReduceMax":
		return one(te.ReduceMax(out, x, a))
	case "ReduceMin":
		return one(te.ReduceMin(out, x, a))
	case "ReduceProd":
		return one(te.ReduceAxes(out, x, a, te.ProdReduce))
	case "ReduceL1":
		ab, err := te.Abs(c.sub("abs"), x)
		if err != nil {
			return nil, err
		}
		return one(te.ReduceSum(out, ab, a))
	case "ReduceL2", "ReduceSumSquare":
		sq, err := te.Mul(c.sub("sq"), x, x)
		if err != nil {
			return nil, err
		}
		if c.n.OpType == "ReduceSumSquare" {
			return one(te.ReduceSum(out, sq, a))
		}
		s, err := te.ReduceSum(c.sub("sum"), sq, a)
		if err != nil {
			return nil, err
		}
		return one(te.Sqrt(out, s))
	case "ReduceLogSum":
		s, err := te.ReduceSum(c.sub("sum"), x, a)
		if err != nil {
			return nil, err
		}
		return one(te.Log(out, s))
	}
	// ReduceLogSumExp: m + log(sum(exp(x - m))), m the maximum (kept dims).
	km := a
	km.KeepDims = true
	m, err := te.ReduceMax(c.sub("max"), x, km)
	if err != nil {
		return nil, err
	}
	d, err := te.Sub(c.sub("shifted"), x, m)
	if err != nil {
		return nil, err
	}
	e, err := te.Exp(c.sub("exp"), d)
	if err != nil {
		return nil, err
	}
	s, err := te.ReduceSum(c.sub("sum"), e, a)
	if err != nil {
		return nil, err
	}
	l, err := te.Log(c.sub("log"), s)
	if err != nil {
		return nil, err
	}
	mr, err := te.Reshape(c.sub("max_r"), m, s.Shape, false)
	if err != nil {
		return nil, err
	}
	return one(te.Add(out, l, mr))
}

// argIndex is the index along axis of x's first (or, with last, final)
// extreme element, kept as an extent-1 axis when keep: the extreme by a
// max (or min) reduction, then the least (greatest) index holding it.
func (c *lowerCtx) argIndex(name string, x *te.Tensor, axis int, keep, last, isMax bool) (*te.Tensor, error) {
	rank := len(x.Shape)
	axis, err := normAxisInt(axis, rank)
	if err != nil {
		return nil, err
	}
	red := te.MaxReduce
	if !isMax {
		red = te.MinReduce
	}
	m, err := te.ReduceAxes(c.sub("extreme"), x, te.ReduceAttrs{Axes: []int{axis}, KeepDims: true}, red)
	if err != nil {
		return nil, err
	}
	n := x.Shape[axis]
	out := slices.Clone(x.Shape)
	if keep {
		out[axis] = 1
	} else {
		out = slices.Delete(out, axis, axis+1)
	}
	pick, miss := te.MinReduce, tir.F32(float64(n))
	if last {
		pick, miss = te.MaxReduce, tir.F32(-1)
	}
	return te.Reduce(name, out, pick, []int{n}, func(i, r []tir.Expr) tir.Expr {
		xi := slices.Clone(i)
		if keep {
			xi[axis] = r[0]
		} else {
			xi = slices.Insert(xi, axis, r[0])
		}
		mi := slices.Clone(xi)
		mi[axis] = tir.Const(0)
		hit := tir.Cmp(tir.EQ, x.At(xi...), m.At(mi...))
		return tir.SelectE(hit, &tir.Cast{To: tir.Float32, X: r[0]}, miss)
	}), nil
}

// lowerArg lowers ArgMax and ArgMin (int64 indices).
func lowerArg(c *lowerCtx) ([]*te.Tensor, error) {
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	axis, err := c.n.Int("axis", 0)
	if err != nil {
		return nil, err
	}
	keep, err := c.n.Int("keepdims", 1)
	if err != nil {
		return nil, err
	}
	last, err := c.n.Int("select_last_index", 0)
	if err != nil {
		return nil, err
	}
	return one(c.argIndex(c.name(0), x, int(axis), keep != 0, last != 0, c.n.OpType == "ArgMax"))
}

// lowerHardmax: 1 at the first maximum along axis, 0 elsewhere. Before
// opset 13 the input is coerced to 2-D at axis (default 1), as Softmax.
func lowerHardmax(c *lowerCtx) ([]*te.Tensor, error) {
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	def := int64(-1)
	if c.opset < 13 {
		def = 1
	}
	a, err := c.n.Int("axis", def)
	if err != nil {
		return nil, err
	}
	axis, err := normAxisInt(int(a), len(x.Shape))
	if err != nil {
		return nil, err
	}
	src := x
	if c.opset < 13 {
		if src, err = te.Flatten(c.sub("flat"), x, axis); err != nil {
			return nil, err
		}
		axis = 1
	}
	am, err := c.argIndex(c.sub("argmax"), src, axis, true, false, true)
	if err != nil {
		return nil, err
	}
	name := c.name(0)
	if c.opset < 13 {
		name = c.sub("2d")
	}
	h := te.Compute(name, src.Shape, func(i []tir.Expr) tir.Expr {
		ai := slices.Clone(i)
		ai[axis] = tir.Const(0)
		return boolE(tir.Cmp(tir.EQ, &tir.Cast{To: tir.Float32, X: i[axis]}, am.At(ai...)))
	})
	if c.opset < 13 {
		return one(te.Reshape(c.name(0), h, x.Shape, false))
	}
	return []*te.Tensor{h}, nil
}

// normAxisInt maps axis in [-rank, rank) to [0, rank).
func normAxisInt(axis, rank int) (int, error) {
	if axis < -rank || axis >= rank {
		return 0, fmt.Errorf("axis %d out of range for rank %d", axis, rank)
	}
	if axis < 0 {
		axis += rank
	}
	return axis, nil
}
