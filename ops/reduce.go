package ops

import (
	"tessera/te"
)

// Reductions over axes.

func init() {
	for _, name := range []string{"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceL1", "ReduceL2",
		"ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"} {
		define(&Op{Name: name, MinIn: 1, MaxIn: 2, Pattern: CommReduce, Lower: lowerReduce})
	}
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
