package ops

import (
	"fmt"
	"slices"

	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/te"
	"github.com/tessera-ml/tessera/tir"
)

// Ops that read their data at run-time indices: Gather, GatherElements,
// OneHot (their computes are te's: te/ops_index.go), and Trilu (a mask of
// its indices). The bounds of their indices are Indices (indices.go);
// OneHot has none: ONNX makes an index out of range a row of off_value.

func init() {
	define(
		&Op{Name: "Gather", MinIn: 2, MaxIn: 2, Pattern: Injective, Infer: inferGather, Eval: evalGather, Lower: lowerGather, Indices: axisIndices},
		&Op{Name: "GatherElements", MinIn: 2, MaxIn: 2, Pattern: Injective, Lower: lowerGatherElements, Indices: axisIndices},
		&Op{Name: "OneHot", MinIn: 3, MaxIn: 3, Pattern: Injective, OutType: sameAs(2), Lower: lowerOneHot},
		&Op{Name: "Trilu", MinIn: 1, MaxIn: 2, Pattern: Injective, Lower: lowerTrilu},
		&Op{Name: "ReverseSequence", MinIn: 2, MaxIn: 2, Pattern: Injective, Lower: lowerReverseSequence, Indices: reverseSequenceIndices},
		&Op{Name: "GridSample", MinIn: 2, MaxIn: 2, Pattern: Injective, Lower: lowerGridSample},
	)
}

// gatherOperands returns the data, the indices and the axis attribute of
// Gather, GatherElements and ScatterElements.
func (c *lowerCtx) gatherOperands() (x, idx *te.Tensor, axis int, err error) {
	if x, err = c.in(0); err != nil {
		return nil, nil, 0, err
	}
	if idx, err = c.in(1); err != nil {
		return nil, nil, 0, err
	}
	a, err := c.n.Int("axis", 0)
	return x, idx, int(a), err
}

func lowerGather(c *lowerCtx) ([]*te.Tensor, error) {
	x, idx, axis, err := c.gatherOperands()
	if err != nil {
		return nil, err
	}
	return one(te.Gather(c.name(0), x, idx, axis))
}

func lowerGatherElements(c *lowerCtx) ([]*te.Tensor, error) {
	x, idx, axis, err := c.gatherOperands()
	if err != nil {
		return nil, err
	}
	return one(te.GatherElements(c.name(0), x, idx, axis))
}

// lowerOneHot: depth must be a constant.
func lowerOneHot(c *lowerCtx) ([]*te.Tensor, error) {
	idx, err := c.in(0)
	if err != nil {
		return nil, err
	}
	dt := c.g.ConstOf(c.n.Input(1))
	if dt == nil {
		return nil, &graph.NotConstantError{Value: c.n.Input(1), Node: c.n.Name, Op: c.n.OpType, What: "depth"}
	}
	if dt.Len() != 1 {
		return nil, fmt.Errorf("depth has shape %v, want one element", dt.Shape)
	}
	vals, err := c.in(2)
	if err != nil {
		return nil, err
	}
	a, err := c.n.Int("axis", -1)
	if err != nil {
		return nil, err
	}
	return one(te.OneHot(c.name(0), idx, vals, int(dt.Float64s()[0]), int(a)))
}

// lowerTrilu keeps the upper (or lower) triangle of the last two axes
// from diagonal k (a constant input, default 0) and zeroes the rest.
func lowerTrilu(c *lowerCtx) ([]*te.Tensor, error) {
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	if len(x.Shape) < 2 {
		return nil, fmt.Errorf("input %v has rank < 2", x.Shape)
	}
	k := int64(0)
	if name := c.n.Input(1); name != "" {
		t := c.g.ConstOf(name)
		if t == nil {
			return nil, &graph.NotConstantError{Value: name, Node: c.n.Name, Op: c.n.OpType, What: "k"}
		}
		if t.Len() != 1 {
			return nil, fmt.Errorf("k has shape %v, want one element", t.Shape)
		}
		k = t.Int64s()[0]
	}
	upper, err := c.n.Int("upper", 1)
	if err != nil {
		return nil, err
	}
	r := len(x.Shape)
	return []*te.Tensor{te.Compute(c.name(0), x.Shape, func(i []tir.Expr) tir.Expr {
		d := tir.SubE(i[r-1], i[r-2]) // column - row
		keep := tir.Cmp(tir.GE, d, tir.Const(k))
		if upper == 0 {
			keep = tir.Cmp(tir.LE, d, tir.Const(k))
		}
		return tir.SelectE(keep, x.At(i...), tir.F32(0))
	})}, nil
}

func inferGather(c *InferCtx) error {
	x := c.Shape(0)
	a, err := c.N.Int("axis", 0)
	if err != nil {
		return err
	}
	axis, err := c.NormAxis(a, len(x))
	if err != nil {
		return err
	}
	if c.DType(1) != graph.Int64 {
		return c.Errorf("indices are %s", c.DType(1))
	}
	// Constant indices out of range are refused before (Op.Indices).
	out := append(append(slices.Clone(x[:axis]), c.Shape(1)...), x[axis+1:]...)
	c.Set(0, c.DType(0), out)
	return nil
}

func evalGather(c *InferCtx, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x := in[0].Shape
	a, _ := c.N.Int("axis", 0)
	axis, _ := c.NormAxis(a, len(x))
	ir := len(in[1].Shape)
	st := graph.Strides(x)
	ist := graph.Strides(in[1].Shape)
	var bad error
	t := remap(in[0], c.Out[0].Shape, func(idx []int) int {
		s := 0
		for i := range axis {
			s += idx[i] * st[i]
		}
		k := 0
		for i := range ir {
			k += idx[axis+i] * ist[i]
		}
		j := in[1].I64[k]
		if j < 0 {
			j += int64(x[axis])
		}
		if j < 0 || j >= int64(x[axis]) {
			bad = c.Errorf("index %d out of range [0, %d)", in[1].I64[k], x[axis])
			j = 0
		}
		s += int(j) * st[axis]
		for i := axis + 1; i < len(x); i++ {
			s += idx[ir+i-1] * st[i]
		}
		return s
	})
	return []*graph.Tensor{t}, bad
}

func lowerReverseSequence(c *lowerCtx) ([]*te.Tensor, error) {
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	lens, err := c.in(1)
	if err != nil {
		return nil, err
	}
	ta, err := c.n.Int("time_axis", 0)
	if err != nil {
		return nil, err
	}
	ba, err := c.n.Int("batch_axis", 1)
	if err != nil {
		return nil, err
	}
	return one(te.ReverseSequence(c.name(0), x, lens, int(ta), int(ba)))
}

func lowerGridSample(c *lowerCtx) ([]*te.Tensor, error) {
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	grid, err := c.in(1)
	if err != nil {
		return nil, err
	}
	mode, err := c.n.Str("mode", "bilinear")
	if err != nil {
		return nil, err
	}
	if c.opset >= 20 && !c.n.HasAttr("mode") {
		mode = "linear"
	}
	pad, err := c.n.Str("padding_mode", "zeros")
	if err != nil {
		return nil, err
	}
	ac, err := c.n.Int("align_corners", 0)
	if err != nil {
		return nil, err
	}
	if len(x.Shape) != 4 {
		return nil, graph.Unsupportedf("GridSample at node %s: a %d-D image (2-D images are supported)", c.n.Name, len(x.Shape)-2)
	}
	return one(te.GridSample(c.name(0), x, grid, mode, pad, ac != 0))
}
