package te

import (
	"fmt"
	"math"

	"tessera/tir"
)

// ExampleDAGs returns one small DAG per op of the library (small odd
// shapes, so that Eval runs in milliseconds), a few variants (strided,
// grouped and depthwise convolution, batched matmul, ...) and some fused
// subgraphs: "conv_bias_relu", "matmul_bias_relu", "conv_bn_add_relu",
// "elemwise_chain", "softmax", "layernorm", "attention", "scores_kt" and
// "reduce_small_output". The
// keys are stable; every call builds fresh DAGs.
//
// Each DAG gives finite results for finite inputs in [-1, 1] (except at
// isolated points such as a zero denominator): inputs of Log, Sqrt, the base
// of Pow and the BatchNormalization variance go through Abs first.
func ExampleDAGs() map[string]*DAG {
	b := &exampleBuilder{dags: map[string]*DAG{}}
	b.build()
	return b.dags
}

type exampleBuilder struct {
	dags map[string]*DAG
}

// add returns the function that records the DAG of an op's result under
// key; the examples are fixed, so an error is a bug in the library.
func (b *exampleBuilder) add(key string) func(out *Tensor, err error) {
	return func(out *Tensor, err error) { b.record(key, out, err) }
}

func (b *exampleBuilder) record(key string, out *Tensor, err error) {
	if err != nil {
		panic(fmt.Sprintf("te: example %s: %v", key, err))
	}
	if _, dup := b.dags[key]; dup {
		panic("te: example " + key + " defined twice")
	}
	d, err := NewDAG(out)
	if err != nil {
		panic(fmt.Sprintf("te: example %s: %v", key, err))
	}
	b.dags[key] = d
}

// mustExample unwraps an intermediate result of a fused example.
func mustExample(t *Tensor, err error) *Tensor {
	if err != nil {
		panic(fmt.Sprintf("te: example: %v", err))
	}
	return t
}

func ptrF32(v float32) *float32 { return &v }

func (b *exampleBuilder) build() {
	P := Placeholder
	K := Constant // weights: a schedule may repack them

	// nn: matmul, gemm, conv, pooling, normalization, softmax
	b.add("matmul")(MatMul("matmul", P("A", 17, 13), K("B", 13, 19)))
	b.add("batch_matmul")(MatMul("batch_matmul", P("A", 3, 9, 7), P("B", 3, 7, 11)))
	b.add("matvec")(MatMul("matvec", P("A", 9, 13), P("v", 13)))
	b.add("gemm")(Gemm("gemm", P("A", 13, 9), K("B", 11, 13), K("C", 11),
		GemmAttrs{Alpha: 0.5, Beta: 2, TransA: true, TransB: true}))
	b.add("conv")(Conv("conv", P("X", 1, 3, 7, 9), K("W", 4, 3, 3, 3), nil,
		ConvAttrs{Pads: []int{1, 1, 1, 1}}))
	b.add("conv_strided")(Conv("conv_strided", P("X", 1, 3, 9, 11), K("W", 5, 3, 3, 3), nil,
		ConvAttrs{Pads: []int{1, 0, 1, 2}, Strides: []int{2, 2}}))
	b.add("conv_dilated_grouped")(Conv("conv_dilated_grouped", P("X", 1, 4, 9, 9), K("W", 6, 2, 3, 3), K("bias", 6),
		ConvAttrs{Pads: []int{2, 2, 2, 2}, Dilations: []int{2, 2}, Group: 2}))
	b.add("conv_depthwise")(Conv("conv_depthwise", P("X", 1, 6, 9, 7), K("W", 6, 1, 3, 3), nil,
		ConvAttrs{AutoPad: "SAME_UPPER", Strides: []int{2, 2}, Group: 6}))
	b.add("conv1d")(Conv("conv1d", P("X", 2, 3, 17), K("W", 5, 3, 3), K("bias", 5),
		ConvAttrs{Pads: []int{1, 1}, Strides: []int{2}}))
	b.add("max_pool")(MaxPool("max_pool", P("X", 1, 3, 9, 11),
		PoolAttrs{KernelShape: []int{3, 3}, Strides: []int{2, 2}, Pads: []int{1, 1, 1, 1}}))
	b.add("average_pool")(AveragePool("average_pool", P("X", 1, 3, 9, 10),
		PoolAttrs{KernelShape: []int{3, 3}, Strides: []int{2, 2}, Pads: []int{1, 1, 0, 0}, CeilMode: true}))
	b.add("average_pool1d")(AveragePool("average_pool1d", P("X", 2, 3, 13),
		PoolAttrs{KernelShape: []int{3}, Strides: []int{2}, Pads: []int{1, 1}, CountIncludePad: true}))
	b.add("global_average_pool")(GlobalAveragePool("global_average_pool", P("X", 1, 5, 7, 9)))
	b.add("global_max_pool")(GlobalMaxPool("global_max_pool", P("X", 1, 5, 7, 9)))
	b.add("batch_norm")(BatchNormalization("batch_norm", P("X", 1, 4, 5, 7), P("scale", 4), P("B", 4), P("mean", 4),
		mustExample(Abs("var_abs", P("var", 4))), 1e-5))
	b.add("layernorm")(LayerNormalization("layernorm", P("X", 5, 7, 33), P("scale", 33), P("B", 33), -1, 1e-5))
	b.add("softmax")(Softmax("softmax", P("X", 5, 33), -1))
	b.add("log_softmax")(LogSoftmax("log_softmax", P("X", 5, 33), 0))

	// elementwise
	u := func() *Tensor { return P("X", 3, 5, 7) }
	b.add("relu")(Relu("relu", u()))
	b.add("leaky_relu")(LeakyRelu("leaky_relu", u(), 0.1))
	b.add("sigmoid")(Sigmoid("sigmoid", u()))
	b.add("hard_sigmoid")(HardSigmoid("hard_sigmoid", u(), 0.2, 0.5))
	b.add("hard_swish")(HardSwish("hard_swish", u()))
	b.add("tanh")(Tanh("tanh", u()))
	b.add("exp")(Exp("exp", u()))
	b.add("log")(Log("log", mustExample(Abs("log_abs", u()))))
	b.add("sqrt")(Sqrt("sqrt", mustExample(Abs("sqrt_abs", u()))))
	b.add("erf")(Erf("erf", u()))
	b.add("gelu")(Gelu("gelu", u(), "none"))
	b.add("gelu_tanh")(Gelu("gelu_tanh", u(), "tanh"))
	b.add("clip")(Clip("clip", u(), ptrF32(-0.5), ptrF32(0.5)))
	b.add("neg")(Neg("neg", u()))
	b.add("abs")(Abs("abs", u()))
	b.add("reciprocal")(Reciprocal("reciprocal", u()))
	b.add("add")(Add("add", P("A", 3, 1, 5), P("B", 4, 1)))
	b.add("sub")(Sub("sub", P("A", 3, 4, 5), P("B", 5)))
	b.add("mul")(Mul("mul", P("A", 3, 4, 5), P("B", 3, 4, 5)))
	b.add("div")(Div("div", P("A", 3, 4, 5), P("B", 4, 1)))
	b.add("pow")(Pow("pow", mustExample(Abs("pow_abs", P("A", 3, 4, 5))), P("B", 3, 1, 1)))
	b.add("max")(Max("max", P("A", 3, 4, 5), P("B", 5), P("C", 4, 1)))
	b.add("min")(Min("min", P("A", 3, 4, 5), P("B", 1, 4, 5)))
	b.add("expand")(Expand("expand", P("X", 3, 1), []int{2, 3, 5}))

	// reductions
	b.add("reduce_sum")(ReduceSum("reduce_sum", P("X", 3, 5, 7), ReduceAttrs{Axes: []int{1}, KeepDims: true}))
	b.add("reduce_mean")(ReduceMean("reduce_mean", P("X", 3, 5, 7), ReduceAttrs{Axes: []int{0, -1}}))
	b.add("reduce_max")(ReduceMax("reduce_max", P("X", 3, 5, 7), DefaultReduceAttrs()))
	b.add("reduce_min")(ReduceMin("reduce_min", P("X", 3, 5, 7), ReduceAttrs{Axes: []int{2}}))
	b.add("reduce_small_output")(ReduceSum("reduce_small_output", P("X", 4, 1024), ReduceAttrs{Axes: []int{1}}))

	// shape
	b.add("transpose")(Transpose("transpose", P("X", 3, 5, 7), []int{2, 0, 1}))
	b.add("reshape")(Reshape("reshape", P("X", 3, 5, 7), []int{5, -1}, false))
	b.add("flatten")(Flatten("flatten", P("X", 2, 3, 5, 7), 2))
	b.add("squeeze")(Squeeze("squeeze", P("X", 3, 1, 7, 1), []int{1, -1}))
	b.add("unsqueeze")(Unsqueeze("unsqueeze", P("X", 3, 7), []int{0, -1}))
	b.add("concat")(Concat("concat", 1, P("A", 2, 3, 5), P("B", 2, 4, 5), P("C", 2, 1, 5)))
	b.add("slice")(Slice("slice", P("X", 7, 9, 5), SliceAttrs{
		Starts: []int{-1, 1}, Ends: []int{math.MinInt64, 8}, Axes: []int{0, 1}, Steps: []int{-2, 3}}))
	b.add("pad")(Pad("pad", P("X", 1, 3, 5, 7), PadAttrs{Mode: "constant", Value: 0.5, Pads: []int{0, 0, 1, 2, 0, 0, 2, 1}}))
	b.add("pad_reflect")(Pad("pad_reflect", P("X", 3, 5, 7), PadAttrs{Mode: "reflect", Axes: []int{1, 2}, Pads: []int{2, 1, 1, 3}}))
	b.add("pad_edge")(Pad("pad_edge", P("X", 3, 5, 7), PadAttrs{Mode: "edge", Pads: []int{0, -1, 2, 0, 2, -1}}))

	// transposed convolution: groups, strides, dilations, output padding;
	// 1-D with output_shape (an extent past the natural one)
	b.add("conv_transpose")(ConvTranspose("conv_transpose", P("X", 1, 4, 5, 6), K("W", 4, 3, 3, 3), K("bias", 6),
		ConvTransposeAttrs{Group: 2, Strides: []int{2, 2}, Dilations: []int{1, 2}, Pads: []int{1, 0, 1, 1}, OutputPadding: []int{1, 0}}))
	b.add("conv_transpose1d")(ConvTranspose("conv_transpose1d", P("X", 2, 3, 7), K("W", 3, 2, 3), nil,
		ConvTransposeAttrs{Strides: []int{3}, OutputShape: []int{22}}))

	// scans, contractions, normalization across channels
	b.add("cumsum")(CumSum("cumsum", P("X", 3, 9, 4), 1, false, false))
	b.add("cumsum_exclusive_reverse")(CumSum("cumsum_exclusive_reverse", P("X", 5, 7), -1, true, true))
	b.add("einsum")(Einsum("einsum", "bhqd,bhkd->bhqk", P("Q", 1, 2, 5, 4), P("K", 1, 2, 7, 4)))
	b.add("einsum_diagonal")(Einsum("einsum_diagonal", "...ii->...i", P("X", 3, 5, 5)))
	b.add("lrn")(LRN("lrn", P("X", 1, 6, 5, 3), 3, 1e-2, 0.75, 1))
	b.add("dft")(DFT("dft", P("X", 2, 9, 3, 2), 1, 12, false, true))
	b.add("stft")(STFT("stft", P("X", 1, 40, 1), P("window", 8), 5, 8, true))

	// run-time indices: each index tensor is computed from an input in
	// [-1, 1] as floor(v·n), so that the indices span [-n, n) (negative
	// ones wrap) and every schedule sweep reads data-dependent addresses
	ix := func(name string, n int, shape ...int) *Tensor {
		v := P(name, shape...)
		return Compute(name+"_index", shape, func(i []tir.Expr) tir.Expr {
			return tir.CallE("floor", tir.MulE(v.At(i...), tir.F32(float64(n))))
		})
	}
	b.add("gather")(Gather("gather", P("X", 5, 7, 3), ix("I", 7, 2, 4), 1))
	b.add("gather_elements")(GatherElements("gather_elements", P("X", 5, 6), ix("I", 6, 5, 4), 1))
	b.add("gather_nd")(GatherND("gather_nd", P("X", 4, 5, 6), ix("I", 4, 3, 2), 0))
	b.add("one_hot")(OneHot("one_hot", ix("I", 6, 3, 5), P("V", 2), 6, 1))
	b.add("scatter_elements")(ScatterElements("scatter_elements", P("X", 5, 6), ix("I", 5, 3, 4), P("U", 3, 4), 0, NoReduce))
	b.add("scatter_elements_add")(ScatterElements("scatter_elements_add", P("X", 5, 6), ix("I", 6, 5, 3), P("U", 5, 3), 1, Sum))
	b.add("scatter_nd")(ScatterND("scatter_nd", P("X", 4, 5, 3), ix("I", 4, 2, 3, 2), P("U", 2, 3, 3), NoReduce))
	{
		// sampling points a little beyond the image, so padding matters
		g := P("G", 1, 3, 4, 2)
		grid := Compute("grid", g.Shape, func(i []tir.Expr) tir.Expr { return tir.MulE(g.At(i...), tir.F32(1.25)) })
		b.add("grid_sample")(GridSample("grid_sample", P("X", 1, 2, 5, 4), grid, "bilinear", "zeros", false))
		g2 := P("G", 2, 2, 3, 2)
		grid2 := Compute("grid", g2.Shape, func(i []tir.Expr) tir.Expr { return tir.MulE(g2.At(i...), tir.F32(1.5)) })
		b.add("grid_sample_bicubic_reflection")(GridSample("grid_sample_bicubic_reflection", P("X", 2, 1, 4, 5), grid2, "bicubic", "reflection", true))
	}
	b.add("reverse_sequence")(ReverseSequence("reverse_sequence", P("X", 6, 3, 2), ix("L", 7, 3), 0, 1))
	{
		v, _, err := TopK("top_k", P("X", 4, 9), 3, 1, true)
		b.add("top_k")(v, err)
		_, idx, err := TopK("top_k_smallest", P("X", 7, 2), 4, 0, false)
		b.add("top_k_smallest_indices")(idx, err)
	}
	b.add("scatter_nd_max")(ScatterND("scatter_nd_max", P("X", 4, 5), ix("I", 4, 6, 1), P("U", 6, 5), MaxReduce))

	// fused subgraphs
	{
		x, w, bias := P("X", 1, 3, 7, 9), K("W", 4, 3, 3, 3), K("bias", 4)
		c := mustExample(Conv("conv", x, w, bias, ConvAttrs{Pads: []int{1, 1, 1, 1}}))
		b.add("conv_bias_relu")(Relu("relu", c))
	}
	{
		// channels-last (the layout pass's): conv, bias, ReLU; a max pool;
		// Winograd F(4×4, 3×3)
		x, w, bias := P("X", 1, 7, 9, 5), K("W", 8, 5, 3, 3), K("bias", 8)
		c := mustExample(ConvNHWC("conv", x, w, bias, ConvAttrs{Pads: []int{1, 1, 1, 1}}))
		b.add("conv_nhwc_bias_relu")(Relu("relu", c))
		// A model's first convolution: its NCHW image read as it is.
		ct := mustExample(ConvToNHWC("conv", P("X", 1, 3, 9, 7), K("W", 8, 3, 3, 3), K("bias", 8), ConvAttrs{Pads: []int{1, 1, 1, 1}, Strides: []int{2, 2}}))
		b.add("conv_to_nhwc_bias_relu")(Relu("relu", ct))
		b.add("maxpool_nhwc")(MaxPoolNHWC("maxpool_nhwc", P("X", 1, 9, 9, 6), PoolAttrs{KernelShape: []int{3, 3}, Strides: []int{2, 2}, Pads: []int{1, 1, 1, 1}}))
		u := K("U", 6, 6, 5, 8)
		wc := mustExample(WinogradConv2DNHWC("conv", P("X", 1, 7, 7, 5), u, 4, []int{1, 1, 1, 1}))
		b.add("winograd4_nhwc_bias_relu")(Relu("relu", mustExample(Add("bias_add", wc, K("bias", 8)))))
	}
	for _, m := range WinogradTileSizes() {
		// Winograd F(m×m, 3×3) with a bias and a ReLU, as a 3×3 conv group's
		// alternative; 7×7 leaves partial tiles for both m, and the tile
		// counts (16 and 4) are whole vectors.
		x, u, bias := P("X", 1, 3, 7, 7), K("U", m+2, m+2, 3, 4), K("bias", 4, 1, 1)
		c := mustExample(WinogradConv2D("conv", x, u, m, []int{1, 1, 1, 1}))
		biased := mustExample(Add("bias_add", c, bias))
		b.add(fmt.Sprintf("winograd%d_bias_relu", m))(Relu("relu", biased))
	}
	{
		g := mustExample(Gemm("gemm", P("A", 17, 13), K("B", 13, 19), K("C", 19), DefaultGemmAttrs()))
		b.add("matmul_bias_relu")(Relu("relu", g))
	}
	// A classifier: one row against constant weights stored [N, K]
	// (transB), so no data reuse; its sketches repack the weights to
	// vectorize over N (reduce_outside_lanes).
	b.add("classifier")(Gemm("classifier", P("A", 1, 40), K("W", 64, 40), K("C", 64), GemmAttrs{Alpha: 1, Beta: 1, TransB: true}))
	{
		x, w := P("X", 1, 4, 7, 9), K("W", 4, 4, 3, 3)
		c := mustExample(Conv("conv", x, w, nil, ConvAttrs{Pads: []int{1, 1, 1, 1}}))
		scaled := mustExample(Mul("bn_scale", c, K("scale", 4, 1, 1)))
		shifted := mustExample(Add("bn_shift", scaled, K("shift", 4, 1, 1)))
		res := mustExample(Add("residual", shifted, P("R", 1, 4, 7, 9)))
		b.add("conv_bn_add_relu")(Relu("relu", res))
	}
	{
		// Attention as fusion groups it (partition's sandwiches): the
		// scores of 3 heads (queries 5, keys 7, head size 4), scaled, with
		// an additive mask, their softmax, and its product with the values.
		q, kt, v := P("Q", 3, 5, 4), P("Kt", 3, 4, 7), P("V", 3, 7, 6)
		s := mustExample(MatMul("scores", q, kt))
		scaled := mustExample(Mul("scale", s, K("c", 1)))
		masked := mustExample(Add("mask", scaled, K("M", 5, 7)))
		p := mustExample(Softmax("probs", masked, -1))
		b.add("attention")(MatMul("attention", p, v))
	}
	{
		// Attention's scores as PyTorch exports them: K given [heads, keys,
		// size] and transposed in the group (inline_or_keep_transpose
		// keeps Kᵀ a stage: its copy reads K along the lanes, the
		// printer's transposed copies); 19 keys, a size of 16.
		kt := mustExample(Transpose("kt", P("K", 2, 19, 16), []int{0, 2, 1}))
		b.add("scores_kt")(MatMul("scores_kt", P("Q", 2, 5, 16), kt))
	}
	{
		a := mustExample(Add("add", P("A", 5, 7, 9), P("B", 5, 7, 9)))
		m := mustExample(Mul("mul", a, P("C", 9)))
		t := mustExample(Tanh("tanh", m))
		b.add("elemwise_chain")(Sigmoid("sigmoid", t))
	}
}
