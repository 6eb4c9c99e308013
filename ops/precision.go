package ops

import (
	"slices"

	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/te"
	"github.com/tessera-ml/tessera/tir"
)

// The bf16 precision (graph.Graph.BF16, opt-in: tune --precision bf16).
// A float convolution or matrix product (Conv, MatMul, Gemm) whose
// reduction sums in pairs (pairs: an even reduction, and for Conv the
// channels-last form) multiplies its operands rounded to bfloat16
// (operand; to nearest, ties to even) and sums the products in float32,
// as a CPU's bf16 dot-product instructions do (x86's vdpbf16ps, aarch64's bfdot): a
// constant operand (the weights) is rounded at build time and stored as
// bfloat16, half its float32 bytes; a computed one is rounded by a
// conversion stage of the task. An image's first convolution (3
// channels, NCHW input) sums pairs of adjacent W taps instead (tapPairs).
// A product without the pair form (a depthwise convolution,
// ConvTranspose, an NHWC input of an odd channel count) or without
// a constant operand (attention's products: see pairs) stays float32:
// without a dot-product instruction the rounding only adds a
// conversion to every load (ResNet-18's stem, rounded without pairs:
// 1.45 ms in float32, 1.69 rounded; Zen 5, one thread), like oneDNN's
// fpmath mode, which allows bf16 rather than requiring it. Everything
// else (bias, epilogue, other ops) stays float32. A 3×3 convolution's
// Winograd alternative is F(2×2) with its transformed data and weights
// rounded, its GEMMs in pairs (winogradTile,
// te.WinogradConv2DNHWCPairs). The rounding is exact where an operand is
// already a bfloat16 value.

// pairs reports whether a product of this bf16 graph sums its reduction
// of k elements in pairs (te.ConvNHWCDot, te.MatMulDot, GemmAttrs.Dot):
// the form of the bf16 dot-product instructions (vdpbf16ps, bfdot), which
// codegen emits where the target has them, for products with a weight
// stored as bfloat16. A product of two computed operands (attention's
// scores and their product with the values) has none: rounded, it only
// converted at every load, and the BERT layer's tuned attention took 0.78
// ms against 0.49 in float32 (Zen 5, one thread), so it stays float32.
func (c *lowerCtx) pairs(k int) bool {
	return c.g.BF16 && k%2 == 0 && (c.weight(0) || c.weight(1))
}

// tapPairs reports whether this Conv, reading NCHW input and writing
// NHWC (an image's first convolution: 3 channels, no pairs of them),
// sums its W taps in pairs (te.ConvToNHWCDotW) in a bf16 graph: constant
// weights of a 2-D kernel at least 2 taps wide, one group, W dilation 1
// and every W tap reading the input (te.DotWFits), as the int8 form
// groups an integer stem's taps (tapGroupWeights). ResNet-18's 7×7 stem
// is a tenth of its bf16 run in float32.
func (c *lowerCtx) tapPairs() bool {
	x, w := c.inShape(0), c.inShape(1)
	if !c.g.BF16 || !c.weight(1) || len(x) != 4 || len(w) != 4 || w[3] < 2 {
		return false
	}
	a, err := convAttrsOf(c.n)
	return err == nil && a.Group <= 1 && te.DotWFits(x[2:], w[2:], a)
}

// tapPairWeights returns the constant weights of this Conv [M, C, KH, KW]
// rounded to bfloat16 and padded with zeros along W to an even KW' (a
// derived constant, the bf16 weights' name with the suffix _w2), as
// float32, for te.ConvToNHWCDotW.
func (c *lowerCtx) tapPairWeights() (*te.Tensor, error) {
	v := c.g.Values[c.n.Input(1)]
	sh := v.Const.Shape
	kw := sh[3]
	kwp := (kw + 1) / 2 * 2
	padded := padRows(v.Const.F32, kw, kwp)
	for i, f := range padded {
		padded[i] = tir.RoundBFloat16(f) // the zero taps stay 0
	}
	wn := BFloat16WeightsName(c.n.Input(1)) + "_w2"
	if err := addDerived(c.g, c.n, wn, &graph.Tensor{DType: graph.BFloat16, Shape: []int{sh[0], sh[1], sh[2], kwp}, F32: padded}); err != nil {
		return nil, err
	}
	w, err := c.src(wn)
	if err != nil {
		return nil, err
	}
	return floatView(wn+"_f32", w), nil
}

// weight reports whether input i is a float32 constant of more than one
// element: what operand stores as bfloat16.
func (c *lowerCtx) weight(i int) bool {
	name := c.n.Input(i)
	v := c.g.Values[name]
	return v != nil && v.Const != nil && v.Const.DType == graph.Float32 && v.Const.Len() > 1 && !c.g.IsInput(name)
}

// inShape returns the shape of input i (nil where unknown).
func (c *lowerCtx) inShape(i int) []int {
	if v := c.g.Values[c.n.Input(i)]; v != nil {
		return v.Shape
	}
	return nil
}

// BFloat16WeightsName is the graph value holding constant w rounded to
// bfloat16 (graph.BFloat16) for a bf16 build's products.
func BFloat16WeightsName(w string) string { return w + ".bf16" }

// operand returns operand i of a convolution or matrix product as
// float32: rounded to bfloat16 where the product sums in pairs (a
// constant stored so, a computed one through a rounding stage), else the
// input itself (lowerCtx.in).
func (c *lowerCtx) operand(i int, pairs bool) (*te.Tensor, error) {
	if !pairs {
		return c.in(i)
	}
	name := c.n.Input(i)
	if c.weight(i) {
		v := c.g.Values[name]
		rounded := make([]float32, len(v.Const.F32))
		for k, f := range v.Const.F32 {
			rounded[k] = tir.RoundBFloat16(f)
		}
		wn := BFloat16WeightsName(name)
		if err := addDerived(c.g, c.n, wn, &graph.Tensor{DType: graph.BFloat16, Shape: slices.Clone(v.Const.Shape), F32: rounded}); err != nil {
			return nil, err
		}
		w, err := c.src(wn)
		if err != nil {
			return nil, err
		}
		return floatView(wn+"_f32", w), nil
	}
	x, err := c.in(i)
	if err != nil {
		return nil, err
	}
	xb := te.Compute(c.sub(name+"_bf16"), x.Shape, func(idx []tir.Expr) tir.Expr {
		return &tir.Cast{To: tir.BFloat16, X: x.At(idx...)}
	})
	return floatView(xb.Name+"_f32", xb), nil
}
