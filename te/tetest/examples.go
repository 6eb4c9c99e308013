// Package tetest holds the test fixtures of package te's op library: one
// small compute DAG per op, a few variants and fused subgraphs, for the
// tests of every package below the graph (lowering, code generation,
// sketches, the cost model, measurement). Product code never imports it.
package tetest

import (
	"fmt"
	"math"

	"github.com/tessera-ml/tessera/te"
	"github.com/tessera-ml/tessera/tir"
)

// DAGs returns one small DAG per op of the library (small odd
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
func DAGs() map[string]*te.DAG {
	b := &exampleBuilder{dags: map[string]*te.DAG{}}
	b.build()
	return b.dags
}

type exampleBuilder struct {
	dags map[string]*te.DAG
}

// add returns the function that records the DAG of an op's result under
// key; the examples are fixed, so an error is a bug in the library.
func (b *exampleBuilder) add(key string) func(out *te.Tensor, err error) {
	return func(out *te.Tensor, err error) { b.record(key, out, err) }
}

func (b *exampleBuilder) record(key string, out *te.Tensor, err error) {
	if err != nil {
		panic(fmt.Sprintf("te: example %s: %v", key, err))
	}
	if _, dup := b.dags[key]; dup {
		panic("te: example " + key + " defined twice")
	}
	d, err := te.NewDAG(out)
	if err != nil {
		panic(fmt.Sprintf("te: example %s: %v", key, err))
	}
	b.dags[key] = d
}

// mustExample unwraps an intermediate result of a fused example.
func mustExample(t *te.Tensor, err error) *te.Tensor {
	if err != nil {
		panic(fmt.Sprintf("te: example: %v", err))
	}
	return t
}

func ptrF32(v float32) *float32 { return &v }

func (b *exampleBuilder) build() {
	P := te.Placeholder
	K := te.Constant // weights: a schedule may repack them

	// nn: matmul, gemm, conv, pooling, normalization, softmax
	b.add("matmul")(te.MatMul("matmul", P("A", 17, 13), K("B", 13, 19)))
	b.add("batch_matmul")(te.MatMul("batch_matmul", P("A", 3, 9, 7), P("B", 3, 7, 11)))
	b.add("matvec")(te.MatMul("matvec", P("A", 9, 13), P("v", 13)))
	b.add("gemm")(te.Gemm("gemm", P("A", 13, 9), K("B", 11, 13), K("C", 11),
		te.GemmAttrs{Alpha: 0.5, Beta: 2, TransA: true, TransB: true}))
	b.add("conv")(te.Conv("conv", P("X", 1, 3, 7, 9), K("W", 4, 3, 3, 3), nil,
		te.ConvAttrs{Pads: []int{1, 1, 1, 1}}))
	b.add("conv_strided")(te.Conv("conv_strided", P("X", 1, 3, 9, 11), K("W", 5, 3, 3, 3), nil,
		te.ConvAttrs{Pads: []int{1, 0, 1, 2}, Strides: []int{2, 2}}))
	b.add("conv_dilated_grouped")(te.Conv("conv_dilated_grouped", P("X", 1, 4, 9, 9), K("W", 6, 2, 3, 3), K("bias", 6),
		te.ConvAttrs{Pads: []int{2, 2, 2, 2}, Dilations: []int{2, 2}, Group: 2}))
	b.add("conv_depthwise")(te.Conv("conv_depthwise", P("X", 1, 6, 9, 7), K("W", 6, 1, 3, 3), nil,
		te.ConvAttrs{AutoPad: "SAME_UPPER", Strides: []int{2, 2}, Group: 6}))
	b.add("conv1d")(te.Conv("conv1d", P("X", 2, 3, 17), K("W", 5, 3, 3), K("bias", 5),
		te.ConvAttrs{Pads: []int{1, 1}, Strides: []int{2}}))
	b.add("max_pool")(te.MaxPool("max_pool", P("X", 1, 3, 9, 11),
		te.PoolAttrs{KernelShape: []int{3, 3}, Strides: []int{2, 2}, Pads: []int{1, 1, 1, 1}}))
	b.add("average_pool")(te.AveragePool("average_pool", P("X", 1, 3, 9, 10),
		te.PoolAttrs{KernelShape: []int{3, 3}, Strides: []int{2, 2}, Pads: []int{1, 1, 0, 0}, CeilMode: true}))
	b.add("average_pool1d")(te.AveragePool("average_pool1d", P("X", 2, 3, 13),
		te.PoolAttrs{KernelShape: []int{3}, Strides: []int{2}, Pads: []int{1, 1}, CountIncludePad: true}))
	b.add("global_average_pool")(te.GlobalAveragePool("global_average_pool", P("X", 1, 5, 7, 9)))
	b.add("global_max_pool")(te.GlobalMaxPool("global_max_pool", P("X", 1, 5, 7, 9)))
	b.add("batch_norm")(te.BatchNormalization("batch_norm", P("X", 1, 4, 5, 7), P("scale", 4), P("B", 4), P("mean", 4),
		mustExample(te.Abs("var_abs", P("var", 4))), 1e-5))
	b.add("layernorm")(te.LayerNormalization("layernorm", P("X", 5, 7, 33), P("scale", 33), P("B", 33), -1, 1e-5))
	b.add("softmax")(te.Softmax("softmax", P("X", 5, 33), -1))
	b.add("log_softmax")(te.LogSoftmax("log_softmax", P("X", 5, 33), 0))

	// elementwise
	u := func() *te.Tensor { return P("X", 3, 5, 7) }
	b.add("relu")(te.Relu("relu", u()))
	b.add("leaky_relu")(te.LeakyRelu("leaky_relu", u(), 0.1))
	b.add("sigmoid")(te.Sigmoid("sigmoid", u()))
	b.add("hard_sigmoid")(te.HardSigmoid("hard_sigmoid", u(), 0.2, 0.5))
	b.add("hard_swish")(te.HardSwish("hard_swish", u()))
	b.add("tanh")(te.Tanh("tanh", u()))
	b.add("exp")(te.Exp("exp", u()))
	b.add("log")(te.Log("log", mustExample(te.Abs("log_abs", u()))))
	b.add("sqrt")(te.Sqrt("sqrt", mustExample(te.Abs("sqrt_abs", u()))))
	b.add("erf")(te.Erf("erf", u()))
	b.add("gelu")(te.Gelu("gelu", u(), "none"))
	b.add("gelu_tanh")(te.Gelu("gelu_tanh", u(), "tanh"))
	b.add("clip")(te.Clip("clip", u(), ptrF32(-0.5), ptrF32(0.5)))
	b.add("neg")(te.Neg("neg", u()))
	b.add("abs")(te.Abs("abs", u()))
	b.add("reciprocal")(te.Reciprocal("reciprocal", u()))
	b.add("add")(te.Add("add", P("A", 3, 1, 5), P("B", 4, 1)))
	b.add("sub")(te.Sub("sub", P("A", 3, 4, 5), P("B", 5)))
	b.add("mul")(te.Mul("mul", P("A", 3, 4, 5), P("B", 3, 4, 5)))
	b.add("div")(te.Div("div", P("A", 3, 4, 5), P("B", 4, 1)))
	b.add("pow")(te.Pow("pow", mustExample(te.Abs("pow_abs", P("A", 3, 4, 5))), P("B", 3, 1, 1)))
	b.add("max")(te.Max("max", P("A", 3, 4, 5), P("B", 5), P("C", 4, 1)))
	b.add("min")(te.Min("min", P("A", 3, 4, 5), P("B", 1, 4, 5)))
	b.add("expand")(te.Expand("expand", P("X", 3, 1), []int{2, 3, 5}))

	// reductions
	b.add("reduce_sum")(te.ReduceSum("reduce_sum", P("X", 3, 5, 7), te.ReduceAttrs{Axes: []int{1}, KeepDims: true}))
	b.add("reduce_mean")(te.ReduceMean("reduce_mean", P("X", 3, 5, 7), te.ReduceAttrs{Axes: []int{0, -1}}))
	b.add("reduce_max")(te.ReduceMax("reduce_max", P("X", 3, 5, 7), te.DefaultReduceAttrs()))
	b.add("reduce_min")(te.ReduceMin("reduce_min", P("X", 3, 5, 7), te.ReduceAttrs{Axes: []int{2}}))
	b.add("reduce_small_output")(te.ReduceSum("reduce_small_output", P("X", 4, 1024), te.ReduceAttrs{Axes: []int{1}}))

	// shape
	b.add("transpose")(te.Transpose("transpose", P("X", 3, 5, 7), []int{2, 0, 1}))
	b.add("reshape")(te.Reshape("reshape", P("X", 3, 5, 7), []int{5, -1}, false))
	b.add("flatten")(te.Flatten("flatten", P("X", 2, 3, 5, 7), 2))
	b.add("squeeze")(te.Squeeze("squeeze", P("X", 3, 1, 7, 1), []int{1, -1}))
	b.add("unsqueeze")(te.Unsqueeze("unsqueeze", P("X", 3, 7), []int{0, -1}))
	b.add("concat")(te.Concat("concat", 1, P("A", 2, 3, 5), P("B", 2, 4, 5), P("C", 2, 1, 5)))
	b.add("slice")(te.Slice("slice", P("X", 7, 9, 5), te.SliceAttrs{
		Starts: []int{-1, 1}, Ends: []int{math.MinInt64, 8}, Axes: []int{0, 1}, Steps: []int{-2, 3}}))
	b.add("pad")(te.Pad("pad", P("X", 1, 3, 5, 7), te.PadAttrs{Mode: "constant", Value: 0.5, Pads: []int{0, 0, 1, 2, 0, 0, 2, 1}}))
	b.add("pad_reflect")(te.Pad("pad_reflect", P("X", 3, 5, 7), te.PadAttrs{Mode: "reflect", Axes: []int{1, 2}, Pads: []int{2, 1, 1, 3}}))
	b.add("pad_edge")(te.Pad("pad_edge", P("X", 3, 5, 7), te.PadAttrs{Mode: "edge", Pads: []int{0, -1, 2, 0, 2, -1}}))

	// transposed convolution: groups, strides, dilations, output padding;
	// 1-D with output_shape (an extent past the natural one); by phases
	// (unit dilations, kernels of whole strides): a DCGAN layer's 4×4 of
	// stride 2 with uneven pads and groups, and the 1-D one
	b.add("conv_transpose")(te.ConvTranspose("conv_transpose", P("X", 1, 4, 5, 6), K("W", 4, 3, 3, 3), K("bias", 6),
		te.ConvTransposeAttrs{Group: 2, Strides: []int{2, 2}, Dilations: []int{1, 2}, Pads: []int{1, 0, 1, 1}, OutputPadding: []int{1, 0}}))
	b.add("conv_transpose1d")(te.ConvTranspose("conv_transpose1d", P("X", 2, 3, 7), K("W", 3, 2, 3), nil,
		te.ConvTransposeAttrs{Strides: []int{3}, OutputShape: []int{22}}))
	b.add("conv_transpose_phases")(te.ConvTranspose("conv_transpose_phases", P("X", 1, 4, 5, 17), K("W", 4, 3, 4, 4), K("bias", 6),
		te.ConvTransposeAttrs{Group: 2, Strides: []int{2, 2}, Pads: []int{1, 2, 0, 1}, OutputPadding: []int{1, 0}}))

	// scans, contractions, normalization across channels
	b.add("cumsum")(te.CumSum("cumsum", P("X", 3, 9, 4), 1, false, false))
	b.add("cumsum_exclusive_reverse")(te.CumSum("cumsum_exclusive_reverse", P("X", 5, 7), -1, true, true))
	b.add("einsum")(te.Einsum("einsum", "bhqd,bhkd->bhqk", P("Q", 1, 2, 5, 4), P("K", 1, 2, 7, 4)))
	b.add("einsum_diagonal")(te.Einsum("einsum_diagonal", "...ii->...i", P("X", 3, 5, 5)))
	b.add("lrn")(te.LRN("lrn", P("X", 1, 6, 5, 3), 3, 1e-2, 0.75, 1))
	b.add("dft")(te.DFT("dft", P("X", 2, 9, 3, 2), 1, 12, false, true))
	b.add("stft")(te.STFT("stft", P("X", 1, 40, 1), P("window", 8), 5, 8, true))

	// run-time indices: each index tensor is computed from an input in
	// [-1, 1] as floor(v·n), so that the indices span [-n, n) (negative
	// ones wrap) and every schedule sweep reads data-dependent addresses
	ix := func(name string, n int, shape ...int) *te.Tensor {
		v := P(name, shape...)
		return te.Compute(name+"_index", shape, func(i []tir.Expr) tir.Expr {
			return tir.CallE("floor", tir.MulE(v.At(i...), tir.F32(float64(n))))
		})
	}
	b.add("gather")(te.Gather("gather", P("X", 5, 7, 3), ix("I", 7, 2, 4), 1))
	b.add("gather_elements")(te.GatherElements("gather_elements", P("X", 5, 6), ix("I", 6, 5, 4), 1))
	b.add("gather_nd")(te.GatherND("gather_nd", P("X", 4, 5, 6), ix("I", 4, 3, 2), 0))
	// An embedding (a constant table read at token ids) into a matmul: an
	// LSTM language model's input projection.
	embed := mustExample(te.Gather("embed", K("E", 40, 16), ix("ids", 40, 6), 0))
	b.add("embedding_matmul")(te.MatMul("embedding_matmul", embed, K("W", 16, 32)))
	b.add("one_hot")(te.OneHot("one_hot", ix("I", 6, 3, 5), P("V", 2), 6, 1))
	b.add("scatter_elements")(te.ScatterElements("scatter_elements", P("X", 5, 6), ix("I", 5, 3, 4), P("U", 3, 4), 0, te.NoReduce))
	b.add("scatter_elements_add")(te.ScatterElements("scatter_elements_add", P("X", 5, 6), ix("I", 6, 5, 3), P("U", 5, 3), 1, te.Sum))
	b.add("scatter_nd")(te.ScatterND("scatter_nd", P("X", 4, 5, 3), ix("I", 4, 2, 3, 2), P("U", 2, 3, 3), te.NoReduce))
	{
		// sampling points a little beyond the image, so padding matters
		g := P("G", 1, 3, 4, 2)
		grid := te.Compute("grid", g.Shape, func(i []tir.Expr) tir.Expr { return tir.MulE(g.At(i...), tir.F32(1.25)) })
		b.add("grid_sample")(te.GridSample("grid_sample", P("X", 1, 2, 5, 4), grid, "bilinear", "zeros", false))
		g2 := P("G", 2, 2, 3, 2)
		grid2 := te.Compute("grid", g2.Shape, func(i []tir.Expr) tir.Expr { return tir.MulE(g2.At(i...), tir.F32(1.5)) })
		b.add("grid_sample_bicubic_reflection")(te.GridSample("grid_sample_bicubic_reflection", P("X", 2, 1, 4, 5), grid2, "bicubic", "reflection", true))
	}
	b.add("reverse_sequence")(te.ReverseSequence("reverse_sequence", P("X", 6, 3, 2), ix("L", 7, 3), 0, 1))
	{
		v, _, err := te.TopK("top_k", P("X", 4, 9), 3, 1, true)
		b.add("top_k")(v, err)
		_, idx, err := te.TopK("top_k_smallest", P("X", 7, 2), 4, 0, false)
		b.add("top_k_smallest_indices")(idx, err)
	}
	b.add("scatter_nd_max")(te.ScatterND("scatter_nd_max", P("X", 4, 5), ix("I", 4, 6, 1), P("U", 6, 5), te.MaxReduce))

	// fused subgraphs
	{
		x, w, bias := P("X", 1, 3, 7, 9), K("W", 4, 3, 3, 3), K("bias", 4)
		c := mustExample(te.Conv("conv", x, w, bias, te.ConvAttrs{Pads: []int{1, 1, 1, 1}}))
		b.add("conv_bias_relu")(te.Relu("relu", c))
	}
	{
		// channels-last (the layout pass's): conv, bias, ReLU; a max pool;
		// Winograd F(4×4, 3×3)
		x, w, bias := P("X", 1, 7, 9, 5), K("W", 8, 5, 3, 3), K("bias", 8)
		c := mustExample(te.ConvNHWC("conv", x, w, bias, te.ConvAttrs{Pads: []int{1, 1, 1, 1}}))
		b.add("conv_nhwc_bias_relu")(te.Relu("relu", c))
		// EfficientNet's 1×1 expansion with its SiLU (fuse-silu's one op)
		e := mustExample(te.ConvNHWC("expand", P("X", 1, 6, 7, 4), K("W", 24, 4, 1, 1), K("bias", 24), te.ConvAttrs{}))
		b.add("conv_nhwc_silu")(te.Silu("silu", e))
		// A model's first convolution: its NCHW image read as it is.
		ct := mustExample(te.ConvToNHWC("conv", P("X", 1, 3, 9, 7), K("W", 8, 3, 3, 3), K("bias", 8), te.ConvAttrs{Pads: []int{1, 1, 1, 1}, Strides: []int{2, 2}}))
		b.add("conv_to_nhwc_bias_relu")(te.Relu("relu", ct))
		b.add("maxpool_nhwc")(te.MaxPoolNHWC("maxpool_nhwc", P("X", 1, 9, 9, 6), te.PoolAttrs{KernelShape: []int{3, 3}, Strides: []int{2, 2}, Pads: []int{1, 1, 1, 1}}))
		// A squeeze-excite's pool: few channels, many pixels (factored).
		b.add("global_average_pool_nhwc")(te.GlobalAveragePoolNHWC("global_average_pool_nhwc", P("X", 1, 9, 11, 6)))
		u := K("U", 6, 6, 5, 8)
		wc := mustExample(te.WinogradConv2DNHWC("conv", P("X", 1, 7, 7, 5), u, 4, []int{1, 1, 1, 1}))
		b.add("winograd4_nhwc_bias_relu")(te.Relu("relu", mustExample(te.Add("bias_add", wc, K("bias", 8)))))
		// A dilated convolution by phases (FCN's and DeepLab's): rows of
		// dilation 2 in phases of 5 and 4 rows, columns of dilation 3.
		dc := mustExample(te.WinogradConv2DWith("conv", P("X", 1, 9, 10, 5), K("U", 6, 6, 5, 8), te.WinogradOptions{M: 4, Pads: []int{2, 3, 2, 3}, Dilations: []int{2, 3}, NHWC: true}))
		b.add("winograd4_dilated_nhwc_bias")(te.Add("bias_add", dc, K("bias", 8)))
	}
	for _, m := range te.WinogradTileSizes() {
		// Winograd F(m×m, 3×3) with a bias and a ReLU, as a 3×3 conv group's
		// alternative; 7×7 leaves partial tiles for both m, and the tile
		// counts (16 and 4) are whole vectors.
		x, u, bias := P("X", 1, 3, 7, 7), K("U", m+2, m+2, 3, 4), K("bias", 4, 1, 1)
		c := mustExample(te.WinogradConv2D("conv", x, u, m, []int{1, 1, 1, 1}))
		biased := mustExample(te.Add("bias_add", c, bias))
		b.add(fmt.Sprintf("winograd%d_bias_relu", m))(te.Relu("relu", biased))
	}
	{
		g := mustExample(te.Gemm("gemm", P("A", 17, 13), K("B", 13, 19), K("C", 19), te.DefaultGemmAttrs()))
		b.add("matmul_bias_relu")(te.Relu("relu", g))
	}
	// A classifier: one row against constant weights stored [N, K]
	// (transB), so no data reuse; its sketches repack the weights to
	// vectorize over N (reduce_outside_lanes).
	b.add("classifier")(te.Gemm("classifier", P("A", 1, 40), K("W", 64, 40), K("C", 64), te.GemmAttrs{Alpha: 1, Beta: 1, TransB: true}))
	{
		x, w := P("X", 1, 4, 7, 9), K("W", 4, 4, 3, 3)
		c := mustExample(te.Conv("conv", x, w, nil, te.ConvAttrs{Pads: []int{1, 1, 1, 1}}))
		scaled := mustExample(te.Mul("bn_scale", c, K("scale", 4, 1, 1)))
		shifted := mustExample(te.Add("bn_shift", scaled, K("shift", 4, 1, 1)))
		res := mustExample(te.Add("residual", shifted, P("R", 1, 4, 7, 9)))
		b.add("conv_bn_add_relu")(te.Relu("relu", res))
	}
	{
		// Attention as fusion groups it (partition's sandwiches): the
		// scores of 3 heads (queries 5, keys 7, head size 4), scaled, with
		// an additive mask, their softmax, and its product with the values.
		q, kt, v := P("Q", 3, 5, 4), P("Kt", 3, 4, 7), P("V", 3, 7, 6)
		s := mustExample(te.MatMul("scores", q, kt))
		scaled := mustExample(te.Mul("scale", s, K("c", 1)))
		masked := mustExample(te.Add("mask", scaled, K("M", 5, 7)))
		p := mustExample(te.Softmax("probs", masked, -1))
		b.add("attention")(te.MatMul("attention", p, v))
	}
	{
		// Attention's scores as PyTorch exports them: K given [heads, keys,
		// size] and transposed in the group (inline_or_keep_transpose
		// keeps Kᵀ a stage: its copy reads K along the lanes, the
		// printer's transposed copies); 19 keys, a size of 16.
		kt := mustExample(te.Transpose("kt", P("K", 2, 19, 16), []int{0, 2, 1}))
		b.add("scores_kt")(te.MatMul("scores_kt", P("Q", 2, 5, 16), kt))
	}
	{
		a := mustExample(te.Add("add", P("A", 5, 7, 9), P("B", 5, 7, 9)))
		m := mustExample(te.Mul("mul", a, P("C", 9)))
		t := mustExample(te.Tanh("tanh", m))
		b.add("elemwise_chain")(te.Sigmoid("sigmoid", t))
	}
	b.quantized()
	b.bfloat16()
}

// bfloat16 adds the products of the bf16 precision (ops' product):
// operands rounded to bfloat16, a constant one stored so, summed in
// float32 in pairs, as bf16 dot-product instructions sum them
// ("bf16_matmul", "bf16_conv_nhwc", "bf16_stem": pairs of W taps of an
// NCHW image, "bf16_winograd": Winograd F(2×2, 3×3) whose GEMMs sum pairs
// of channels, and "bf16_gemm": a classifier's Gemm at batch 1, its
// weights transposed; "bf16_conv_plain" one at a time, a
// form ops no longer emits), and a result rounded and stored as bfloat16
// ("bf16_round").
func (b *exampleBuilder) bfloat16() {
	rounded := func(name string, x *te.Tensor) *te.Tensor {
		r := te.Compute(name, x.Shape, func(i []tir.Expr) tir.Expr { return &tir.Cast{To: tir.BFloat16, X: x.At(i...)} })
		return te.Compute(name+"_f32", x.Shape, func(i []tir.Expr) tir.Expr { return &tir.Cast{To: tir.Float32, X: r.At(i...)} })
	}
	stored := func(name string, shape ...int) *te.Tensor {
		w := te.TypedPlaceholder(name, tir.BFloat16, shape...)
		w.Const = true
		return te.Compute(name+"_f32", shape, func(i []tir.Expr) tir.Expr { return &tir.Cast{To: tir.Float32, X: w.At(i...)} })
	}
	{
		m := mustExample(te.MatMulDot("bf16_matmul_mm", rounded("bf16_matmul_a", te.Placeholder("A", 13, 24)), stored("W", 24, 16), 2))
		b.add("bf16_matmul")(te.Relu("bf16_matmul", m))
	}
	{
		attrs := te.DefaultGemmAttrs()
		attrs.TransB, attrs.Dot = true, 2
		b.add("bf16_gemm")(te.Gemm("bf16_gemm", rounded("bf16_gemm_a", te.Placeholder("A", 1, 24)), stored("W", 40, 24), te.Placeholder("C", 40), attrs))
	}
	{
		b.add("bf16_conv_nhwc")(te.ConvNHWCDot("bf16_conv_nhwc", rounded("bf16_conv_x", te.Placeholder("X", 1, 7, 9, 8)), stored("W", 16, 8, 3, 3), te.Placeholder("B", 16),
			te.ConvAttrs{Pads: []int{1, 1, 1, 1}, Strides: []int{2, 1}}, 2))
		// An image's first layer: 3 channels NCHW in, NHWC out, pairs
		// of adjacent W taps (three taps, the weights padded to four),
		// the input rounded to bfloat16 as it is padded.
		b.add("bf16_stem")(te.ConvToNHWCDotW("bf16_stem", te.Placeholder("X", 1, 3, 9, 10), stored("W", 16, 3, 3, 4), te.Placeholder("B", 16),
			te.ConvAttrs{Pads: []int{1, 1, 1, 1}, Strides: []int{2, 1}, KernelShape: []int{3, 3}}, 2, true))
		// Winograd F(2×2, 3×3) on channels-last data: the data pack
		// rounded, each GEMM summing pairs of channels.
		wp := mustExample(te.WinogradConv2DNHWCPairs("bf16_winograd", te.Placeholder("X", 1, 7, 6, 8), stored("U", 4, 4, 8, 16), 2, []int{1, 1, 1, 1}))
		b.add("bf16_winograd")(te.Relu("bf16_winograd_relu", wp))
		b.add("bf16_conv_plain")(te.ConvNHWC("bf16_conv_plain", rounded("bf16_conv_plain_x", te.Placeholder("X", 1, 5, 6, 6)), stored("W", 8, 6, 3, 3), nil,
			te.ConvAttrs{Pads: []int{0, 1, 1, 0}}))
	}
	{
		x := te.Placeholder("X", 5, 33)
		s := te.Compute("bf16_round_s", x.Shape, func(i []tir.Expr) tir.Expr { return tir.MulE(x.At(i...), tir.F32(3)) })
		b.add("bf16_round")(te.Compute("bf16_round", x.Shape, func(i []tir.Expr) tir.Expr { return &tir.Cast{To: tir.BFloat16, X: s.At(i...)} }), nil)
	}
}

// quantized adds the integer computations of quantized models: uint8
// activations, int8 weights, int32 sums and biases, requantized to uint8
// ("qmatmul", "qmatmul_dot4s", "qmatmul_heads", "qmatmul_act", "qconv", "qconv_depthwise", "qconv_dot4",
// "qconv_dot4s", "qconv_grouped", "qconv_dot4_i8", "qconv_taps4s"), tabulated functions of 8-bit
// data ("qconv_table", "i8_table"), and elementwise work on uint8
// data through float32 ("u8_add"), and max pools on it ("u8_max_pool",
// "u8_max_pool_nhwc"), and a softmax of quantized and dequantized scores
// ("q_softmax"). The multipliers are the
// inputs scaled by 2^-12, so that the requantized values spread over
// uint8's range instead of saturating.
func (b *exampleBuilder) quantized() {
	typed := func(dt tir.DType, konst bool) func(string, ...int) *te.Tensor {
		return func(name string, shape ...int) *te.Tensor {
			t := te.TypedPlaceholder(name, dt, shape...)
			t.Const = konst
			return t
		}
	}
	U8, I8, I32 := typed(tir.Uint8, false), typed(tir.Int8, true), typed(tir.Int32, true)
	mult := func(n int) *te.Tensor {
		m := te.Constant("mult", n)
		return te.Compute("mult_scaled", m.Shape, func(i []tir.Expr) tir.Expr { return tir.MulE(m.At(i...), tir.F32(1.0/4096)) })
	}
	{
		acc := mustExample(te.IntMatMul("qmatmul_acc", U8("X", 23, 40), I8("W", 40, 19), te.IntMatMulOptions{}))
		b.add("qmatmul")(te.Requantize("qmatmul", acc, I32("bias", 19), mult(19), 1, 7, tir.Uint8))
	}
	{
		// k in groups of four, pairs saturated (vpmaddubsw's arithmetic;
		// the sweeps' weights span int8, so some pairs saturate).
		acc := mustExample(te.IntMatMul("qmatmul_dot4s_acc", U8("X", 13, 24), I8("W", 24, 16), te.IntMatMulOptions{Dot: 4, SaturatePairs: true}))
		b.add("qmatmul_dot4s")(te.Requantize("qmatmul_dot4s", acc, I32("bias", 16), mult(16), 1, 7, tir.Uint8))
	}
	{
		// A quantized matmul reading its uint8 operand transposed and
		// reshaped (BERT's attention output: heads × tokens × 8 to tokens
		// × 24), as fuse-qlinear leaves it.
		x := U8("X", 3, 13, 8)
		xt := te.Compute("qmatmul_heads_xt", []int{13, 24}, func(i []tir.Expr) tir.Expr {
			return x.At(tir.FloorDivE(i[1], te.Idx(8)), i[0], tir.FloorModE(i[1], te.Idx(8)))
		})
		acc := mustExample(te.IntMatMul("qmatmul_heads_acc", xt, I8("W", 24, 16), te.IntMatMulOptions{Dot: 4, SaturatePairs: true}))
		b.add("qmatmul_heads")(te.Requantize("qmatmul_heads", acc, I32("bias", 16), mult(16), 1, 7, tir.Uint8))
	}
	{
		// A product of two uint8 activations (attention's), b packed at
		// run time for dot products, zero points corrected from the row
		// and column sums; the batch broadcast, n no multiple of 16.
		acc := mustExample(te.ZeroPointMatMul("qmatmul_act_acc", U8("A", 2, 9, 16), U8("B", 1, 16, 20), 3, 130))
		b.add("qmatmul_act")(te.Requantize("qmatmul_act", acc, nil, mult(1), 2, 120, tir.Uint8))
	}
	{
		acc := mustExample(te.IntConv("qconv_acc", U8("X", 1, 6, 9, 9), I8("W", 8, 6, 3, 3), 100, te.ConvAttrs{Pads: []int{1, 1, 1, 1}}, te.IntConvOptions{}))
		b.add("qconv")(te.Requantize("qconv", acc, I32("bias", 8), mult(8), 1, 128, tir.Uint8))
	}
	{
		acc := mustExample(te.IntConv("qdw_acc", U8("X", 1, 8, 9, 9), I8("W", 8, 1, 3, 3), 3,
			te.ConvAttrs{AutoPad: "SAME_UPPER", Strides: []int{2, 2}, Group: 8}, te.IntConvOptions{}))
		b.add("qconv_depthwise")(te.Requantize("qconv_depthwise", acc, nil, mult(1), 1, 0, tir.Int8))
	}
	{
		acc := mustExample(te.IntConv("qconv_nhwc_acc", U8("X", 1, 7, 9, 6), I8("W", 8, 6, 3, 3), 9,
			te.ConvAttrs{Pads: []int{1, 1, 1, 1}}, te.IntConvOptions{NHWC: true}))
		b.add("qconv_nhwc")(te.Requantize("qconv_nhwc", acc, I32("bias", 8), mult(8), 3, 128, tir.Uint8))
	}
	{
		// The channel reduction in groups of four (a dot-product
		// instruction's shape), 8 channels of a stride-2 window.
		acc := mustExample(te.IntConv("qconv_dot4_acc", U8("X", 1, 7, 9, 8), I8("W", 16, 8, 3, 3), 17,
			te.ConvAttrs{Pads: []int{1, 1, 1, 1}, Strides: []int{2, 1}}, te.IntConvOptions{NHWC: true, Dot: 4}))
		b.add("qconv_dot4")(te.Requantize("qconv_dot4", acc, I32("bias", 16), mult(16), 3, 128, tir.Uint8))
	}
	{
		// The same with each pair's sum saturated to int16 (vpmaddubsw's
		// arithmetic): the sweeps' weights span int8, so some pairs
		// saturate, in the kernels as in the reference.
		acc := mustExample(te.IntConv("qconv_dot4s_acc", U8("X", 1, 5, 6, 8), I8("W", 8, 8, 3, 3), 250,
			te.ConvAttrs{Pads: []int{0, 1, 1, 0}}, te.IntConvOptions{NHWC: true, Dot: 4, SaturatePairs: true}))
		b.add("qconv_dot4s")(te.Requantize("qconv_dot4s", acc, I32("bias", 8), mult(8), 3, 128, tir.Uint8))
	}
	{
		// A grouped convolution (RegNet-X 1.6GF's last stage: 912
		// channels, 24 a group) in saturated groups of four: a vector of
		// output channels lies in one group, so its activations are the
		// same in every lane, though a schedule whose tiles straddle
		// groups indexes them by the lane (measure's
		// TestGroupedDotKernel).
		acc := mustExample(te.IntConv("qconv_grouped_acc", U8("X", 1, 4, 4, 912), I8("W", 912, 24, 3, 3), 5,
			te.ConvAttrs{Pads: []int{1, 1, 1, 1}, Strides: []int{2, 2}, Group: 38}, te.IntConvOptions{NHWC: true, Dot: 4, SaturatePairs: true}))
		b.add("qconv_grouped")(te.Requantize("qconv_grouped", acc, I32("bias", 912), mult(912), 3, 128, tir.Uint8))
	}
	{
		// int8 activations (a symmetric quantized model's) in groups of
		// four channels: the exact signed dot product (sdot).
		I8x := typed(tir.Int8, false)
		acc := mustExample(te.IntConv("qconv_dot4_i8_acc", I8x("X", 1, 5, 6, 8), I8("W", 8, 8, 1, 1), -3,
			te.ConvAttrs{}, te.IntConvOptions{NHWC: true, Dot: 4}))
		b.add("qconv_dot4_i8")(te.Requantize("qconv_dot4_i8", acc, I32("bias", 8), mult(8), 3, 0, tir.Int8))
	}
	{
		// An image's first layer: 3 channels NCHW in, NHWC out, the W
		// taps of each row in saturated groups of four (five taps, the
		// weights padded to eight), stride 2.
		acc := mustExample(te.IntConv("qconv_taps4s_acc", U8("X", 1, 3, 11, 13), I8("W", 16, 3, 5, 8), 127,
			te.ConvAttrs{Pads: []int{2, 2, 2, 2}, Strides: []int{2, 2}, KernelShape: []int{5, 5}},
			te.IntConvOptions{NHWC: true, FromNCHW: true, Dot: 4, DotW: true, SaturatePairs: true}))
		b.add("qconv_taps4s")(te.Requantize("qconv_taps4s", acc, I32("bias", 16), mult(16), 3, 0, tir.Uint8))
	}
	{
		// Summed in float32 (exact for integer weights within the bound;
		// the sweeps' weights are any floats), from NCHW to NHWC.
		x := te.Shifted("qconv_float_x", U8("X", 1, 6, 9, 9), 4)
		acc := mustExample(te.ConvToNHWC("qconv_float_acc", x, te.Constant("W", 8, 6, 3, 3), nil,
			te.ConvAttrs{Pads: []int{1, 1, 1, 1}, Strides: []int{2, 2}}))
		b.add("qconv_float")(te.Requantize("qconv_float", acc, I32("bias", 8), mult(8), 3, 128, tir.Uint8))
	}
	{
		// A depthwise convolution summed in float32 over its uint8 input
		// padded with the zero point (IntConvOptions.Float: the float
		// form's products, no per-tap subtraction), channels-last.
		acc := mustExample(te.IntConv("qdw_float_acc", U8("X", 1, 7, 9, 16), te.Constant("W", 16, 1, 3, 3), 37,
			te.ConvAttrs{Pads: []int{1, 1, 1, 1}, Group: 16}, te.IntConvOptions{NHWC: true, Float: true}))
		b.add("qdw_float")(te.Requantize("qdw_float", acc, I32("bias", 16), mult(16), 3, 128, tir.Uint8))
	}
	{
		// A quantized SiLU tabulated (ops.TableLookup) in a channels-last
		// qconv's epilogue: the requantized lanes index a uint8 table.
		acc := mustExample(te.IntConv("qconv_table_acc", U8("X", 1, 7, 9, 6), I8("W", 8, 6, 3, 3), 9,
			te.ConvAttrs{Pads: []int{1, 1, 1, 1}}, te.IntConvOptions{NHWC: true}))
		r := mustExample(te.Requantize("qconv_table_r", acc, I32("bias", 8), mult(8), 3, 128, tir.Uint8))
		b.add("qconv_table")(te.TableLookup("qconv_table", r, typed(tir.Uint8, true)("T", 256), 0))
	}
	{
		// An int8 tensor's table (its values from -128), int8 entries.
		b.add("i8_table")(te.TableLookup("i8_table", typed(tir.Int8, false)("X", 3, 5, 19), typed(tir.Int8, true)("T", 256), -128))
	}
	{
		// DequantizeLinear of two uint8 tensors, Add, QuantizeLinear.
		a, c := U8("A", 3, 5, 7), U8("B", 3, 5, 7)
		sum := te.Compute("u8_add_sum", a.Shape, func(i []tir.Expr) tir.Expr {
			da := tir.MulE(tir.SubE(&tir.Cast{To: tir.Float32, X: a.At(i...)}, tir.F32(128)), tir.F32(0.02))
			dc := tir.MulE(tir.SubE(&tir.Cast{To: tir.Float32, X: c.At(i...)}, tir.F32(120)), tir.F32(0.03))
			return tir.AddE(da, dc)
		})
		b.add("u8_add")(te.Compute("u8_add", a.Shape, func(i []tir.Expr) tir.Expr {
			q := tir.AddE(tir.CallE("rint", tir.MulE(sum.At(i...), tir.F32(1.0/0.04))), tir.F32(125))
			return &tir.Cast{To: tir.Uint8, X: tir.MinE(tir.MaxE(q, tir.F32(0)), tir.F32(255))}
		}), nil)
	}
	{
		// A quantized attention's softmax input: the scores and the
		// mask each quantized and dequantized (QuantizeLinear's
		// division, rint and saturation), added, the sum quantized and
		// dequantized again, read by the row maximum and by the
		// exponentials (sketch's inline_or_keep_shared).
		qdq := func(x tir.Expr, scale, zero float64) tir.Expr {
			q := tir.AddE(tir.CallE("rint", tir.DivE(x, tir.F32(scale))), tir.F32(zero))
			q = tir.MinE(tir.MaxE(q, tir.F32(0)), tir.F32(255))
			return tir.MulE(tir.SubE(q, tir.F32(zero)), tir.F32(scale))
		}
		x, mask := te.Placeholder("X", 2, 6, 32), te.Placeholder("M", 32)
		in := te.Compute("q_softmax_in", x.Shape, func(i []tir.Expr) tir.Expr {
			return qdq(tir.AddE(qdq(x.At(i...), 0.11, 122), qdq(mask.At(i[2]), 0.0078, 127)), 0.0197, 136)
		})
		b.add("q_softmax")(te.Softmax("q_softmax", in, 2))
	}
	{
		// MaxPool on uint8 data as an int32 max reduction.
		x := U8("X", 1, 3, 9, 11)
		m := te.Reduce("u8_max", []int{1, 3, 4, 5}, te.MaxReduce, []int{3, 3}, func(i, r []tir.Expr) tir.Expr {
			y := tir.AddE(tir.MulE(i[2], te.Idx(2)), r[0])
			z := tir.AddE(tir.MulE(i[3], te.Idx(2)), r[1])
			return &tir.Cast{To: tir.Int32, X: x.At(i[0], i[1], y, z)}
		})
		b.add("u8_max_pool")(te.Compute("u8_max_pool", m.Shape, func(i []tir.Expr) tir.Expr {
			return &tir.Cast{To: tir.Uint8, X: m.At(i...)}
		}), nil)
	}
	{
		// A quantized MaxPool as the model lowers it: a uint8 max
		// reduction over channels-last windows padded with uint8's 0,
		// 16 channels (two vectors' updates interleaved per tap).
		x := U8("X", 1, 9, 11, 16)
		b.add("u8_max_pool_nhwc")(te.MaxPoolNHWC("u8_max_pool_nhwc", x, te.PoolAttrs{KernelShape: []int{3, 3}, Strides: []int{2, 2}, Pads: []int{1, 1, 1, 1}}))
	}
}
