package partition

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"

	"tessera/graph"
	"tessera/ops"
	"tessera/te"
	"tessera/tir"
)

// Lowering: graph node → te tensors.
//
//	graph.Node ──lowerings[op]──▶ te op library calls ──▶ []*te.Tensor
//
// Each entry of lowerings maps one ONNX op, opset differences included, to
// calls of te's op library (compositions of library ops for the ONNX ops
// the library has no single definition for: Elu is Relu, Min and Exp).
// Operands that are data become te tensors; operands that parametrize the
// op (Reshape's shape, Clip's bounds, Pad's pads, axes, ...) must be
// constants and become attributes. A constant used as data (a weight) is a
// placeholder: weights are inputs of the kernel, not baked into it.

// Lowered is a graph (or a part of one) mapped to te tensors.
type Lowered struct {
	Outputs []*te.Tensor          // one per graph output, in order
	Values  map[string]*te.Tensor // every lowered value by name
	// Sources names the graph value behind each placeholder: a graph input
	// or a constant (whose data Feed supplies).
	Sources map[*te.Tensor]string

	g *graph.Graph
}

// TensorSource returns the te tensor for a graph value read by a node: an
// already lowered value, or a new placeholder for a graph input or a
// constant.
type TensorSource func(name string) (*te.Tensor, error)

// Lower maps every node of g (shapes inferred, passes run) to te tensors
// and returns the tensors of the graph outputs, so that
// te.NewDAG(l.Outputs...) computes the whole graph. A graph output that is
// a graph input or a constant gets a copy stage.
func Lower(g *graph.Graph) (*Lowered, error) {
	l := &Lowered{Values: map[string]*te.Tensor{}, Sources: map[*te.Tensor]string{}, g: g}
	for _, n := range g.Nodes {
		outs, err := LowerNode(g, n, l.tensor)
		if err != nil {
			return nil, err
		}
		for i, o := range n.Outputs {
			if o != "" && i < len(outs) {
				l.Values[o] = outs[i]
			}
		}
	}
	for _, o := range g.Outputs {
		t, err := l.tensor(o)
		if err != nil {
			return nil, err
		}
		if t.IsPlaceholder() {
			if t, err = te.Reshape(o+"_copy", t, t.Shape, false); err != nil {
				return nil, err
			}
		}
		l.Outputs = append(l.Outputs, t)
	}
	return l, nil
}

// tensor is Lower's TensorSource.
func (l *Lowered) tensor(name string) (*te.Tensor, error) {
	if t, ok := l.Values[name]; ok {
		return t, nil
	}
	v := l.g.Values[name]
	if v == nil {
		return nil, fmt.Errorf("value %s is not defined", name)
	}
	if v.Const == nil && !l.g.IsInput(name) {
		return nil, fmt.Errorf("value %s is read before it is computed", name)
	}
	if v.DType != graph.Float32 && v.Const == nil {
		return nil, graph.Unsupportedf("graph input %s is %s (only float32 data reaches the kernels)", name, v.DType)
	}
	if err := checkShape(name, v.Shape); err != nil {
		return nil, err
	}
	t := te.Placeholder(name, v.Shape...)
	t.Const = v.Const != nil
	l.Values[name] = t
	l.Sources[t] = name
	return t, nil
}

func checkShape(name string, shape []int) error {
	for _, d := range shape {
		if d == 0 {
			return graph.Unsupportedf("value %s is empty (shape %v)", name, shape)
		}
	}
	return nil
}

// Feed returns the input data of d (a DAG over tensors of l) in the order
// of d.Inputs: graph inputs from inputs (by name), constants from the
// graph (int64 constants converted to float32).
func (l *Lowered) Feed(d *te.DAG, inputs map[string][]float32) ([][]float32, error) {
	out := make([][]float32, len(d.Inputs))
	for i, t := range d.Inputs {
		name, ok := l.Sources[t]
		if !ok {
			return nil, fmt.Errorf("placeholder %s does not come from the graph", t.Name)
		}
		if c := l.g.Values[name].Const; c != nil {
			if c.DType == graph.Int64 {
				f := make([]float32, len(c.I64))
				for k, v := range c.I64 {
					f[k] = float32(v)
				}
				out[i] = f
			} else {
				out[i] = c.F32
			}
			continue
		}
		data, ok := inputs[name]
		if !ok {
			return nil, fmt.Errorf("no data for graph input %s", name)
		}
		out[i] = data
	}
	return out, nil
}

// lowerCtx is what a lowering function sees.
type lowerCtx struct {
	g      *graph.Graph
	n      *graph.Node
	opset  int
	src    TensorSource
	consts int // scalar constants made so far
}

type lowerFunc func(c *lowerCtx) ([]*te.Tensor, error)

// LowerNode maps node n of g to te tensors, one per output of n (nil for
// an omitted output); src supplies the tensors of the values n reads as
// data. Unsupported ops fail with "unsupported op X (opset N) at node
// NAME"; errors name the node.
func LowerNode(g *graph.Graph, n *graph.Node, src TensorSource) ([]*te.Tensor, error) {
	opset := g.OpsetOf(n)
	f, ok := lowerings[n.OpType]
	if !ok || n.Domain != "" {
		return nil, &graph.UnsupportedOpError{Op: n.OpType, Domain: n.Domain, Opset: opset, Node: n.Name}
	}
	for _, o := range n.Outputs {
		if v := g.Values[o]; o != "" && v != nil {
			if v.DType != graph.Float32 {
				return nil, graph.Unsupportedf("%s at node %s: output %s is %s computed at run time", n.OpType, n.Name, o, v.DType)
			}
			if err := checkShape(o, v.Shape); err != nil {
				return nil, fmt.Errorf("%s at node %s: %w", n.OpType, n.Name, err)
			}
		}
	}
	outs, err := f(&lowerCtx{g: g, n: n, opset: opset, src: src})
	if err != nil {
		var uo *graph.UnsupportedOpError
		var nc *graph.NotConstantError
		if errors.As(err, &uo) || errors.As(err, &nc) || errors.Is(err, graph.ErrUnsupported) {
			return nil, err
		}
		return nil, n.Errorf("%v", err)
	}
	for i, t := range outs {
		if i < len(n.Outputs) && t != nil {
			if v := g.Values[n.Outputs[i]]; v != nil && !slices.Equal(v.Shape, t.Shape) {
				return nil, n.Errorf("lowered output %s has shape %v, shape inference says %v", n.Outputs[i], t.Shape, v.Shape)
			}
		}
	}
	return outs, nil
}

// OpNames lists the ops Lower supports, sorted.
func OpNames() []string {
	out := make([]string, 0, len(lowerings))
	for op := range lowerings {
		out = append(out, op)
	}
	sort.Strings(out)
	return out
}

// Helpers.

// name is the te name of output i (intermediates add a suffix).
func (c *lowerCtx) name(i int) string { return c.n.Outputs[i] }

func (c *lowerCtx) sub(suffix string) string { return c.n.Outputs[0] + "_" + suffix }

// in returns data input i.
func (c *lowerCtx) in(i int) (*te.Tensor, error) {
	name := c.n.Input(i)
	if name == "" {
		return nil, fmt.Errorf("input %d is missing", i)
	}
	return c.src(name)
}

// opt returns optional data input i, or nil.
func (c *lowerCtx) opt(i int) (*te.Tensor, error) {
	if c.n.Input(i) == "" {
		return nil, nil
	}
	return c.in(i)
}

// ins returns every data input.
func (c *lowerCtx) ins() ([]*te.Tensor, error) {
	out := make([]*te.Tensor, len(c.n.Inputs))
	for i := range c.n.Inputs {
		t, err := c.in(i)
		if err != nil {
			return nil, err
		}
		out[i] = t
	}
	return out, nil
}

func (c *lowerCtx) ints(attr string) ([]int, error) {
	v, err := c.n.Ints(attr)
	if err != nil || v == nil {
		return nil, err
	}
	return toInts(v), nil
}

// intsParam is graph.IntsParam for this node, converted to int.
func (c *lowerCtx) intsParam(i int, attr, what string) ([]int, bool, error) {
	v, ok, err := graph.IntsParam(c.g, c.n, i, attr, what)
	return toInts(v), ok, err
}

func toInts(v []int64) []int {
	if v == nil {
		return nil
	}
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x)
	}
	return out
}

// scalar returns a constant rank-0 tensor (inlined into its readers).
func (c *lowerCtx) scalar(v float64) *te.Tensor {
	c.consts++
	return te.Compute(fmt.Sprintf("%s_c%d", c.n.Outputs[0], c.consts), []int{}, func([]tir.Expr) tir.Expr { return tir.F32(v) })
}

// lowerWithInts lowers an op of one data input and one integer list that
// is the attribute attr in older opsets and the second input in newer ones
// (Squeeze and Unsqueeze axes from opset 13, Expand's shape always).
func lowerWithInts(attr, what string, op func(name string, x *te.Tensor, v []int) (*te.Tensor, error)) lowerFunc {
	return func(c *lowerCtx) ([]*te.Tensor, error) {
		x, err := c.in(0)
		if err != nil {
			return nil, err
		}
		v, _, err := c.intsParam(1, attr, what)
		if err != nil {
			return nil, err
		}
		return one(op(c.name(0), x, v))
	}
}

func one(t *te.Tensor, err error) ([]*te.Tensor, error) {
	if err != nil {
		return nil, err
	}
	return []*te.Tensor{t}, nil
}

// lowerings maps each supported ONNX op of the default domain to its
// lowering.
var lowerings = map[string]lowerFunc{}

func init() {
	unary := map[string]func(string, *te.Tensor) (*te.Tensor, error){
		"Relu": te.Relu, "Sigmoid": te.Sigmoid, "Tanh": te.Tanh, "Exp": te.Exp, "Log": te.Log,
		"Sqrt": te.Sqrt, "Erf": te.Erf, "Neg": te.Neg, "Abs": te.Abs, "Reciprocal": te.Reciprocal,
		"HardSwish": te.HardSwish,
	}
	for op, f := range unary {
		lowerings[op] = func(c *lowerCtx) ([]*te.Tensor, error) {
			x, err := c.in(0)
			if err != nil {
				return nil, err
			}
			return one(f(c.name(0), x))
		}
	}
	binary := map[string]func(string, *te.Tensor, *te.Tensor) (*te.Tensor, error){
		"Add": te.Add, "Sub": te.Sub, "Mul": te.Mul, "Div": te.Div, "Pow": te.Pow,
	}
	for op, f := range binary {
		lowerings[op] = func(c *lowerCtx) ([]*te.Tensor, error) {
			a, err := c.in(0)
			if err != nil {
				return nil, err
			}
			b, err := c.in(1)
			if err != nil {
				return nil, err
			}
			return one(f(c.name(0), a, b))
		}
	}
	for op, f := range map[string]func(string, ...*te.Tensor) (*te.Tensor, error){"Max": te.Max, "Min": te.Min} {
		lowerings[op] = func(c *lowerCtx) ([]*te.Tensor, error) {
			xs, err := c.ins()
			if err != nil {
				return nil, err
			}
			return one(f(c.name(0), xs...))
		}
	}
	for _, op := range []string{"Identity", "Dropout"} {
		lowerings[op] = lowerCopy
	}
	for _, op := range []string{"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceL1", "ReduceL2",
		"ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"} {
		lowerings[op] = lowerReduce
	}
	for op, f := range map[string]lowerFunc{
		"LeakyRelu": lowerLeakyRelu, "HardSigmoid": lowerHardSigmoid, "Gelu": lowerGelu, "Clip": lowerClip,
		"Elu": lowerElu, "Selu": lowerElu, "Celu": lowerCelu, "Softplus": lowerSoftplus, "Softsign": lowerSoftsign,
		"PRelu": lowerPRelu, "Sum": lowerSum, "Mean": lowerSum,
		"MatMul": lowerMatMul, "Gemm": lowerGemm, "Conv": lowerConv,
		"MaxPool": lowerPool, "AveragePool": lowerPool, "GlobalAveragePool": lowerGlobalPool, "GlobalMaxPool": lowerGlobalPool,
		"BatchNormalization": lowerBatchNorm, "LayerNormalization": lowerLayerNorm, "InstanceNormalization": lowerInstanceNorm,
		"Softmax": lowerSoftmax, "LogSoftmax": lowerSoftmax,
		"Reshape": lowerReshape, "Flatten": lowerFlatten, "Squeeze": lowerWithInts("axes", "axes", te.Squeeze), "Unsqueeze": lowerWithInts("axes", "axes", te.Unsqueeze),
		"Transpose": lowerTranspose, "Concat": lowerConcat, "Slice": lowerSlice, "Pad": lowerPad,
		"Expand": lowerWithInts("", "shape", te.Expand), "Tile": lowerTile, "Split": lowerSplit,
		"DepthToSpace": lowerDepthToSpace, "SpaceToDepth": lowerSpaceToDepth,
	} {
		lowerings[op] = f
	}
}

// lowerCopy lowers Identity and inference-mode Dropout (left when the
// remove-noops pass is off) to a copy stage.
func lowerCopy(c *lowerCtx) ([]*te.Tensor, error) {
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	return one(te.Reshape(c.name(0), x, x.Shape, false))
}

func lowerLeakyRelu(c *lowerCtx) ([]*te.Tensor, error) {
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	alpha, err := c.n.Float("alpha", 0.01)
	if err != nil {
		return nil, err
	}
	return one(te.LeakyRelu(c.name(0), x, alpha))
}

func lowerHardSigmoid(c *lowerCtx) ([]*te.Tensor, error) {
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	alpha, err := c.n.Float("alpha", 0.2)
	if err != nil {
		return nil, err
	}
	beta, err := c.n.Float("beta", 0.5)
	if err != nil {
		return nil, err
	}
	return one(te.HardSigmoid(c.name(0), x, alpha, beta))
}

func lowerGelu(c *lowerCtx) ([]*te.Tensor, error) {
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	a, err := c.n.Str("approximate", "none")
	if err != nil {
		return nil, err
	}
	return one(te.Gelu(c.name(0), x, a))
}

// lowerClip: min and max are attributes before opset 11, optional inputs
// from 11 on.
func lowerClip(c *lowerCtx) ([]*te.Tensor, error) {
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	var bounds [2]*float32
	for i, what := range []string{"min", "max"} {
		v, ok, err := graph.FloatParam(c.g, c.n, 1+i, what, what)
		if err != nil {
			return nil, err
		}
		if ok {
			bounds[i] = &v
		}
	}
	return one(te.Clip(c.name(0), x, bounds[0], bounds[1]))
}

// negPart returns min(x, 0).
func (c *lowerCtx) negPart(x *te.Tensor) (*te.Tensor, error) {
	return te.Min(c.sub("neg"), x, c.scalar(0))
}

// lowerElu: Elu = relu(x) + alpha*(exp(min(x, 0)) - 1); Selu is gamma
// times the same with its own defaults.
func lowerElu(c *lowerCtx) ([]*te.Tensor, error) {
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	alpha, gamma := float32(1), float32(1)
	if c.n.OpType == "Selu" {
		alpha, gamma = 1.67326319217681884765625, 1.05070102214813232421875
		if gamma, err = c.n.Float("gamma", gamma); err != nil {
			return nil, err
		}
	}
	if alpha, err = c.n.Float("alpha", alpha); err != nil {
		return nil, err
	}
	neg, err := c.negPart(x)
	if err != nil {
		return nil, err
	}
	scaled, err := c.expm1Scaled(neg, alpha)
	if err != nil {
		return nil, err
	}
	pos, err := te.Relu(c.sub("pos"), x)
	if err != nil {
		return nil, err
	}
	if gamma == 1 {
		return one(te.Add(c.name(0), pos, scaled))
	}
	sum, err := te.Add(c.sub("sum"), pos, scaled)
	if err != nil {
		return nil, err
	}
	return one(te.Mul(c.name(0), sum, c.scalar(float64(gamma))))
}

// expm1Scaled returns alpha·(exp(y) − 1), the negative branch of Elu,
// Selu and Celu.
func (c *lowerCtx) expm1Scaled(y *te.Tensor, alpha float32) (*te.Tensor, error) {
	e, err := te.Exp(c.sub("exp"), y)
	if err != nil {
		return nil, err
	}
	em1, err := te.Sub(c.sub("expm1"), e, c.scalar(1))
	if err != nil {
		return nil, err
	}
	return te.Mul(c.sub("scaled"), em1, c.scalar(float64(alpha)))
}

// lowerCelu: max(0, x) + min(0, alpha*(exp(x/alpha) - 1)).
func lowerCelu(c *lowerCtx) ([]*te.Tensor, error) {
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	alpha, err := c.n.Float("alpha", 1)
	if err != nil {
		return nil, err
	}
	xs, err := te.Div(c.sub("div"), x, c.scalar(float64(alpha)))
	if err != nil {
		return nil, err
	}
	scaled, err := c.expm1Scaled(xs, alpha)
	if err != nil {
		return nil, err
	}
	neg, err := c.negPart(scaled)
	if err != nil {
		return nil, err
	}
	pos, err := te.Relu(c.sub("pos"), x)
	if err != nil {
		return nil, err
	}
	return one(te.Add(c.name(0), pos, neg))
}

// lowerSoftplus: log(exp(x) + 1).
func lowerSoftplus(c *lowerCtx) ([]*te.Tensor, error) {
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	e, err := te.Exp(c.sub("exp"), x)
	if err != nil {
		return nil, err
	}
	s, err := te.Add(c.sub("add"), e, c.scalar(1))
	if err != nil {
		return nil, err
	}
	return one(te.Log(c.name(0), s))
}

// lowerSoftsign: x / (1 + |x|).
func lowerSoftsign(c *lowerCtx) ([]*te.Tensor, error) {
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	a, err := te.Abs(c.sub("abs"), x)
	if err != nil {
		return nil, err
	}
	d, err := te.Add(c.sub("add"), a, c.scalar(1))
	if err != nil {
		return nil, err
	}
	return one(te.Div(c.name(0), x, d))
}

// lowerPRelu: max(x, 0) + slope * min(x, 0).
func lowerPRelu(c *lowerCtx) ([]*te.Tensor, error) {
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	slope, err := c.in(1)
	if err != nil {
		return nil, err
	}
	if ss := ops.PReLUSlopeShape(c.opset, x.Shape, slope.Shape); !slices.Equal(ss, slope.Shape) {
		if slope, err = te.Reshape(c.sub("slope"), slope, ss, false); err != nil {
			return nil, err
		}
	}
	pos, err := te.Relu(c.sub("pos"), x)
	if err != nil {
		return nil, err
	}
	neg, err := c.negPart(x)
	if err != nil {
		return nil, err
	}
	sn, err := te.Mul(c.sub("scaled"), neg, slope)
	if err != nil {
		return nil, err
	}
	return one(te.Add(c.name(0), pos, sn))
}

// lowerSum lowers Sum (a chain of Adds) and Mean (the sum divided by the
// input count).
func lowerSum(c *lowerCtx) ([]*te.Tensor, error) {
	xs, err := c.ins()
	if err != nil {
		return nil, err
	}
	mean := c.n.OpType == "Mean"
	if len(xs) == 1 {
		return lowerCopy(c)
	}
	acc := xs[0]
	for i, x := range xs[1:] {
		name := c.sub(fmt.Sprintf("add%d", i))
		if i == len(xs)-2 && !mean {
			name = c.name(0)
		}
		if acc, err = te.Add(name, acc, x); err != nil {
			return nil, err
		}
	}
	if !mean {
		return []*te.Tensor{acc}, nil
	}
	return one(te.Div(c.name(0), acc, c.scalar(float64(len(xs)))))
}

func lowerMatMul(c *lowerCtx) ([]*te.Tensor, error) {
	a, err := c.in(0)
	if err != nil {
		return nil, err
	}
	b, err := c.in(1)
	if err != nil {
		return nil, err
	}
	return one(te.MatMul(c.name(0), a, b))
}

// lowerGemm: C is required before opset 11 and optional after; opsets
// before 7 carry a "broadcast" attribute that the unidirectional
// broadcasting of later opsets subsumes.
func lowerGemm(c *lowerCtx) ([]*te.Tensor, error) {
	a, err := c.in(0)
	if err != nil {
		return nil, err
	}
	b, err := c.in(1)
	if err != nil {
		return nil, err
	}
	cc, err := c.opt(2)
	if err != nil {
		return nil, err
	}
	attrs := te.DefaultGemmAttrs()
	if attrs.Alpha, err = c.n.Float("alpha", 1); err != nil {
		return nil, err
	}
	if attrs.Beta, err = c.n.Float("beta", 1); err != nil {
		return nil, err
	}
	ta, err := c.n.Int("transA", 0)
	if err != nil {
		return nil, err
	}
	tb, err := c.n.Int("transB", 0)
	if err != nil {
		return nil, err
	}
	attrs.TransA, attrs.TransB = ta != 0, tb != 0
	if attrs.Beta == 0 {
		cc = nil
	}
	return one(te.Gemm(c.name(0), a, b, cc, attrs))
}

func lowerConv(c *lowerCtx) ([]*te.Tensor, error) {
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	w, err := c.in(1)
	if err != nil {
		return nil, err
	}
	b, err := c.opt(2)
	if err != nil {
		return nil, err
	}
	var a te.ConvAttrs
	if a.AutoPad, err = c.n.Str("auto_pad", "NOTSET"); err != nil {
		return nil, err
	}
	g, err := c.n.Int("group", 1)
	if err != nil {
		return nil, err
	}
	a.Group = int(g)
	for attr, dst := range map[string]*[]int{"dilations": &a.Dilations, "kernel_shape": &a.KernelShape, "pads": &a.Pads, "strides": &a.Strides} {
		if *dst, err = c.ints(attr); err != nil {
			return nil, err
		}
	}
	return one(te.Conv(c.name(0), x, w, b, a))
}

// lowerPool lowers MaxPool and AveragePool (output Y only: shape inference
// rejects a used Indices output). Dilations exist for MaxPool from opset
// 10 and AveragePool from 19; ceil_mode from 10.
func lowerPool(c *lowerCtx) ([]*te.Tensor, error) {
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	var a te.PoolAttrs
	if a.AutoPad, err = c.n.Str("auto_pad", "NOTSET"); err != nil {
		return nil, err
	}
	ceil, err := c.n.Int("ceil_mode", 0)
	if err != nil {
		return nil, err
	}
	cip, err := c.n.Int("count_include_pad", 0)
	if err != nil {
		return nil, err
	}
	a.CeilMode, a.CountIncludePad = ceil != 0, cip != 0
	for attr, dst := range map[string]*[]int{"dilations": &a.Dilations, "kernel_shape": &a.KernelShape, "pads": &a.Pads, "strides": &a.Strides} {
		if *dst, err = c.ints(attr); err != nil {
			return nil, err
		}
	}
	if c.n.OpType == "MaxPool" {
		return one(te.MaxPool(c.name(0), x, a))
	}
	return one(te.AveragePool(c.name(0), x, a))
}

func lowerGlobalPool(c *lowerCtx) ([]*te.Tensor, error) {
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	if c.n.OpType == "GlobalMaxPool" {
		return one(te.GlobalMaxPool(c.name(0), x))
	}
	return one(te.GlobalAveragePool(c.name(0), x))
}

// lowerBatchNorm lowers inference-mode BatchNormalization (shape inference
// rejects training mode and its extra outputs).
func lowerBatchNorm(c *lowerCtx) ([]*te.Tensor, error) {
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

// outShape returns the inferred shape of output i.
func (c *lowerCtx) outShape(i int) []int { return c.g.Values[c.n.Outputs[i]].Shape }

// lowerReshape: the shape is an attribute before opset 5, an input after;
// it is resolved (0 and -1) by shape inference.
func lowerReshape(c *lowerCtx) ([]*te.Tensor, error) {
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	if _, _, err := c.intsParam(1, "shape", "shape"); err != nil {
		return nil, err
	}
	return one(te.Reshape(c.name(0), x, c.outShape(0), false))
}

func lowerFlatten(c *lowerCtx) ([]*te.Tensor, error) {
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	axis, err := c.n.Int("axis", 1)
	if err != nil {
		return nil, err
	}
	return one(te.Flatten(c.name(0), x, int(axis)))
}

func lowerTranspose(c *lowerCtx) ([]*te.Tensor, error) {
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	perm, err := c.ints("perm")
	if err != nil {
		return nil, err
	}
	return one(te.Transpose(c.name(0), x, perm))
}

func lowerConcat(c *lowerCtx) ([]*te.Tensor, error) {
	xs, err := c.ins()
	if err != nil {
		return nil, err
	}
	axis, err := c.n.Int("axis", 1) // required from opset 4; 1 before
	if err != nil {
		return nil, err
	}
	if len(xs) == 1 {
		return lowerCopy(c)
	}
	return one(te.Concat(c.name(0), int(axis), xs...))
}

// lowerSlice: starts, ends and axes are attributes before opset 10; from
// 10 they and steps are inputs.
func lowerSlice(c *lowerCtx) ([]*te.Tensor, error) {
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	sp, err := ops.ResolveSlice(c.g, c.n, x.Shape)
	if err != nil {
		return nil, err
	}
	var a te.SliceAttrs
	for ax := range x.Shape {
		a.Axes = append(a.Axes, ax)
		a.Starts = append(a.Starts, sp.Start[ax])
		a.Steps = append(a.Steps, sp.Step[ax])
		a.Ends = append(a.Ends, sp.Start[ax]+sp.Step[ax]*sp.Count[ax])
		if sp.Step[ax] < 0 && a.Ends[ax] < 0 {
			a.Ends[ax] = math.MinInt // one past the first element, going down
		}
	}
	return one(te.Slice(c.name(0), x, a))
}

// lowerPad: pads (and the constant value) are attributes before opset 11
// ("paddings" in opset 1), inputs after; axes an input from 18.
func lowerPad(c *lowerCtx) ([]*te.Tensor, error) {
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	p, err := ops.ResolvePads(c.g, c.n, len(x.Shape))
	if err != nil {
		return nil, err
	}
	mode, err := c.n.Str("mode", "constant")
	if err != nil {
		return nil, err
	}
	v, _, err := graph.FloatParam(c.g, c.n, 2, "value", "constant_value")
	if err != nil {
		return nil, err
	}
	return one(te.Pad(c.name(0), x, te.PadAttrs{Mode: mode, Pads: append(slices.Clone(p.Begin), p.End...), Value: v}))
}

// lowerTile concatenates copies along each repeated axis.
func lowerTile(c *lowerCtx) ([]*te.Tensor, error) {
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	reps, _, err := c.intsParam(1, "", "repeats")
	if err != nil {
		return nil, err
	}
	cur := x
	last := -1
	for ax, r := range reps {
		if r > 1 {
			last = ax
		}
	}
	if last < 0 {
		return lowerCopy(c)
	}
	for ax, r := range reps {
		if r <= 1 {
			continue
		}
		copies := make([]*te.Tensor, r)
		for i := range copies {
			copies[i] = cur
		}
		name := c.sub(fmt.Sprintf("tile%d", ax))
		if ax == last {
			name = c.name(0)
		}
		if cur, err = te.Concat(name, ax, copies...); err != nil {
			return nil, err
		}
	}
	return []*te.Tensor{cur}, nil
}

// lowerSplit slices each output; the sizes are an attribute before opset
// 13, an input after, else equal parts.
func lowerSplit(c *lowerCtx) ([]*te.Tensor, error) {
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	axis, sizes, err := ops.SplitSizes(c.g, c.n, x.Shape)
	if err != nil {
		return nil, err
	}
	outs := make([]*te.Tensor, len(sizes))
	start := 0
	for i, s := range sizes {
		if c.n.Outputs[i] != "" {
			t, err := te.Slice(c.n.Outputs[i], x, te.SliceAttrs{Starts: []int{start}, Ends: []int{start + s}, Axes: []int{axis}})
			if err != nil {
				return nil, err
			}
			outs[i] = t
		}
		start += s
	}
	return outs, nil
}

// reshapeTransposeReshape is DepthToSpace and SpaceToDepth: view x as mid,
// permute, view as the output shape.
func (c *lowerCtx) reshapeTransposeReshape(x *te.Tensor, mid, perm []int) ([]*te.Tensor, error) {
	r, err := te.Reshape(c.sub("split"), x, mid, false)
	if err != nil {
		return nil, err
	}
	t, err := te.Transpose(c.sub("perm"), r, perm)
	if err != nil {
		return nil, err
	}
	return one(te.Reshape(c.name(0), t, c.outShape(0), false))
}

func lowerDepthToSpace(c *lowerCtx) ([]*te.Tensor, error) {
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	b64, err := c.n.Int("blocksize", 0)
	if err != nil {
		return nil, err
	}
	mode, err := c.n.Str("mode", "DCR")
	if err != nil {
		return nil, err
	}
	b := int(b64)
	n, ch, h, w := x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
	switch mode {
	case "DCR":
		return c.reshapeTransposeReshape(x, []int{n, b, b, ch / (b * b), h, w}, []int{0, 3, 4, 1, 5, 2})
	case "CRD":
		return c.reshapeTransposeReshape(x, []int{n, ch / (b * b), b, b, h, w}, []int{0, 1, 4, 2, 5, 3})
	}
	return nil, fmt.Errorf("unknown mode %q", mode)
}

func lowerSpaceToDepth(c *lowerCtx) ([]*te.Tensor, error) {
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	b64, err := c.n.Int("blocksize", 0)
	if err != nil {
		return nil, err
	}
	b := int(b64)
	n, ch, h, w := x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
	return c.reshapeTransposeReshape(x, []int{n, ch, h / b, b, w / b, b}, []int{0, 3, 5, 1, 2, 4})
}
