package ops

import (
	"fmt"

	"github.com/tessera-ml/tessera/graph"
)

// onnxruntime's quantized contrib ops (domain com.microsoft), which its
// quantizer writes in the QOperator format (quantize_static with
// QuantFormat.QOperator) around the standard QLinearConv and
// QLinearMatMul: QLinearAdd, QLinearMul, QLinearSigmoid,
// QLinearLeakyRelu, QLinearGlobalAveragePool, QLinearAveragePool,
// QLinearConcat and QGemm. Each expands into the QDQ form of its float op,
// Q(op(DQ(a), DQ(b), ...)), which the graph passes then take as they take
// a QDQ model's: fuse-qlinear turns a QGemm's into a QLinearConv, the
// residual Add and the pools are fused into the integer kernels'
// epilogues, and lookup-tables tabulates the sigmoid and the leaky ReLU.
// Numbers are the QDQ form's (round half to even, saturate), which
// onnxruntime's own kernels approximate in fixed point (within a step).

// ContribDomain is the domain of onnxruntime's contrib ops.
const ContribDomain = "com.microsoft"

// contrib holds the ops of ContribDomain by name.
var contrib = map[string]*Op{}

func init() {
	for _, op := range []*Op{
		{Name: "QLinearAdd", MinIn: 7, MaxIn: 8, Expand: expandQLinearBinary("Add")},
		{Name: "QLinearMul", MinIn: 7, MaxIn: 8, Expand: expandQLinearBinary("Mul")},
		{Name: "QLinearSigmoid", MinIn: 4, MaxIn: 5, Expand: expandQLinearUnary("Sigmoid")},
		{Name: "QLinearLeakyRelu", MinIn: 4, MaxIn: 5, Expand: expandQLinearUnary("LeakyRelu")},
		{Name: "QLinearGlobalAveragePool", MinIn: 5, MaxIn: 5, Expand: expandQLinearPool("GlobalAveragePool")},
		{Name: "QLinearAveragePool", MinIn: 4, MaxIn: 5, Expand: expandQLinearPool("AveragePool")},
		{Name: "QLinearConcat", MinIn: 5, MaxIn: -1, Expand: expandQLinearConcat},
		{Name: "QGemm", MinIn: 6, MaxIn: 9, Expand: expandQGemm},
	} {
		if _, dup := contrib[op.Name]; dup {
			panic("ops: " + op.Name + " defined twice")
		}
		contrib[op.Name] = op
	}
}

// qdq builds the QDQ form of a contrib op: DequantizeLinear of its
// quantized inputs, QuantizeLinear of its result.
type qdq struct {
	*expander
	c *InferCtx
}

// newQDQ starts the expansion of c's node after checking that its inputs
// quantized are 8-bit and its constant scales sound (checkScales).
func newQDQ(c *InferCtx, quantized []int, scales ...int) (qdq, error) {
	e := newExpander(c)
	e.opset = c.G.Opset // the nodes it writes are of the default domain
	q := qdq{e, c}
	for _, i := range quantized {
		if dt := c.DType(i); dt != graph.Uint8 && dt != graph.Int8 {
			return q, fmt.Errorf("%s: input %d is %s, want uint8 or int8", c.N.OpType, i, dt)
		}
	}
	return q, checkScales(c.G, c.N, scales...)
}

// zeroPoint returns input i, the zero point of quantized input x, or, where
// it is omitted, a constant 0 of x's type (a QuantizeLinear without one
// makes uint8).
func (q qdq) zeroPoint(i, x int) string {
	if q.c.Has(i) {
		return q.n.Inputs[i]
	}
	return q.constant(&graph.Tensor{DType: q.c.DType(x), Shape: []int{}, I64: []int64{0}})
}

// dq dequantizes input x by inputs scale and zp (zp omitted: 0).
func (q qdq) dq(x, scale, zp int) string {
	return q.op("DequantizeLinear", nil, q.n.Inputs[x], q.n.Inputs[scale], q.zeroPoint(zp, x))
}

// quantize writes the node's output: v quantized by inputs scale and zp,
// of the type of input like where zp is omitted.
func (q qdq) quantize(v string, scale, zp, like int) []*graph.Node {
	q.write(q.n.Outputs[0], "QuantizeLinear", nil, v, q.n.Inputs[scale], q.zeroPoint(zp, like))
	return q.nodes
}

// expandQLinearBinary: QLinearAdd and QLinearMul (A, A_scale, A_zero_point,
// B, B_scale, B_zero_point, C_scale, C_zero_point; broadcasting).
func expandQLinearBinary(op string) func(c *InferCtx) ([]*graph.Node, error) {
	return func(c *InferCtx) ([]*graph.Node, error) {
		q, err := newQDQ(c, []int{0, 3}, 1, 4, 6)
		if err != nil {
			return nil, err
		}
		v := q.op(op, nil, q.dq(0, 1, 2), q.dq(3, 4, 5))
		return q.quantize(v, 6, 7, 0), nil
	}
}

// expandQLinearUnary: QLinearSigmoid and QLinearLeakyRelu (X, X_scale,
// X_zero_point, Y_scale, Y_zero_point; LeakyRelu's alpha).
func expandQLinearUnary(op string) func(c *InferCtx) ([]*graph.Node, error) {
	return func(c *InferCtx) ([]*graph.Node, error) {
		q, err := newQDQ(c, []int{0}, 1, 3)
		if err != nil {
			return nil, err
		}
		attrs := map[string]graph.Attr{}
		if op == "LeakyRelu" {
			alpha, err := c.N.Float("alpha", 0.01)
			if err != nil {
				return nil, err
			}
			attrs["alpha"] = floatAttr(alpha)
		}
		v := q.op(op, attrs, q.dq(0, 1, 2))
		return q.quantize(v, 3, 4, 0), nil
	}
}

// expandQLinearPool: QLinearGlobalAveragePool and QLinearAveragePool (X,
// x_scale, x_zero_point, y_scale, y_zero_point; the pool's attributes and
// channels_last: X is N, spatial..., C, and so is the output).
func expandQLinearPool(op string) func(c *InferCtx) ([]*graph.Node, error) {
	return func(c *InferCtx) ([]*graph.Node, error) {
		q, err := newQDQ(c, []int{0}, 1, 3)
		if err != nil {
			return nil, err
		}
		last, err := c.N.Int("channels_last", 0)
		if err != nil {
			return nil, err
		}
		attrs := map[string]graph.Attr{}
		for k, a := range c.N.Attrs {
			if k != "channels_last" {
				attrs[k] = a
			}
		}
		v := q.dq(0, 1, 2)
		r := int64(len(c.Shape(0)))
		if last != 0 {
			// N, spatial..., C → N, C, spatial... and back.
			in, out := []int64{0, r - 1}, []int64{0}
			for k := int64(1); k < r-1; k++ {
				in = append(in, k)
				out = append(out, k+1)
			}
			out = append(out, 1)
			v = q.transpose(q.op(op, attrs, q.transpose(v, in...)), out...)
		} else {
			v = q.op(op, attrs, v)
		}
		return q.quantize(v, 3, 4, 0), nil
	}
}

// expandQLinearConcat: QLinearConcat (Y_scale, Y_zero_point, then X,
// X_scale, X_zero_point for each input; axis).
func expandQLinearConcat(c *InferCtx) ([]*graph.Node, error) {
	if (len(c.N.Inputs)-2)%3 != 0 {
		return nil, fmt.Errorf("QLinearConcat: %d inputs, want Y_scale, Y_zero_point and triples of X, X_scale, X_zero_point", len(c.N.Inputs))
	}
	axis, err := c.N.Int("axis", 0)
	if err != nil {
		return nil, err
	}
	if !c.N.HasAttr("axis") {
		return nil, fmt.Errorf("QLinearConcat: attribute axis is required")
	}
	quantized, scales := []int{}, []int{0}
	for i := 2; i < len(c.N.Inputs); i += 3 {
		quantized, scales = append(quantized, i), append(scales, i+1)
	}
	q, err := newQDQ(c, quantized, scales...)
	if err != nil {
		return nil, err
	}
	var xs []string
	for _, i := range quantized {
		xs = append(xs, q.dq(i, i+1, i+2))
	}
	v := q.op("Concat", map[string]graph.Attr{"axis": intAttr(axis)}, xs...)
	return q.quantize(v, 0, 1, 2), nil
}

// expandQGemm: QGemm (A, a_scale, a_zero_point, B, b_scale, b_zero_point,
// C, y_scale, y_zero_point; transA, transB, alpha): Gemm of the dequantized
// operands plus C, an int32 bias of scale a_scale·b_scale (per output
// column with a per-column b_scale) and zero point 0; quantized by y_scale
// where it is given, else the float result.
func expandQGemm(c *InferCtx) ([]*graph.Node, error) {
	q, err := newQDQ(c, []int{0, 3}, 1, 4, 7)
	if err != nil {
		return nil, err
	}
	if alpha, err := c.N.Float("alpha", 1); err != nil {
		return nil, err
	} else if alpha != 1 {
		return nil, graph.Unsupportedf("QGemm at node %s: alpha %g (1 is supported)", c.N.Name, alpha)
	}
	attrs := map[string]graph.Attr{}
	for _, k := range []string{"transA", "transB"} {
		if a, ok := c.N.Attrs[k]; ok {
			attrs[k] = a
		}
	}
	b := q.n.Inputs[4]
	bAxis := map[string]graph.Attr{}
	if n := graph.NumElems(c.Shape(4)); n > 1 {
		// Per output column: B's axis 1, or 0 when it is transposed.
		t, err := c.N.Int("transB", 0)
		if err != nil {
			return nil, err
		}
		bAxis["axis"] = intAttr(1 - t)
	}
	ins := []string{q.dq(0, 1, 2), q.op("DequantizeLinear", bAxis, q.n.Inputs[3], b, q.zeroPoint(5, 3))}
	if c.Has(6) {
		scale := q.op("Mul", nil, q.n.Inputs[1], b)
		cAxis := map[string]graph.Attr{}
		if len(bAxis) > 0 {
			cAxis["axis"] = intAttr(0) // C is [N]
		}
		ins = append(ins, q.op("DequantizeLinear", cAxis, q.n.Inputs[6], scale))
	}
	v := q.op("Gemm", attrs, ins...)
	if !c.Has(7) {
		q.write(q.n.Outputs[0], "Identity", nil, v)
		return q.nodes, nil
	}
	return q.quantize(v, 7, 8, 0), nil
}
