package ops

import (
	"fmt"
	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/te"
)

// Normalizations and softmax.

func init() {
	define(
		// Inference-mode BatchNormalization that could not be folded into
		// a Conv or Gemm is a per-channel affine map.
		&Op{Name: "BatchNormalization", MinIn: 5, MaxIn: 5, Pattern: Broadcast, Lower: lowerBatchNorm},
		&Op{Name: "LayerNormalization", MinIn: 2, MaxIn: 3, Pattern: CommReduce, Lower: lowerLayerNorm},
		&Op{Name: "InstanceNormalization", MinIn: 3, MaxIn: 3, Pattern: CommReduce, Lower: lowerInstanceNorm},
		&Op{Name: "Softmax", MinIn: 1, MaxIn: 1, Pattern: CommReduce, Lower: lowerSoftmax},
		&Op{Name: "LogSoftmax", MinIn: 1, MaxIn: 1, Pattern: CommReduce, Lower: lowerSoftmax},
		&Op{Name: "LRN", MinIn: 1, MaxIn: 1, Pattern: CommReduce, Lower: lowerLRN},
		// MeanVarianceNormalization is an ONNX function: its body.
		&Op{Name: "MeanVarianceNormalization", MinIn: 1, MaxIn: 1, Expand: expandMVN},
	)
}

func lowerLRN(c *lowerCtx) ([]*te.Tensor, error) {
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	size, err := c.n.Int("size", 0)
	if err != nil {
		return nil, err
	}
	if !c.n.HasAttr("size") {
		return nil, fmt.Errorf("no size attribute")
	}
	alpha, err := c.n.Float("alpha", 1e-4)
	if err != nil {
		return nil, err
	}
	beta, err := c.n.Float("beta", 0.75)
	if err != nil {
		return nil, err
	}
	bias, err := c.n.Float("bias", 1)
	if err != nil {
		return nil, err
	}
	return one(te.LRN(c.name(0), x, int(size), alpha, beta, bias))
}

// expandMVN writes MeanVarianceNormalization's function body: (X − E[X]) /
// (√(E[X²] − E[X]²) + 1e−9) over axes (default [0, 2, 3]).
func expandMVN(c *InferCtx) ([]*graph.Node, error) {
	axes, err := c.N.Ints("axes")
	if err != nil {
		return nil, err
	}
	if axes == nil {
		axes = []int64{0, 2, 3}
	}
	if _, err := c.NormAxes(axes, len(c.Shape(0))); err != nil {
		return nil, err
	}
	e := newExpander(c)
	x := c.N.Inputs[0]
	mean := e.reduceMean(x, axes)
	meanSq := e.reduceMean(e.op("Mul", nil, x, x), axes)
	std := e.op("Sqrt", nil, e.op("Sub", nil, meanSq, e.op("Mul", nil, mean, mean)))
	y := e.op("Div", nil, e.op("Sub", nil, x, mean), e.op("Add", nil, std, e.scalar(1e-9)))
	e.write(c.N.Outputs[0], "Identity", nil, y)
	return e.nodes, nil
}

// lowerBatchNorm lowers inference-mode BatchNormalization (shape inference
// rejects training mode and its extra outputs).
func lowerBatchNorm(c *lowerCtx) ([]*te.Tensor, error) {
	for i := 1; i < len(c.n.Outputs); i++ {
		if c.n.Outputs[i] != "" {
			return nil, graph.Unsupportedf("BatchNormalization at node %s: output %d (training-mode statistics)", c.n.Name, i)
		}
	}
	if tm, _ := c.n.Int("training_mode", 0); tm != 0 {
		return nil, graph.Unsupportedf("BatchNormalization at node %s: training mode", c.n.Name)
	}
	xs, err := c.ins()
	if err != nil {
		return nil, err
	}
	eps, err := c.n.Float("epsilon", 1e-5)
	if err != nil {
		return nil, err
	}
	if s, _ := c.n.Int("spatial", 1); s == 0 {
		return nil, graph.Unsupportedf("BatchNormalization at node %s: spatial=0", c.n.Name)
	}
	return one(te.BatchNormalization(c.name(0), xs[0], xs[1], xs[2], xs[3], xs[4], eps))
}

// lowerLayerNorm lowers LayerNormalization (opset 17); the optional Mean
// and InvStdDev outputs are computed separately when they are used.
func lowerLayerNorm(c *lowerCtx) ([]*te.Tensor, error) {
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	scale, err := c.in(1)
	if err != nil {
		return nil, err
	}
	bias, err := c.opt(2)
	if err != nil {
		return nil, err
	}
	axis, err := c.n.Int("axis", -1)
	if err != nil {
		return nil, err
	}
	eps, err := c.n.Float("epsilon", 1e-5)
	if err != nil {
		return nil, err
	}
	y, err := te.LayerNormalization(c.name(0), x, scale, bias, int(axis), eps)
	if err != nil {
		return nil, err
	}
	outs := []*te.Tensor{y}
	if len(c.n.Outputs) > 1 && (c.n.Outputs[1] != "" || len(c.n.Outputs) > 2 && c.n.Outputs[2] != "") {
		rank := len(x.Shape)
		ax := int(axis)
		if ax < 0 {
			ax += rank
		}
		var axes []int
		for i := ax; i < rank; i++ {
			axes = append(axes, i)
		}
		mean, rstd, err := c.moments(x, axes, float64(eps), nameOr(c.n.Outputs[1], c.sub("mean")), nameOr(c.n.Output(2), c.sub("rstd")))
		if err != nil {
			return nil, err
		}
		outs = append(outs, mean, rstd)
	}
	return outs, nil
}

func nameOr(name, def string) string {
	if name == "" {
		return def
	}
	return name
}

// moments returns the mean of x over axes (kept as extent 1) and
// 1/sqrt(variance + eps).
func (c *lowerCtx) moments(x *te.Tensor, axes []int, eps float64, meanName, rstdName string) (mean, rstd *te.Tensor, err error) {
	ra := te.ReduceAttrs{Axes: axes, KeepDims: true}
	if mean, err = te.ReduceMean(meanName, x, ra); err != nil {
		return nil, nil, err
	}
	d, err := te.Sub(c.sub("centered"), x, mean)
	if err != nil {
		return nil, nil, err
	}
	sq, err := te.Mul(c.sub("sq"), d, d)
	if err != nil {
		return nil, nil, err
	}
	v, err := te.ReduceMean(c.sub("var"), sq, ra)
	if err != nil {
		return nil, nil, err
	}
	ve, err := te.Add(c.sub("var_eps"), v, c.scalar(eps))
	if err != nil {
		return nil, nil, err
	}
	sd, err := te.Sqrt(c.sub("std"), ve)
	if err != nil {
		return nil, nil, err
	}
	rstd, err = te.Reciprocal(rstdName, sd)
	return mean, rstd, err
}

// lowerInstanceNorm: (x - mean) * rstd * scale[c] + bias[c], moments over
// the spatial axes.
func lowerInstanceNorm(c *lowerCtx) ([]*te.Tensor, error) {
	xs, err := c.ins()
	if err != nil {
		return nil, err
	}
	x, scale, bias := xs[0], xs[1], xs[2]
	eps, err := c.n.Float("epsilon", 1e-5)
	if err != nil {
		return nil, err
	}
	rank := len(x.Shape)
	if rank < 3 {
		return nil, fmt.Errorf("input %v must be [N, C, D...]", x.Shape)
	}
	var axes []int
	for i := 2; i < rank; i++ {
		axes = append(axes, i)
	}
	mean, rstd, err := c.moments(x, axes, float64(eps), c.sub("mean"), c.sub("rstd"))
	if err != nil {
		return nil, err
	}
	chShape := append([]int{x.Shape[1]}, make([]int, rank-2)...)
	for i := 1; i < len(chShape); i++ {
		chShape[i] = 1
	}
	sc, err := te.Reshape(c.sub("scale"), scale, chShape, false)
	if err != nil {
		return nil, err
	}
	bi, err := te.Reshape(c.sub("bias"), bias, chShape, false)
	if err != nil {
		return nil, err
	}
	d, err := te.Sub(c.sub("d"), x, mean)
	if err != nil {
		return nil, err
	}
	nrm, err := te.Mul(c.sub("norm"), d, rstd)
	if err != nil {
		return nil, err
	}
	s, err := te.Mul(c.sub("scaled"), nrm, sc)
	if err != nil {
		return nil, err
	}
	return one(te.Add(c.name(0), s, bi))
}

// lowerSoftmax lowers Softmax and LogSoftmax. From opset 13 they normalize
// along one axis (default -1); before, the input is coerced to 2-D at axis
// (default 1) and normalized along the flattened trailing axes.
func lowerSoftmax(c *lowerCtx) ([]*te.Tensor, error) {
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	f := te.Softmax
	if c.n.OpType == "LogSoftmax" {
		f = te.LogSoftmax
	}
	def := int64(-1)
	if c.opset < 13 {
		def = 1
	}
	axis, err := c.n.Int("axis", def)
	if err != nil {
		return nil, err
	}
	rank := len(x.Shape)
	if axis < -int64(rank) || axis >= int64(rank) {
		return nil, fmt.Errorf("axis %d out of range for rank %d", axis, rank)
	}
	if axis < 0 {
		axis += int64(rank)
	}
	if c.opset >= 13 || int(axis) == rank-1 {
		return one(f(c.name(0), x, int(axis)))
	}
	flat, err := te.Flatten(c.sub("flat"), x, int(axis))
	if err != nil {
		return nil, err
	}
	s, err := f(c.sub("2d"), flat, 1)
	if err != nil {
		return nil, err
	}
	return one(te.Reshape(c.name(0), s, x.Shape, false))
}
