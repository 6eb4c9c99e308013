package ops

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/te"
	"github.com/tessera-ml/tessera/tir"
)

// Quantization. QuantizeLinear and DequantizeLinear are elementwise kernels
// (per tensor or per axis); the integer ops expand into them and float32
// MatMul and Conv: 8-bit operands minus their zero points are integers
// that float32 multiplies and sums exactly (within ±2^24), and the
// requantization rounds half to even and saturates as ONNX's reference
// does.

func init() {
	define(
		&Op{Name: "QuantizeLinear", MinIn: 2, MaxIn: 3, Pattern: Broadcast, OutType: quantType(2), Lower: lowerQuantize,
			Eval: evalQuantize, Layout: LayoutAxes, PermuteAxes: permuteQuantAxis},
		&Op{Name: "DequantizeLinear", MinIn: 2, MaxIn: 3, Pattern: Broadcast, OutType: fixed(graph.Float32), Lower: lowerDequantize,
			Eval: evalDequantize, Layout: LayoutAxes, PermuteAxes: permuteQuantAxis},
		&Op{Name: "DynamicQuantizeLinear", MinIn: 1, MaxIn: 1, Expand: expandDynamicQuantize},
		&Op{Name: "MatMulInteger", MinIn: 2, MaxIn: 4, Expand: expandIntegerOp("MatMul", false)},
		&Op{Name: "ConvInteger", MinIn: 2, MaxIn: 4, Expand: expandIntegerOp("Conv", false)},
		&Op{Name: "QLinearMatMul", MinIn: 8, MaxIn: 8, Pattern: OutEWiseFusable, Infer: inferQLinear(false),
			Lower: lowerQLinear(false), Expand: expandQLinear("MatMul")},
		&Op{Name: "QLinearConv", MinIn: 8, MaxIn: 9, Pattern: OutEWiseFusable, Layout: LayoutChannelsLast, Infer: inferQLinear(true),
			Lower: lowerQLinear(true), Expand: expandQLinear("Conv")},
	)
}

// quantRange is the range a quantized dtype saturates to.
func quantRange(dt graph.DType) (lo, hi float64, ok bool) {
	switch dt {
	case graph.Uint8:
		return 0, 255, true
	case graph.Int8:
		return -128, 127, true
	case graph.Uint16:
		return 0, 65535, true
	case graph.Int16:
		return -32768, 32767, true
	}
	return 0, 0, false
}

// checkScales refuses a constant scale of node n (inputs idx, those given)
// with an element that is zero, infinite or NaN: QuantizeLinear would
// divide by it, DequantizeLinear and the QLinear ops multiply by a
// degenerate one (quantizers write 1 for an empty range). A scale computed
// at run time is not checked.
func checkScales(g *graph.Graph, n *graph.Node, idx ...int) error {
	for _, i := range idx {
		if i >= len(n.Inputs) || n.Inputs[i] == "" {
			continue
		}
		t := g.ConstOf(n.Inputs[i])
		if t == nil || !t.DType.IsFloat() {
			continue
		}
		for k, v := range t.F32 {
			if v == 0 || math.IsInf(float64(v), 0) || math.IsNaN(float64(v)) {
				return fmt.Errorf("%s at node %s: scale %s element %d is %g: a quantization scale must be nonzero and finite", n.OpType, n.Name, n.Inputs[i], k, v)
			}
		}
	}
	return nil
}

// quantType is the output dtype of QuantizeLinear: the zero point's (input
// zp), else output_dtype (opset 21), else uint8.
func quantType(zp int) func(c *InferCtx) graph.DType {
	return func(c *InferCtx) graph.DType {
		if c.Has(zp) {
			return c.DType(zp)
		}
		if dt, err := c.dtypeAttr("output_dtype", graph.Uint8); err == nil && dt != graph.Undefined {
			return dt
		}
		return graph.Uint8
	}
}

// quantParam returns how element i of x reads a scale or zero point p: a
// scalar (or one element) everywhere, a vector along axis (per-axis
// quantization).
func quantParam(p *te.Tensor, x *te.Tensor, axis int) (func(i []tir.Expr) tir.Expr, error) {
	switch {
	case p == nil:
		return func([]tir.Expr) tir.Expr { return tir.F32(0) }, nil
	case len(p.Shape) == 0 || len(p.Shape) == 1 && p.Shape[0] == 1:
		if f, ok := p.Body.(*tir.FloatImm); ok && !p.IsPlaceholder() && p.Reducer == te.NoReduce {
			// A constant scalar is a literal of the kernel: a division by
			// it stays strictly inlineable (te.IsStrictlyInlineable), so a
			// QuantizeLinear is computed where its consumer stores (the
			// uint8 conversion) instead of in a float buffer of its own.
			return func([]tir.Expr) tir.Expr { return f }, nil
		}
		if len(p.Shape) == 0 {
			return func([]tir.Expr) tir.Expr { return p.At() }, nil
		}
		return func([]tir.Expr) tir.Expr { return p.At(te.Idx(0)) }, nil
	case len(p.Shape) == 1 && axis >= 0 && p.Shape[0] == x.Shape[axis]:
		return func(i []tir.Expr) tir.Expr { return p.At(i[axis]) }, nil
	}
	return nil, fmt.Errorf("scale or zero point %v fits neither a scalar nor axis %d of %v (blocked quantization is not supported)", p.Shape, axis, x.Shape)
}

// quantOperands returns x, scale and zero point readers and the axis.
func (c *lowerCtx) quantOperands() (x *te.Tensor, scale, zp func(i []tir.Expr) tir.Expr, err error) {
	if b, _ := c.n.Int("block_size", 0); b != 0 {
		return nil, nil, nil, graph.Unsupportedf("%s at node %s: blocked quantization (block_size %d)", c.n.OpType, c.n.Name, b)
	}
	if err := checkScales(c.g, c.n, 1); err != nil {
		return nil, nil, nil, err
	}
	if x, err = c.in(0); err != nil {
		return nil, nil, nil, err
	}
	s, err := c.in(1)
	if err != nil {
		return nil, nil, nil, err
	}
	z, err := c.opt(2)
	if err != nil {
		return nil, nil, nil, err
	}
	a, err := c.n.Int("axis", 1)
	if err != nil {
		return nil, nil, nil, err
	}
	axis := -1 // the axis matters to per-axis parameters only
	if (len(s.Shape) == 1 && s.Shape[0] > 1) || (z != nil && len(z.Shape) == 1 && z.Shape[0] > 1) {
		if axis, err = normAxisInt(int(a), len(x.Shape)); err != nil {
			return nil, nil, nil, err
		}
	}
	if scale, err = quantParam(s, x, axis); err != nil {
		return nil, nil, nil, err
	}
	if zp, err = quantParam(z, x, axis); err != nil {
		return nil, nil, nil, err
	}
	return x, scale, zp, nil
}

// lowerQuantize: saturate(round_half_even(x / scale) + zero_point).
func lowerQuantize(c *lowerCtx) ([]*te.Tensor, error) {
	x, scale, zp, err := c.quantOperands()
	if err != nil {
		return nil, err
	}
	dt := graph.Uint8
	if c.n.Input(2) != "" {
		dt = c.dtype(2)
	} else if v, err := c.n.Int("output_dtype", 0); err != nil {
		return nil, err
	} else if d, ok := graph.DTypeFromONNX(int32(v)); ok {
		dt = d
	}
	lo, hi, ok := quantRange(dt)
	if !ok {
		return nil, graph.Unsupportedf("QuantizeLinear at node %s: to %s", c.n.Name, dt)
	}
	// One stage: the reference evaluator rounds the quotient to float32
	// as a kernel does before rint (a quotient of 25.4999999 in float64
	// is 25.5 in float32, and rounds to 26).
	return []*te.Tensor{te.Compute(c.name(0), x.Shape, func(i []tir.Expr) tir.Expr {
		q := tir.AddE(tir.CallE("rint", tir.DivE(x.At(i...), scale(i))), zp(i))
		return tir.MinE(tir.MaxE(q, tir.F32(lo)), tir.F32(hi))
	})}, nil
}

// lowerDequantize: (x − zero_point)·scale.
func lowerDequantize(c *lowerCtx) ([]*te.Tensor, error) {
	x, scale, zp, err := c.quantOperands()
	if err != nil {
		return nil, err
	}
	return []*te.Tensor{te.Compute(c.name(0), x.Shape, func(i []tir.Expr) tir.Expr {
		return tir.MulE(tir.SubE(x.At(i...), zp(i)), scale(i))
	})}, nil
}

// saturate appends the nodes that round v half to even, add zero point zp
// (a float32 value, or ""), saturate to dt's range and cast to dt.
func (e *expander) saturate(v, zp string, dt graph.DType) (string, error) {
	lo, hi, ok := quantRange(dt)
	if !ok {
		return "", fmt.Errorf("quantized type %s", dt)
	}
	q := e.op("Round", nil, v)
	if zp != "" {
		q = e.op("Add", nil, q, zp)
	}
	q = e.op("Min", nil, e.op("Max", nil, q, e.scalar(float32(lo))), e.scalar(float32(hi)))
	return e.op("Cast", map[string]graph.Attr{"to": intAttr(int64(dt.ONNX()))}, q), nil
}

func (e *expander) toFloat(x string) string {
	return e.op("Cast", map[string]graph.Attr{"to": intAttr(int64(graph.Float32.ONNX()))}, x)
}

// expandDynamicQuantize: the scale and zero point that map [min(x, 0),
// max(x, 0)] onto uint8, then x quantized with them.
func expandDynamicQuantize(c *InferCtx) ([]*graph.Node, error) {
	if err := c.NeedFloat(0); err != nil {
		return nil, err
	}
	e := newExpander(c)
	x := c.N.Inputs[0]
	zero := e.scalar(0)
	lo := e.op("Min", nil, e.reduce("ReduceMin", x, nil, false), zero)
	hi := e.op("Max", nil, e.reduce("ReduceMax", x, nil, false), zero)
	scale := e.op("Div", nil, e.op("Sub", nil, hi, lo), e.scalar(255))
	zpf := e.op("Min", nil, e.op("Max", nil, e.op("Round", nil, e.op("Sub", nil, zero, e.op("Div", nil, lo, scale))), zero), e.scalar(255))
	y, err := e.saturate(e.op("Div", nil, x, scale), zpf, graph.Uint8)
	if err != nil {
		return nil, err
	}
	outs := []string{y, scale, e.op("Cast", map[string]graph.Attr{"to": intAttr(int64(graph.Uint8.ONNX()))}, zpf)}
	for k, o := range c.N.Outputs {
		if o != "" {
			e.write(o, "Identity", nil, outs[k])
		}
	}
	return e.nodes, nil
}

// qlinearType is a QLinear op's output type: its y zero point's, else
// uint8.
func qlinearType(c *InferCtx) graph.DType {
	if c.Has(qYZero) {
		return c.DType(qYZero)
	}
	return graph.Uint8
}

// expandQLinear keeps a QLinear node that has an integer form
// (integerForm) in a graph that runs on integer kernels
// (graph.Graph.Integer), and expands any other into float arithmetic.
func expandQLinear(op string) func(c *InferCtx) ([]*graph.Node, error) {
	float := expandIntegerOp(op, true)
	return func(c *InferCtx) ([]*graph.Node, error) {
		if err := checkScales(c.G, c.N, qXScale, qWScale, qYScale); err != nil {
			return nil, err
		}
		if !c.G.Integer {
			return float(c)
		}
		f, why := integerForm(c.G, c.N, op == "Conv", false)
		if f != nil {
			return []*graph.Node{c.N}, nil
		}
		c.G.Note("%s at node %s runs in float: %s", c.N.OpType, c.N.Name, why)
		return float(c)
	}
}

// expandIntegerOp expands MatMulInteger and ConvInteger (int32 results), and
// QLinearMatMul and QLinearConv (requantized), into float32 MatMul or Conv
// of the operands minus their zero points.
func expandIntegerOp(op string, qlinear bool) func(c *InferCtx) ([]*graph.Node, error) {
	return func(c *InferCtx) ([]*graph.Node, error) {
		n := c.N
		// Inputs: a, b and their zero points; QLinear interleaves scales:
		// a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp [, bias].
		ia, iaz, ib, ibz := 0, 2, 1, 3
		if qlinear {
			ia, iaz, ib, ibz = 0, 2, 3, 5
			if err := checkScales(c.G, n, 1, 4, 6); err != nil {
				return nil, err
			}
		}
		e := newExpander(c)
		rank := len(c.Shape(ia))
		// shift returns operand i minus its zero point zi, as float32; a
		// vector zero point applies per row of a MatMul's a (per output
		// channel of a Conv's weights), per column of its b.
		shift := func(i, zi int, rows bool) string {
			v := e.toFloat(n.Inputs[i])
			if !c.Has(zi) {
				return v
			}
			z := e.toFloat(n.Inputs[zi])
			if zs := c.Shape(zi); len(zs) == 1 && zs[0] > 1 && rows {
				for range len(c.Shape(i)) - len(zs) {
					z = e.unsqueeze(z, -1)
				}
			}
			return e.op("Sub", nil, v, z)
		}
		a := shift(ia, iaz, op == "MatMul")
		b := shift(ib, ibz, op == "Conv")
		attrs := map[string]graph.Attr{}
		if op == "Conv" {
			attrs = maps.Clone(n.Attrs)
		}
		acc := e.op(op, attrs, a, b)
		if !qlinear {
			e.write(n.Outputs[0], "Cast", map[string]graph.Attr{"to": intAttr(int64(graph.Int32.ONNX()))}, acc)
			return e.nodes, nil
		}
		if c.Has(8) {
			bias := e.toFloat(n.Inputs[8])
			for range rank - 2 {
				bias = e.unsqueeze(bias, -1)
			}
			acc = e.op("Add", nil, acc, bias)
		}
		// The multiplier a_scale·b_scale/y_scale, per row or column as the
		// scales are.
		as, bs := e.toFloat(n.Inputs[1]), e.toFloat(n.Inputs[4])
		if s := c.Shape(1); op == "MatMul" && len(s) == 1 && s[0] > 1 {
			as = e.unsqueeze(as, -1)
		}
		if s := c.Shape(4); op == "Conv" && len(s) == 1 && s[0] > 1 {
			for range rank - 2 {
				bs = e.unsqueeze(bs, -1)
			}
		}
		mult := e.op("Div", nil, e.op("Mul", nil, as, bs), n.Inputs[6])
		zp := ""
		if n.Input(7) != "" {
			zp = e.toFloat(n.Inputs[7])
		}
		dt := graph.Uint8
		if n.Input(7) != "" {
			dt = c.DType(7)
		}
		q, err := e.saturate(e.op("Mul", nil, acc, mult), zp, dt)
		if err != nil {
			return nil, c.Errorf("%v", err)
		}
		e.write(n.Outputs[0], "Identity", nil, q)
		return e.nodes, nil
	}
}

// Constant quantization. A weight's DequantizeLinear (an int8 constant,
// its scales and zero points) folds at build time into the float32
// constant the kernels read, as the kernel would compute it: every
// element is (x − zero_point)·scale, one float32 product of an exact
// integer, and QuantizeLinear of a constant rounds the float32 quotient
// half to even, adds the zero point and saturates. In float64 then
// rounded to float32 both give the float32 operation's result (a float64
// quotient or product rounded once more to float32 is the float32 one).

// quantParams returns, for a QuantizeLinear or DequantizeLinear of x, the
// scale and zero point of each element by flat index: per tensor, or per
// slice along the axis attribute.
func quantParams(c *InferCtx, in []*graph.Tensor) (scale func(int) float64, zp func(int) int64, err error) {
	x, s := in[0], in[1]
	var z *graph.Tensor
	if len(in) > 2 {
		z = in[2]
	}
	if b, _ := c.N.Int("block_size", 0); b != 0 {
		return nil, nil, graph.Unsupportedf("%s at node %s: blocked quantization (block_size %d)", c.N.OpType, c.N.Name, b)
	}
	if err := checkScales(c.G, c.N, 1); err != nil {
		return nil, nil, err
	}
	a, err := c.N.Int("axis", 1)
	if err != nil {
		return nil, nil, err
	}
	// stride and extent of the axis, for per-axis parameters.
	stride, extent := 1, 1
	if s.Len() > 1 || (z != nil && z.Len() > 1) {
		axis, err := normAxisInt(int(a), len(x.Shape))
		if err != nil {
			return nil, nil, err
		}
		extent = x.Shape[axis]
		for _, d := range x.Shape[axis+1:] {
			stride *= d
		}
	}
	at := func(t *graph.Tensor, i int) int {
		if t.Len() == 1 {
			return 0
		}
		return (i / stride) % extent
	}
	sf := s.Float64s()
	for _, v := range sf {
		if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, nil, fmt.Errorf("%s at node %s: scale %g (a scale must be finite and not zero)", c.N.OpType, c.N.Name, v)
		}
	}
	scale = func(i int) float64 { return sf[at(s, i)] }
	zp = func(int) int64 { return 0 }
	if z != nil {
		zi := z.Int64s()
		zp = func(i int) int64 { return zi[at(z, i)] }
	}
	return scale, zp, nil
}

func evalDequantize(c *InferCtx, in []*graph.Tensor) ([]*graph.Tensor, error) {
	if !in[0].DType.IsInt() {
		return nil, nil // float8 and the like: not folded
	}
	scale, zp, err := quantParams(c, in)
	if err != nil {
		return nil, err
	}
	x := in[0].I64
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(float64(v-zp(i)) * float64(float32(scale(i))))
	}
	return []*graph.Tensor{graph.Float32Tensor(slices.Clone(in[0].Shape), out)}, nil
}

func evalQuantize(c *InferCtx, in []*graph.Tensor) ([]*graph.Tensor, error) {
	if in[0].DType != graph.Float32 {
		return nil, nil
	}
	dt := c.Out[0].DType
	lo, hi, ok := quantRange(dt)
	if !ok {
		return nil, nil
	}
	scale, zp, err := quantParams(c, in)
	if err != nil {
		return nil, err
	}
	x := in[0].F32
	out := make([]int64, len(x))
	for i, v := range x {
		q := math.RoundToEven(float64(float32(float64(v)/float64(float32(scale(i)))))) + float64(zp(i))
		out[i] = int64(min(max(q, lo), hi))
	}
	return []*graph.Tensor{{DType: dt, Shape: slices.Clone(in[0].Shape), I64: out}}, nil
}

// permuteQuantAxis: the axis attribute of QuantizeLinear and
// DequantizeLinear (default 1) names the axis per-axis scales and zero
// points run along; per-tensor ones work in any layout.
func permuteQuantAxis(g *graph.Graph, n *graph.Node, perm []int) bool {
	a, err := n.Int("axis", 1)
	if err != nil {
		return false
	}
	p, ok := permutedAxis(perm, a)
	if !ok {
		return !perAxisQuant(g, n)
	}
	n.SetAttr("axis", graph.Attr{Kind: graph.AttrInt, I: p})
	return true
}

// perAxisQuant reports whether n's scale or zero point has more than one
// element (or is not known).
func perAxisQuant(g *graph.Graph, n *graph.Node) bool {
	for _, i := range []int{1, 2} {
		if name := n.Input(i); name != "" {
			v := g.Values[name]
			if v == nil || v.Shape == nil || graph.NumElems(v.Shape) > 1 {
				return true
			}
		}
	}
	return false
}
