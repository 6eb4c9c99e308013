package assemble

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/frontend"
	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/partition"
	"github.com/tessera-ml/tessera/tir"
	"github.com/tessera-ml/tessera/tsrt"
)

// qlinearModel is x (float32) → QuantizeLinear (uint8) → QLinearConv
// (3×3, padded, per-channel int8 weights of magnitude 112 to 127 over 64
// channels, so that its sums may leave ±2^24 and run in int32; int32
// bias) → QLinearConv (3×3, stride 2, two groups, no bias: summed in
// float32, exactly) → QLinearConv (depthwise 3×3, padded, int32 bias:
// summed in float32 over the input padded with its zero point, the bias
// folding the zero point's share) → QLinearMatMul over the last axis →
// DequantizeLinear:
// every QLinear op in its integer form, uint8 between them. It returns
// the graph and the parameters a direct computation needs.
type qconvParams struct {
	w           []int64 // [M, C/g, 3, 3]
	ws          []float32
	bias        []int64
	M, C, group int
	stride, pad int
	ys          float32
	yz          int64
}

func int8Tensor(shape []int, v []int64) *graph.Tensor {
	return &graph.Tensor{DType: graph.Int8, Shape: shape, I64: v}
}

func uint8Scalar(v int64) *graph.Tensor {
	return &graph.Tensor{DType: graph.Uint8, Shape: []int{}, I64: []int64{v}}
}

func qlinearModel(rng *rand.Rand) (*graph.Graph, []qconvParams, []int64, []float32, float32, int64) {
	g := graph.New("qlinear", 17)
	g.AddInput("x", graph.Float32, []int{1, 64, 9, 9})
	scalar := func(name string, v float32) string {
		g.AddConst(name, graph.Float32Tensor([]int{}, []float32{v}))
		return name
	}
	const xs, xz = float32(0.03), int64(120)
	g.AddConst("xz", uint8Scalar(xz))
	g.AddNode(&graph.Node{Name: "q", OpType: "QuantizeLinear", Inputs: []string{"x", scalar("xs", xs), "xz"}, Outputs: []string{"xq"}})
	convs := []qconvParams{
		{M: 16, C: 64, group: 1, stride: 1, pad: 1, ys: 0.05, yz: 100},
		{M: 12, C: 16, group: 2, stride: 2, pad: 0, ys: 0.08, yz: 90},
		{M: 12, C: 12, group: 12, stride: 1, pad: 1, ys: 0.06, yz: 110},
	}
	in, inScale, inZero := "xq", xs, "xz"
	for k := range convs {
		p := &convs[k]
		n := p.M * p.C / p.group * 9
		for range n {
			if k == 0 {
				p.w = append(p.w, int64(112+rng.IntN(16))*int64(1-2*rng.IntN(2)))
			} else {
				p.w = append(p.w, int64(rng.IntN(255))-127)
			}
		}
		for range p.M {
			if k == 0 {
				p.ws = append(p.ws, float32(0.0002+0.0004*rng.Float64()))
			} else {
				p.ws = append(p.ws, float32(0.002+0.004*rng.Float64()))
			}
		}
		name := func(s string) string { return string(rune('a'+k)) + s }
		g.AddConst(name("w"), int8Tensor([]int{p.M, p.C / p.group, 3, 3}, p.w))
		g.AddConst(name("ws"), graph.Float32Tensor([]int{p.M}, p.ws))
		g.AddConst(name("wz"), int8Tensor([]int{p.M}, make([]int64, p.M)))
		g.AddConst(name("yz"), uint8Scalar(p.yz))
		ins := []string{in, scalar(name("xs"), inScale), inZero, name("w"), name("ws"), name("wz"), scalar(name("ys"), p.ys), name("yz")}
		if k != 1 {
			for range p.M {
				p.bias = append(p.bias, int64(rng.IntN(40001))-20000)
			}
			g.AddConst(name("b"), &graph.Tensor{DType: graph.Int32, Shape: []int{p.M}, I64: p.bias})
			ins = append(ins, name("b"))
		}
		out := name("y")
		g.AddNode(&graph.Node{Name: name("conv"), OpType: "QLinearConv", Inputs: ins, Outputs: []string{out}, Attrs: map[string]graph.Attr{
			"pads":    {Kind: graph.AttrInts, Ints: []int64{int64(p.pad), int64(p.pad), int64(p.pad), int64(p.pad)}},
			"strides": {Kind: graph.AttrInts, Ints: []int64{int64(p.stride), int64(p.stride)}},
			"group":   {Kind: graph.AttrInt, I: int64(p.group)},
		}})
		in, inScale, inZero = out, p.ys, name("yz") // the next op reads y with its zero point
	}
	// QLinearMatMul over the last axis (4): [1, 12, 4, 4] · [4, 6].
	var mw []int64
	for range 4 * 6 {
		mw = append(mw, int64(rng.IntN(255))-127)
	}
	const ms, mys, myz = float32(0.01), float32(0.04), int64(130)
	g.AddConst("mw", int8Tensor([]int{4, 6}, mw))
	g.AddConst("mwz", int8Tensor([]int{}, []int64{0}))
	g.AddConst("myz", uint8Scalar(myz))
	g.AddConst("mxz", uint8Scalar(convs[len(convs)-1].yz))
	g.AddNode(&graph.Node{Name: "mm", OpType: "QLinearMatMul", Inputs: []string{in, scalar("mxs", inScale), "mxz", "mw", scalar("mws", ms), "mwz", scalar("mys", mys), "myz"}, Outputs: []string{"my"}})
	g.AddNode(&graph.Node{Name: "dq", OpType: "DequantizeLinear", Inputs: []string{"my", "mys", "myz"}, Outputs: []string{"y"}})
	g.Outputs = []string{"y"}
	return g, convs, mw, []float32{xs, ms}, mys, myz
}

// qlinearDirect computes qlinearModel's output in Go, in int64 and the
// float32 operations ONNX's QLinear ops define.
func qlinearDirect(x []float32, convs []qconvParams, mw []int64, scales []float32, mys float32, myz int64) []float32 {
	xs := scales[0]
	const xz = 120
	q := make([]int64, len(x))
	for i, v := range x {
		q[i] = int64(min(max(math.RoundToEven(float64(v/xs))+xz, 0), 255))
	}
	C, H := 64, 9
	inScale, inZero := xs, int64(xz)
	for _, p := range convs {
		Ho := (H+2*p.pad-3)/p.stride + 1
		Cg, Mg := p.C/p.group, p.M/p.group
		out := make([]int64, p.M*Ho*Ho)
		for m := range p.M {
			mult := inScale * p.ws[m] / p.ys
			for oy := range Ho {
				for ox := range Ho {
					var acc int64
					for c := range Cg {
						ch := (m/Mg)*Cg + c
						for ky := range 3 {
							for kx := range 3 {
								iy, ix := oy*p.stride+ky-p.pad, ox*p.stride+kx-p.pad
								v := inZero
								if iy >= 0 && iy < H && ix >= 0 && ix < H {
									v = q[(ch*H+iy)*H+ix]
								}
								acc += (v - inZero) * p.w[((m*Cg+c)*3+ky)*3+kx]
							}
						}
					}
					if p.bias != nil {
						acc += p.bias[m]
					}
					r := math.RoundToEven(float64(float32(acc)*mult)) + float64(p.yz)
					out[(m*Ho+oy)*Ho+ox] = int64(min(max(r, 0), 255))
				}
			}
		}
		q, C, H, inScale, inZero = out, p.M, Ho, p.ys, p.yz
	}
	// QLinearMatMul: rows of the last axis (H) against mw [H, 6].
	mult := inScale * scales[1] / mys
	var y []float32
	for r := range C * H {
		for n := range 6 {
			var acc int64
			for k := range H {
				acc += (q[r*H+k] - inZero) * mw[k*6+n]
			}
			v := min(max(math.RoundToEven(float64(float32(acc)*mult))+float64(myz), 0), 255)
			y = append(y, (float32(v)-float32(myz))*mys)
		}
	}
	return y
}

// TestQLinearIntegerModel: QLinearConv and QLinearMatMul with constant
// weights run on integers — uint8 tensors between them, sums in int32
// where they may leave ±2^24, else in float32 (exactly); every one in
// int32 for a target whose dot instruction sums groups exactly
// (ExactDots) — and the built model's output, the reference evaluator's
// and a direct computation in Go are the same numbers, exactly.
func TestQLinearIntegerModel(t *testing.T) {
	for _, c := range []struct {
		exact bool
		ints  int // int32 reductions among the tasks
	}{
		{false, 1}, // the first QLinearConv
		{true, 3},  // every QLinear op: its groups sum exactly (VNNI)
	} {
		t.Run(map[bool]string{false: "saturated pairs", true: "exact dots"}[c.exact], func(t *testing.T) { testQLinearIntegerModel(t, c.exact, c.ints) })
	}
}

// testQLinearIntegerModel is TestQLinearIntegerModel for a target that
// sums dot groups exactly in one instruction (exact: ExactDots) or not,
// with ints int32 reductions among the tasks.
func testQLinearIntegerModel(t *testing.T, exact bool, want int) {
	rng := rand.New(rand.NewPCG(7, 8))
	g, convs, mw, scales, mys, myz := qlinearModel(rng)
	x := make([]float32, 64*9*9)
	for i := range x {
		x[i] = float32(rng.NormFloat64() * 1.5)
	}
	direct := qlinearDirect(x, convs, mw, scales, mys, myz)
	l, plan, ref := integerPlan(t, g, "qlinear.onnx", exact, x)
	ints, ops := 0, ""
	for _, task := range plan.Tasks {
		ops += task.Ops() + "\n"
		for _, tt := range task.DAG.Tensors {
			if tt.DType() == tir.Int32 && tt.Reducer != 0 {
				ints++
			}
		}
	}
	if ints != want {
		t.Errorf("%d int32 reductions among the tasks, want %d; tasks:\n%s", ints, want, ops)
	}
	checkBuiltExact(t, l.Graph, plan, []int64{1, 64, 9, 9}, x, ref[0], direct)
	t.Logf("%d outputs equal; %d tasks", len(direct), len(plan.Tasks))
}

// integerPlan loads g (named file) on integer kernels, ExactDots as
// exact says, and returns it, its plan and the reference evaluator's
// outputs on x.
func integerPlan(t *testing.T, g *graph.Graph, file string, exact bool, x []float32) (*frontend.Loaded, *partition.Plan, [][]float32) {
	t.Helper()
	l, err := frontend.Prepare(g, file, frontend.LoadOptions{Integer: true, ExactDots: exact})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := Reference(l.Graph, [][]float32{x})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := partition.Extract(l.Graph, partition.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return l, plan, ref
}

// checkBuiltExact builds plan of g, runs it on x (of shape shape) and
// checks that its output, the reference evaluator's ref and the direct
// computation direct are the same numbers, exactly.
func checkBuiltExact(t *testing.T, g *graph.Graph, plan *partition.Plan, shape []int64, x, ref, direct []float32) {
	t.Helper()
	dir := t.TempDir()
	if _, err := Build(context.Background(), g, plan, dir, Options{Target: testTarget(recordsKey, nil)}); err != nil {
		t.Fatal(err)
	}
	m, err := tsrt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	outs, err := m.Run(context.Background(), []tsrt.Tensor{tsrt.NewTensor(shape, x)})
	if err != nil {
		t.Fatal(err)
	}
	got, err := tsrt.Values[float32](outs[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(direct) || len(ref) != len(direct) {
		t.Fatalf("%d outputs built, %d in the reference, %d computed directly", len(got), len(ref), len(direct))
	}
	for i := range direct {
		if ref[i] != direct[i] || got[i] != direct[i] {
			t.Fatalf("element %d: built %v, reference %v, direct %v", i, got[i], ref[i], direct[i])
		}
	}
}

// TestQLinearImageTaps: an image's first QLinearConv (3 channels, 7×7,
// stride 2, 7-bit weights) reads its uint8 input NCHW and sums each row's
// W taps in saturated groups of four (te.IntConvOptions.DotW, the weights
// padded to 8 taps), and the built model's output equals the reference
// evaluator's and a direct computation in Go, exactly.
func TestQLinearImageTaps(t *testing.T) {
	for _, exact := range []bool{false, true} {
		t.Run(map[bool]string{false: "saturated pairs", true: "exact dots"}[exact], func(t *testing.T) { testQLinearImageTaps(t, exact) })
	}
}

// testQLinearImageTaps is TestQLinearImageTaps with 7-bit weights summed
// in saturated pairs, or, where the target sums groups exactly
// (LoadOptions.ExactDots), with full-range weights summed exactly.
func testQLinearImageTaps(t *testing.T, exact bool) {
	rng := rand.New(rand.NewPCG(9, 10))
	const C, H, W, M, K, S, P = 3, 19, 22, 16, 7, 2, 3
	const xs, ys = float32(0.02), float32(0.05)
	const xz, yz = int64(128), int64(7)
	g := graph.New("image", 17)
	g.AddInput("x", graph.Float32, []int{1, C, H, W})
	g.AddConst("xs", graph.Float32Tensor([]int{}, []float32{xs}))
	g.AddConst("ys", graph.Float32Tensor([]int{}, []float32{ys}))
	g.AddConst("xz", uint8Scalar(xz))
	g.AddConst("yz", uint8Scalar(yz))
	w := make([]int64, M*C*K*K)
	for i := range w {
		w[i] = int64(rng.IntN(129)) - 64
		if exact {
			w[i] = int64(rng.IntN(255)) - 127
		}
	}
	wsc := make([]float32, M)
	bias := make([]int64, M)
	for m := range M {
		wsc[m] = float32(0.001 + 0.002*rng.Float64())
		bias[m] = int64(rng.IntN(2001)) - 1000
	}
	g.AddConst("w", int8Tensor([]int{M, C, K, K}, w))
	g.AddConst("ws", graph.Float32Tensor([]int{M}, wsc))
	g.AddConst("wz", int8Tensor([]int{M}, make([]int64, M)))
	g.AddConst("b", &graph.Tensor{DType: graph.Int32, Shape: []int{M}, I64: bias})
	g.AddNode(&graph.Node{Name: "q", OpType: "QuantizeLinear", Inputs: []string{"x", "xs", "xz"}, Outputs: []string{"xq"}})
	g.AddNode(&graph.Node{Name: "conv", OpType: "QLinearConv", Inputs: []string{"xq", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"}, Outputs: []string{"yq"}, Attrs: map[string]graph.Attr{
		"pads":    {Kind: graph.AttrInts, Ints: []int64{P, P, P, P}},
		"strides": {Kind: graph.AttrInts, Ints: []int64{S, S}},
	}})
	g.AddNode(&graph.Node{Name: "dq", OpType: "DequantizeLinear", Inputs: []string{"yq", "ys", "yz"}, Outputs: []string{"y"}})
	g.Outputs = []string{"y"}

	x := make([]float32, C*H*W)
	for i := range x {
		x[i] = float32(rng.NormFloat64() * 1.2)
	}
	q := make([]int64, len(x))
	for i, v := range x {
		q[i] = int64(min(max(math.RoundToEven(float64(v/xs))+float64(xz), 0), 255))
	}
	Ho, Wo := (H+2*P-K)/S+1, (W+2*P-K)/S+1
	want := make([]float32, M*Ho*Wo)
	for m := range M {
		mult := xs * wsc[m] / ys
		for oy := range Ho {
			for ox := range Wo {
				acc := bias[m]
				for c := range C {
					for ky := range K {
						for kx := range K {
							iy, ix := oy*S+ky-P, ox*S+kx-P
							if iy >= 0 && iy < H && ix >= 0 && ix < W {
								acc += (q[(c*H+iy)*W+ix] - xz) * w[((m*C+c)*K+ky)*K+kx]
							}
						}
					}
				}
				r := min(max(math.RoundToEven(float64(float32(acc)*mult))+float64(yz), 0), 255)
				want[(m*Ho+oy)*Wo+ox] = (float32(r) - float32(yz)) * ys
			}
		}
	}

	l, plan, ref := integerPlan(t, g, "image.onnx", exact, x)
	grouped, saturated := false, false
	for _, task := range plan.Tasks {
		for _, tt := range task.DAG.Tensors {
			grouped = grouped || strings.HasSuffix(tt.Name, "_qweights_w4") && slices.Equal(tt.Shape, []int{M, C, K, 8})
			saturated = saturated || tt.Body != nil && strings.Contains(tir.ExprString(tt.Body), "int16(")
		}
	}
	if !grouped {
		t.Error("no task reads the weights padded to 8 W taps (the image's taps are not grouped)")
	}
	if saturated == exact {
		t.Errorf("the taps' pairs saturated: %v, want %v", saturated, !exact)
	}
	checkBuiltExact(t, l.Graph, plan, []int64{1, C, H, W}, x, ref[0], want)
}

// TestQLinearMatMulActivations: a QLinearMatMul of two uint8 operands both
// computed at run time (attention's scores: x quantized, and x transposed
// and quantized with another scale and zero point) runs on integers where
// the target sums four 8-bit products exactly (te.ZeroPointMatMul: b packed
// at run time, the zero points corrected from row and column sums), in
// float elsewhere; either way the built model's output, the reference
// evaluator's and a direct computation in Go are the same numbers.
func TestQLinearMatMulActivations(t *testing.T) {
	for _, exact := range []bool{false, true} {
		t.Run(map[bool]string{false: "float", true: "exact dots"}[exact], func(t *testing.T) { testQLinearMatMulActivations(t, exact) })
	}
}

func testQLinearMatMulActivations(t *testing.T, exact bool) {
	const H, M, K = 3, 8, 16
	const as, az, bs, bz, ys, yz = float32(0.05), int64(120), float32(0.04), int64(130), float32(2.5), int64(7)
	g := graph.New("qmatmul", 17)
	g.AddInput("x", graph.Float32, []int{1, H, M, K})
	scalar := func(name string, v float32) string {
		g.AddConst(name, graph.Float32Tensor([]int{}, []float32{v}))
		return name
	}
	g.AddConst("az", uint8Scalar(az))
	g.AddConst("bz", uint8Scalar(bz))
	g.AddConst("yz", uint8Scalar(yz))
	g.AddNode(&graph.Node{Name: "qa", OpType: "QuantizeLinear", Inputs: []string{"x", scalar("as", as), "az"}, Outputs: []string{"a"}})
	g.AddNode(&graph.Node{Name: "t", OpType: "Transpose", Inputs: []string{"x"}, Outputs: []string{"xt"},
		Attrs: map[string]graph.Attr{"perm": {Kind: graph.AttrInts, Ints: []int64{0, 1, 3, 2}}}})
	g.AddNode(&graph.Node{Name: "qb", OpType: "QuantizeLinear", Inputs: []string{"xt", scalar("bs", bs), "bz"}, Outputs: []string{"b"}})
	g.AddNode(&graph.Node{Name: "mm", OpType: "QLinearMatMul", Inputs: []string{"a", "as", "az", "b", "bs", "bz", scalar("ys", ys), "yz"}, Outputs: []string{"y8"}})
	g.AddNode(&graph.Node{Name: "dq", OpType: "DequantizeLinear", Inputs: []string{"y8", "ys", "yz"}, Outputs: []string{"y"}})
	g.Outputs = []string{"y"}

	rng := rand.New(rand.NewPCG(7, 9))
	x := make([]float32, H*M*K)
	for i := range x {
		x[i] = float32(rng.NormFloat64() * 3)
	}
	quant := func(v, s float32, z int64) int64 {
		return int64(min(max(math.RoundToEven(float64(v/s))+float64(z), 0), 255))
	}
	mult := as * bs / ys
	var direct []float32
	for h := range H {
		for m := range M {
			for n := range M {
				var acc int64
				for k := range K {
					a := quant(x[(h*M+m)*K+k], as, az)
					b := quant(x[(h*M+n)*K+k], bs, bz) // xᵀ[k, n] = x[n, k]
					acc += (a - az) * (b - bz)
				}
				v := min(max(math.RoundToEven(float64(float32(acc)*mult))+float64(yz), 0), 255)
				direct = append(direct, (float32(v)-float32(yz))*ys)
			}
		}
	}
	l, plan, ref := integerPlan(t, g, "qmatmul.onnx", exact, x)
	packed := false
	for _, task := range plan.Tasks {
		for _, tt := range task.DAG.Tensors {
			packed = packed || strings.HasSuffix(tt.Name, "_packed")
		}
	}
	if packed != exact {
		t.Errorf("b packed for dot products: %v, want %v (exact dots: %v)", packed, exact, exact)
	}
	checkBuiltExact(t, l.Graph, plan, []int64{1, H, M, K}, x, ref[0], direct)
}
