package partition

import (
	"os"
	"os/exec"
	"testing"

	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/ops"
)

// TestContribQuantizedAgainstOnnxruntime: onnxruntime's quantized contrib
// ops (the QOperator format's QLinearAdd, QLinearMul, QLinearSigmoid,
// QLinearLeakyRelu, QLinearGlobalAveragePool and QLinearAveragePool,
// channels-first and last, QLinearConcat, QGemm with per-tensor and
// per-column weights, quantized and float output) agree with
// onnxruntime-node's kernels within one step of each output's scale, on
// float kernels and on integer ones (where lookup-tables makes the
// sigmoid and the leaky ReLU tables and fuse-qlinear the QGemm a
// QLinearConv).
func TestContribQuantizedAgainstOnnxruntime(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not found: scripts/deps.sh installs nodejs and onnxruntime-node (bench/ort)")
	}
	if _, err := os.Stat("../bench/ort/node_modules/onnxruntime-node/package.json"); err != nil {
		t.Skip("onnxruntime-node not installed: scripts/deps.sh installs it into bench/ort/node_modules")
	}
	u8 := func(v int64) *graph.Tensor { return &graph.Tensor{DType: graph.Uint8, Shape: []int{}, I64: []int64{v}} }
	f := func(v float32) *graph.Tensor { return graph.Float32Tensor([]int{}, []float32{v}) }
	ms := func(n *graph.Node) *graph.Node { n.Domain = ops.ContribDomain; return n }
	node := func(op, name string, ins []string, out string, attrs map[string]graph.Attr) *graph.Node {
		if attrs == nil {
			attrs = map[string]graph.Attr{}
		}
		return &graph.Node{Name: name, OpType: op, Inputs: ins, Outputs: []string{out}, Attrs: attrs}
	}
	consts := map[string]*graph.Tensor{
		"s1": f(0.02), "z1": u8(128), "s2": f(0.015), "z2": u8(120), "s3": f(0.03), "z3": u8(125),
		"ss": f(1.0 / 256), "sz": u8(0), "sl": f(0.025), "zl": u8(40), "sm": f(0.01), "zm": u8(3),
		"sp": f(0.008), "zp": u8(10), "sc": f(0.035), "zc": u8(100),
	}
	// steps: each output's scale (one quantization step).
	type model struct {
		name   string
		x      []int
		nodes  []*graph.Node
		outs   []string
		steps  map[string]float64
		consts map[string]*graph.Tensor
	}
	dq := func(name, x, s, z string) *graph.Node {
		return node("DequantizeLinear", name, []string{x, s, z}, name, nil)
	}
	// Each op reads x's two quantizations (both sides compute those
	// alike): chained, onnxruntime's fixed-point kernels being a step off
	// upstream would be more steps off downstream (a sigmoid's slope).
	elementwise := model{"contrib_elementwise", []int{1, 4, 6, 6}, []*graph.Node{
		node("QuantizeLinear", "qx", []string{"x", "s1", "z1"}, "xq", nil),
		node("QuantizeLinear", "qx2", []string{"x", "s2", "z2"}, "xq2", nil),
		ms(node("QLinearAdd", "add", []string{"xq", "s1", "z1", "xq2", "s2", "z2", "s3", "z3"}, "a", nil)),
		ms(node("QLinearSigmoid", "sig", []string{"xq", "s1", "z1", "ss", "sz"}, "sg", nil)),
		ms(node("QLinearLeakyRelu", "lrelu", []string{"xq2", "s2", "z2", "sl", "zl"}, "l", map[string]graph.Attr{"alpha": {Kind: graph.AttrFloat, F: 0.1}})),
		ms(node("QLinearMul", "mul", []string{"xq", "s1", "z1", "xq2", "s2", "z2", "sm", "zm"}, "m", nil)),
		ms(node("QLinearGlobalAveragePool", "gap", []string{"xq", "s1", "z1", "sp", "zp"}, "p", nil)),
		ms(node("QLinearAveragePool", "ap", []string{"xq2", "s2", "z2", "sp", "zp"}, "ap", map[string]graph.Attr{
			"kernel_shape": {Kind: graph.AttrInts, Ints: []int64{3, 3}}, "pads": {Kind: graph.AttrInts, Ints: []int64{1, 1, 1, 1}},
			"strides": {Kind: graph.AttrInts, Ints: []int64{2, 2}}})),
		ms(node("QLinearConcat", "cat", []string{"sc", "zc", "xq", "s1", "z1", "xq2", "s2", "z2"}, "c", map[string]graph.Attr{"axis": {Kind: graph.AttrInt, I: 1}})),
		dq("add_f", "a", "s3", "z3"), dq("sig_f", "sg", "ss", "sz"), dq("lrelu_f", "l", "sl", "zl"), dq("mul_f", "m", "sm", "zm"),
		dq("gap_f", "p", "sp", "zp"), dq("ap_f", "ap", "sp", "zp"), dq("cat_f", "c", "sc", "zc"),
	}, []string{"add_f", "sig_f", "lrelu_f", "mul_f", "gap_f", "ap_f", "cat_f"}, map[string]float64{
		"add_f": 0.03, "sig_f": 1.0 / 256, "lrelu_f": 0.025, "mul_f": 0.01, "gap_f": 0.008, "ap_f": 0.008, "cat_f": 0.035}, nil}
	last := model{"contrib_channels_last", []int{1, 6, 7, 4}, []*graph.Node{
		node("QuantizeLinear", "qx", []string{"x", "s1", "z1"}, "xq", nil),
		ms(node("QLinearGlobalAveragePool", "gap", []string{"xq", "s1", "z1", "sp", "zp"}, "p", map[string]graph.Attr{"channels_last": {Kind: graph.AttrInt, I: 1}})),
		ms(node("QLinearAveragePool", "ap", []string{"xq", "s1", "z1", "sp", "zp"}, "ap", map[string]graph.Attr{"channels_last": {Kind: graph.AttrInt, I: 1},
			"kernel_shape": {Kind: graph.AttrInts, Ints: []int64{2, 2}}, "strides": {Kind: graph.AttrInts, Ints: []int64{2, 2}}})),
		dq("gap_f", "p", "sp", "zp"), dq("ap_f", "ap", "sp", "zp"),
	}, []string{"gap_f", "ap_f"}, map[string]float64{"gap_f": 0.008, "ap_f": 0.008}, nil}
	// QGemm: x [3, 8] by int8 weights, per column or per tensor, with
	// an int32 bias of scale s1·b_scale.
	w := randT(7, 8, 5)
	wq := &graph.Tensor{DType: graph.Int8, Shape: []int{8, 5}}
	wt := &graph.Tensor{DType: graph.Int8, Shape: []int{5, 8}, I64: make([]int64, 40)}
	for _, v := range w.F32 {
		wq.I64 = append(wq.I64, int64(v*100))
	}
	for r := range 8 {
		for c := range 5 {
			wt.I64[c*8+r] = wq.I64[r*5+c]
		}
	}
	bias := &graph.Tensor{DType: graph.Int32, Shape: []int{5}, I64: []int64{300, -200, 0, 1000, -7}}
	gemm := func(name string, b string, bs, bz *graph.Tensor, transB int64, quantized bool) model {
		ins := []string{"xq", "s1", "z1", b, "bs", "bz", "bias"}
		outs, steps := []string{"y_f"}, map[string]float64{"y_f": 0.05}
		nodes := []*graph.Node{node("QuantizeLinear", "qx", []string{"x", "s1", "z1"}, "xq", nil)}
		if quantized {
			ins = append(ins, "ys", "yz")
			nodes = append(nodes, ms(node("QGemm", "gemm", ins, "y", map[string]graph.Attr{"transB": {Kind: graph.AttrInt, I: transB}})), dq("y_f", "y", "ys", "yz"))
		} else {
			nodes = append(nodes, ms(node("QGemm", "gemm", ins, "y_f", map[string]graph.Attr{"transB": {Kind: graph.AttrInt, I: transB}})))
			steps["y_f"] = 1e-4
		}
		return model{name, []int{3, 8}, nodes, outs, steps, map[string]*graph.Tensor{"w": wq, "wt": wt, "bs": bs, "bz": bz, "bias": bias, "ys": f(0.05), "yz": u8(128)}}
	}
	perColumn := graph.Float32Tensor([]int{5}, []float32{0.004, 0.003, 0.005, 0.002, 0.006})
	zeros := &graph.Tensor{DType: graph.Int8, Shape: []int{5}, I64: make([]int64, 5)}
	models := []model{elementwise, last,
		gemm("qgemm_per_column", "w", perColumn, zeros, 0, true),
		gemm("qgemm_per_column_transposed", "wt", perColumn, zeros, 1, true),
		gemm("qgemm_per_tensor", "w", f(0.004), &graph.Tensor{DType: graph.Int8, Shape: []int{}, I64: []int64{0}}, 0, true),
		gemm("qgemm_float_output", "w", perColumn, zeros, 0, false),
	}
	dir := t.TempDir()
	for _, m := range models {
		for _, integer := range []bool{false, true} {
			g := graph.New(m.name, 17)
			g.Opsets[ops.ContribDomain] = 1
			g.AddInput("x", graph.Float32, m.x)
			for k, v := range consts {
				g.AddConst(k, v)
			}
			for k, v := range m.consts {
				g.AddConst(k, v)
			}
			for _, n := range m.nodes {
				c := *n
				g.AddNode(&c)
			}
			g.Outputs = m.outs
			name := m.name
			if integer {
				name += "_integer"
			}
			if msg := checkAgainstOnnxruntime(dir, name, g, randT(int64(len(m.name)), m.x...), integer, func(o string) float64 { return m.steps[o] * 1.001 }); msg != "" {
				t.Errorf("%s: %s", name, msg)
			}
		}
	}
}
