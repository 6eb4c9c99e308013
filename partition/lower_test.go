package partition

import (
	"errors"
	"math"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/frontend"
	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/te"
)

// mkNode builds a node: inputs and outputs by name, "" for omitted.
func mkNode(op, name string, ins, outs []string, attrs map[string]graph.Attr) *graph.Node {
	if attrs == nil {
		attrs = map[string]graph.Attr{}
	}
	return &graph.Node{OpType: op, Name: name, Inputs: ins, Outputs: outs, Attrs: attrs}
}

func ints(v ...int64) graph.Attr  { return graph.Attr{Kind: graph.AttrInts, Ints: v} }
func intA(v int64) graph.Attr     { return graph.Attr{Kind: graph.AttrInt, I: v} }
func floatA(v float32) graph.Attr { return graph.Attr{Kind: graph.AttrFloat, F: v} }

// oneNode is a graph with input x of the given shape, the constants, and one
// node writing y.
func oneNode(opset int, shape []int, consts map[string]*graph.Tensor, n *graph.Node) *graph.Graph {
	g := graph.New("test", opset)
	g.AddInput("x", graph.Float32, shape)
	for name, c := range consts {
		g.AddConst(name, c)
	}
	g.AddNode(n)
	g.Outputs = []string{"y"}
	return g
}

// evalGraph runs the passes (but disabled), lowers g and evaluates it.
func evalGraph(t *testing.T, g *graph.Graph, disabled map[string]bool, inputs map[string][]float32) [][]float32 {
	t.Helper()
	if err := frontend.RunPasses(g, disabled); err != nil {
		t.Fatal(err)
	}
	return evalLowered(t, g, inputs)
}

func approxEqual(a, b []float32, tol float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(float64(a[i])-float64(b[i])) > tol*(1+math.Abs(float64(b[i]))) {
			return false
		}
	}
	return true
}

func TestLowerOpsetVariants(t *testing.T) {
	x6 := []float32{-3, -1, 0, 1, 2, 5}
	f := func(v ...float32) *graph.Tensor { return graph.Float32Tensor([]int{}, v[:1]) }
	i64 := func(v ...int64) *graph.Tensor { return graph.Int64Tensor([]int{len(v)}, v) }
	tests := []struct {
		name   string
		opset  int
		shape  []int
		consts map[string]*graph.Tensor
		node   *graph.Node
		x      []float32
		want   []float32
	}{
		{"clip bounds as attributes (opset 6)", 6, []int{6}, nil,
			mkNode("Clip", "c", []string{"x"}, []string{"y"}, map[string]graph.Attr{"min": floatA(-1), "max": floatA(2)}),
			x6, []float32{-1, -1, 0, 1, 2, 2}},
		{"clip bounds as inputs (opset 13)", 13, []int{6}, map[string]*graph.Tensor{"lo": f(-1), "hi": f(2)},
			mkNode("Clip", "c", []string{"x", "lo", "hi"}, []string{"y"}, nil),
			x6, []float32{-1, -1, 0, 1, 2, 2}},
		{"clip with only max (opset 13)", 13, []int{6}, map[string]*graph.Tensor{"hi": f(0)},
			mkNode("Clip", "c", []string{"x", "", "hi"}, []string{"y"}, nil),
			x6, []float32{-3, -1, 0, 0, 0, 0}},
		{"reshape shape attribute (opset 4)", 4, []int{2, 3}, nil,
			mkNode("Reshape", "r", []string{"x"}, []string{"y"}, map[string]graph.Attr{"shape": ints(3, 2)}),
			x6, x6},
		{"squeeze axes input (opset 13)", 13, []int{1, 6}, map[string]*graph.Tensor{"a": i64(0)},
			mkNode("Squeeze", "s", []string{"x", "a"}, []string{"y"}, nil),
			x6, x6},
		{"pad attributes (opset 2)", 2, []int{6}, nil,
			mkNode("Pad", "p", []string{"x"}, []string{"y"}, map[string]graph.Attr{"pads": ints(1, 2), "value": floatA(9)}),
			x6, []float32{9, -3, -1, 0, 1, 2, 5, 9, 9}},
		{"pad inputs, reflect (opset 13)", 13, []int{6}, map[string]*graph.Tensor{"p": i64(2, 1)},
			mkNode("Pad", "p", []string{"x", "p"}, []string{"y"}, map[string]graph.Attr{"mode": {Kind: graph.AttrString, S: "reflect"}}),
			x6, []float32{0, -1, -3, -1, 0, 1, 2, 5, 2}},
		{"slice attributes (opset 9)", 9, []int{6}, nil,
			mkNode("Slice", "s", []string{"x"}, []string{"y"}, map[string]graph.Attr{"starts": ints(-2), "ends": ints(100)}),
			x6, []float32{2, 5}},
		{"slice negative step (opset 13)", 13, []int{6}, map[string]*graph.Tensor{"s": i64(-1), "e": i64(math.MinInt64), "a": i64(0), "st": i64(-2)},
			mkNode("Slice", "s", []string{"x", "s", "e", "a", "st"}, []string{"y"}, nil),
			x6, []float32{5, 1, -1}},
		{"elu", 13, []int{6}, nil,
			mkNode("Elu", "e", []string{"x"}, []string{"y"}, map[string]graph.Attr{"alpha": floatA(2)}),
			x6, []float32{2 * float32(math.Expm1(-3)), 2 * float32(math.Expm1(-1)), 0, 1, 2, 5}},
		{"sum of one input", 13, []int{6}, nil,
			mkNode("Sum", "s", []string{"x"}, []string{"y"}, nil),
			x6, x6},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := oneNode(tc.opset, tc.shape, tc.consts, tc.node)
			got := evalGraph(t, g, nil, map[string][]float32{"x": tc.x})
			if !approxEqual(got[0], tc.want, 1e-6) {
				t.Errorf("got %v, want %v", got[0], tc.want)
			}
		})
	}
}

// TestLowerSoftmaxOpsets checks the flattening semantics of Softmax before
// opset 13 against the per-axis semantics after it.
func TestLowerSoftmaxOpsets(t *testing.T) {
	x := make([]float32, 2*2*3)
	for i := range x {
		x[i] = float32(i%5) * 0.5
	}
	run := func(opset int) []float32 {
		g := oneNode(opset, []int{2, 2, 3}, nil, mkNode("Softmax", "s", []string{"x"}, []string{"y"}, map[string]graph.Attr{"axis": intA(1)}))
		return evalGraph(t, g, nil, map[string][]float32{"x": x})[0]
	}
	old, cur := run(11), run(13)
	// opset 11: each batch row of 6 sums to 1; opset 13: each column of
	// axis 1 (2 elements) sums to 1.
	for b := range 2 {
		s := 0.0
		for i := range 6 {
			s += float64(old[b*6+i])
		}
		if math.Abs(s-1) > 1e-5 {
			t.Errorf("opset 11: row %d sums to %v", b, s)
		}
	}
	for b := range 2 {
		for k := range 3 {
			s := float64(cur[b*6+k] + cur[b*6+3+k])
			if math.Abs(s-1) > 1e-5 {
				t.Errorf("opset 13: column (%d, %d) sums to %v", b, k, s)
			}
		}
	}
}

func TestLowerErrors(t *testing.T) {
	tests := []struct {
		name  string
		opset int
		node  *graph.Node
		want  string
		check func(error) bool
	}{
		{"unsupported op", 13, mkNode("NonMaxSuppression", "m", []string{"x", "x"}, []string{"y"}, nil),
			"unsupported op NonMaxSuppression (opset 13) at node m", func(err error) bool { return errors.Is(err, graph.ErrUnsupported) }},
		{"other domain", 13, &graph.Node{OpType: "Relu", Domain: "com.example", Name: "r", Inputs: []string{"x"}, Outputs: []string{"y"}},
			"unsupported op com.example.Relu", func(err error) bool { return errors.Is(err, graph.ErrUnsupported) }},
		{"clip bound not constant", 13, mkNode("Clip", "c", []string{"x", "x"}, []string{"y"}, nil),
			"Clip at node c: min input x must be a constant", func(err error) bool {
				var nc *graph.NotConstantError
				return errors.As(err, &nc) && nc.Value == "x"
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := oneNode(tc.opset, []int{1}, nil, tc.node)
			g.Opsets["com.example"] = 1
			err := frontend.InferShapes(g)
			if err == nil {
				_, err = Lower(g)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !tc.check(err) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestLowerWeightsArePlaceholders(t *testing.T) {
	w := graph.Float32Tensor([]int{2, 1, 1, 1}, []float32{3, 4})
	g := oneNode(13, []int{1, 1, 2, 2}, map[string]*graph.Tensor{"w": w}, mkNode("Conv", "c", []string{"x", "w"}, []string{"y"}, nil))
	if err := frontend.RunPasses(g, nil); err != nil {
		t.Fatal(err)
	}
	l, err := Lower(g)
	if err != nil {
		t.Fatal(err)
	}
	d, err := te.NewDAG(l.Outputs...)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, in := range d.Inputs {
		names = append(names, l.Sources[in])
	}
	if strings.Join(names, ",") != "x,w" {
		t.Fatalf("DAG inputs %v, want x,w", names)
	}
	feed, err := l.Feed(d, map[string][]float32{"x": {1, 2, 3, 4}})
	if err != nil {
		t.Fatal(err)
	}
	if !approxEqual(feed[1], w.F32, 0) {
		t.Errorf("weight fed as %v", feed[1])
	}
}

// TestPassesPreserveResults evaluates graphs with every pass on and with
// all of them off: BatchNormalization folding, no-op removal, CSE and
// constant folding must not change the numbers.
func TestPassesPreserveResults(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	randT := func(shape ...int) *graph.Tensor {
		v := make([]float32, graph.NumElems(shape))
		for i := range v {
			v[i] = rng.Float32()*2 - 1
		}
		return graph.Float32Tensor(shape, v)
	}
	pos := func(n int) *graph.Tensor {
		v := make([]float32, n)
		for i := range v {
			v[i] = 0.5 + rng.Float32()
		}
		return graph.Float32Tensor([]int{n}, v)
	}
	bnAttrs := map[string]graph.Attr{"epsilon": floatA(1e-3)}
	tests := []struct {
		name   string
		xshape []int
		consts map[string]*graph.Tensor
		nodes  []*graph.Node
	}{
		{"conv, identity, batchnorm, relu", []int{1, 3, 5, 5},
			map[string]*graph.Tensor{"w": randT(4, 3, 3, 3), "b": randT(4), "s": pos(4), "bb": randT(4), "m": randT(4), "v": pos(4)},
			[]*graph.Node{
				mkNode("Conv", "c", []string{"x", "w", "b"}, []string{"c1"}, map[string]graph.Attr{"pads": ints(1, 1, 1, 1)}),
				mkNode("Identity", "i", []string{"c1"}, []string{"c2"}, nil),
				mkNode("BatchNormalization", "bn", []string{"c2", "s", "bb", "m", "v"}, []string{"c3"}, bnAttrs),
				mkNode("Relu", "r", []string{"c3"}, []string{"y"}, nil),
			}},
		{"gemm, batchnorm, duplicate branches", []int{3, 4},
			map[string]*graph.Tensor{"w": randT(5, 4), "cc": randT(5), "s": pos(5), "bb": randT(5), "m": randT(5), "v": pos(5)},
			[]*graph.Node{
				mkNode("Gemm", "g", []string{"x", "w", "cc"}, []string{"g1"}, map[string]graph.Attr{"transB": intA(1), "alpha": floatA(0.5), "beta": floatA(2)}),
				mkNode("BatchNormalization", "bn", []string{"g1", "s", "bb", "m", "v"}, []string{"g2"}, bnAttrs),
				mkNode("Tanh", "t1", []string{"g2"}, []string{"a"}, nil),
				mkNode("Tanh", "t2", []string{"g2"}, []string{"b2"}, nil),
				mkNode("Add", "add", []string{"a", "b2"}, []string{"y"}, nil),
			}},
		// A DenseNet block: the BatchNormalization of a Concat cannot
		// fold (decompose-batchnorm), and the layout pass carries Concat,
		// AveragePool and Split channels-last.
		{"dense block: concat, batchnorm, average pool, split", []int{1, 3, 7, 7},
			map[string]*graph.Tensor{"w0": randT(4, 3, 3, 3), "w1": randT(2, 4, 1, 1), "w2": randT(4, 6, 1, 1),
				"s": pos(6), "bb": randT(6), "m": randT(6), "v": pos(6), "sizes": graph.Int64Tensor([]int{2}, []int64{3, 1})},
			[]*graph.Node{
				mkNode("Conv", "c0", []string{"x", "w0"}, []string{"a"}, map[string]graph.Attr{"pads": ints(1, 1, 1, 1)}),
				mkNode("Relu", "r0", []string{"a"}, []string{"a1"}, nil),
				mkNode("Conv", "c1", []string{"a1", "w1"}, []string{"f1"}, nil),
				mkNode("Concat", "cat", []string{"a", "f1"}, []string{"k"}, map[string]graph.Attr{"axis": intA(1)}),
				mkNode("BatchNormalization", "bn", []string{"k", "s", "bb", "m", "v"}, []string{"k1"}, bnAttrs),
				mkNode("Relu", "r1", []string{"k1"}, []string{"k2"}, nil),
				mkNode("Conv", "c2", []string{"k2", "w2"}, []string{"t"}, nil),
				mkNode("AveragePool", "ap", []string{"t"}, []string{"t1"}, map[string]graph.Attr{"kernel_shape": ints(3, 3), "strides": ints(2, 2),
					"pads": ints(1, 1, 1, 1), "count_include_pad": intA(0)}),
				mkNode("Split", "sp", []string{"t1", "sizes"}, []string{"y1", "y2"}, map[string]graph.Attr{"axis": intA(1)}),
				mkNode("Concat", "cat2", []string{"y2", "y1"}, []string{"y"}, map[string]graph.Attr{"axis": intA(1)}),
			}},
		// nn.LayerNorm as PyTorch exports it below opset 17
		// (fuse-layernorm).
		{"layer norm written out", []int{1, 5, 8},
			map[string]*graph.Tensor{"two": graph.Float32Tensor([]int{}, []float32{2}), "eps": graph.Float32Tensor([]int{}, []float32{1e-5}),
				"gamma": randT(8), "beta": randT(8)},
			[]*graph.Node{
				mkNode("ReduceMean", "m", []string{"x"}, []string{"mu"}, map[string]graph.Attr{"axes": ints(-1)}),
				mkNode("Sub", "s", []string{"x", "mu"}, []string{"d"}, nil),
				mkNode("Pow", "p", []string{"d", "two"}, []string{"d2"}, nil),
				mkNode("ReduceMean", "v", []string{"d2"}, []string{"var"}, map[string]graph.Attr{"axes": ints(-1)}),
				mkNode("Add", "a", []string{"var", "eps"}, []string{"ve"}, nil),
				mkNode("Sqrt", "q", []string{"ve"}, []string{"sd"}, nil),
				mkNode("Div", "n", []string{"d", "sd"}, []string{"nx"}, nil),
				mkNode("Mul", "g", []string{"nx", "gamma"}, []string{"gx"}, nil),
				mkNode("Add", "b", []string{"gx", "beta"}, []string{"y"}, nil),
			}},
		// ScatterND of constants folds (Swin's attention mask): the
		// folded values are the kernel's.
		{"scatternd of constants", []int{4, 3},
			map[string]*graph.Tensor{"data": randT(4, 3), "idx": graph.Int64Tensor([]int{2, 1}, []int64{1, -1}), "upd": randT(2, 3),
				"idx2": graph.Int64Tensor([]int{3, 2}, []int64{0, 1, 2, 2, 0, 1}), "upd2": randT(3)},
			[]*graph.Node{
				mkNode("ScatterND", "s1", []string{"data", "idx", "upd"}, []string{"s"}, nil),
				mkNode("ScatterND", "s2", []string{"s", "idx2", "upd2"}, []string{"s2"}, map[string]graph.Attr{"reduction": {Kind: graph.AttrString, S: "add"}}),
				mkNode("Add", "a", []string{"x", "s2"}, []string{"y"}, nil),
			}},
		// A QDQ convolution as onnxruntime's quantize_static writes it:
		// per-channel int8 weights, an int32 bias and uint8 activations.
		// The weights' and the bias's DequantizeLinear fold (to the values
		// the kernel would compute), the activations' stay.
		{"qdq conv: per-channel int8 weights, int32 bias, uint8 activations", []int{1, 3, 6, 6},
			map[string]*graph.Tensor{
				"wq": {DType: graph.Int8, Shape: []int{4, 3, 3, 3}, I64: randInts(rng, 4*3*3*3, -127, 127)},
				"ws": graph.Float32Tensor([]int{4}, []float32{0.011, 0.0073, 0.02, 0.0051}),
				"wz": {DType: graph.Int8, Shape: []int{4}, I64: []int64{0, 0, 0, 0}},
				"bq": {DType: graph.Int32, Shape: []int{4}, I64: []int64{-1200, 35, 999, 0}},
				"bs": graph.Float32Tensor([]int{4}, []float32{0.011 / 127, 0.0073 / 127, 0.02 / 127, 0.0051 / 127}),
				"xs": graph.Float32Tensor([]int{}, []float32{1.0 / 127}), "xz": {DType: graph.Uint8, Shape: []int{}, I64: []int64{128}},
				"ys": graph.Float32Tensor([]int{}, []float32{0.013}), "yz": {DType: graph.Uint8, Shape: []int{}, I64: []int64{0}},
			},
			[]*graph.Node{
				mkNode("QuantizeLinear", "qx", []string{"x", "xs", "xz"}, []string{"xq"}, nil),
				mkNode("DequantizeLinear", "dqx", []string{"xq", "xs", "xz"}, []string{"xd"}, nil),
				mkNode("DequantizeLinear", "dqw", []string{"wq", "ws", "wz"}, []string{"wd"}, map[string]graph.Attr{"axis": intA(0)}),
				mkNode("DequantizeLinear", "dqb", []string{"bq", "bs"}, []string{"bd"}, map[string]graph.Attr{"axis": intA(0)}),
				mkNode("Conv", "c", []string{"xd", "wd", "bd"}, []string{"c1"}, map[string]graph.Attr{"pads": ints(1, 1, 1, 1)}),
				mkNode("Relu", "r", []string{"c1"}, []string{"c2"}, nil),
				mkNode("QuantizeLinear", "qy", []string{"c2", "ys", "yz"}, []string{"yq"}, nil),
				mkNode("DequantizeLinear", "dqy", []string{"yq", "ys", "yz"}, []string{"y"}, nil),
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mk := func() *graph.Graph {
				g := graph.New("test", 13)
				g.AddInput("x", graph.Float32, tc.xshape)
				for name, c := range tc.consts {
					g.AddConst(name, c)
				}
				for _, n := range tc.nodes {
					nn := *n
					g.AddNode(&nn)
				}
				g.Outputs = []string{"y"}
				return g
			}
			x := randT(tc.xshape...).F32
			off := map[string]bool{}
			for _, p := range frontend.PassNames() {
				off[p] = true
			}
			plain := evalGraph(t, mk(), off, map[string][]float32{"x": x})
			g := mk()
			opt := evalGraph(t, g, nil, map[string][]float32{"x": x})
			for _, n := range g.Nodes {
				if n.OpType == "BatchNormalization" || n.OpType == "Identity" || n.OpType == "ReduceMean" || n.OpType == "ScatterND" {
					t.Errorf("%s left after the passes", n.OpType)
				}
				if n.OpType == "DequantizeLinear" && g.ConstOf(n.Inputs[0]) != nil {
					t.Errorf("the DequantizeLinear of constant %s was not folded", n.Inputs[0])
				}
			}
			if !approxEqual(opt[0], plain[0], 1e-5) {
				t.Errorf("with passes %v\nwithout     %v", opt[0], plain[0])
			}
		})
	}
}

// randInts draws n integers in [lo, hi].
func randInts(rng *rand.Rand, n int, lo, hi int64) []int64 {
	v := make([]int64, n)
	for i := range v {
		v[i] = lo + rng.Int63n(hi-lo+1)
	}
	return v
}

// TestZeroScale: a constant quantization scale of zero (or infinite, or
// NaN) is an error naming the node and the element, whether the op lowers
// (QuantizeLinear of run-time data), folds (DequantizeLinear of a constant
// weight) or expands (QLinearMatMul's output scale).
func TestZeroScale(t *testing.T) {
	f32 := func(v ...float32) *graph.Tensor { return graph.Float32Tensor([]int{len(v)}, v) }
	scalar := func(v float32) *graph.Tensor { return graph.Float32Tensor([]int{}, []float32{v}) }
	u8 := func(v int64) *graph.Tensor { return &graph.Tensor{DType: graph.Uint8, Shape: []int{}, I64: []int64{v}} }
	for _, c := range []struct {
		name   string
		consts map[string]*graph.Tensor
		node   *graph.Node
		want   string
	}{
		{"QuantizeLinear", map[string]*graph.Tensor{"s": scalar(0), "z": u8(128)},
			mkNode("QuantizeLinear", "q", []string{"x", "s", "z"}, []string{"y"}, nil),
			"QuantizeLinear at node q: scale s element 0 is 0: a quantization scale must be nonzero and finite"},
		{"DequantizeLinear per axis", map[string]*graph.Tensor{"w": {DType: graph.Int8, Shape: []int{2, 4}, I64: []int64{1, 2, 3, 4, 5, 6, 7, 8}}, "s": f32(0.5, float32(math.Inf(1)))},
			mkNode("DequantizeLinear", "dq", []string{"w", "s"}, []string{"wf"}, map[string]graph.Attr{"axis": intA(0)}),
			"DequantizeLinear at node dq: scale s element 1 is +Inf"},
		{"QLinearMatMul", map[string]*graph.Tensor{"a": {DType: graph.Uint8, Shape: []int{4, 2}, I64: make([]int64, 8)}, "as": scalar(0.1), "az": u8(0),
			"bs": scalar(0.2), "bz": u8(0), "ys": scalar(0), "yz": u8(0)},
			mkNode("QLinearMatMul", "qmm", []string{"a", "as", "az", "xq", "bs", "bz", "ys", "yz"}, []string{"y"}, nil),
			"QLinearMatMul at node qmm: scale ys element 0 is 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := oneNode(17, []int{2, 4}, c.consts, c.node)
			if c.name == "DequantizeLinear per axis" {
				g.AddNode(mkNode("Add", "add", []string{"x", "wf"}, []string{"y"}, nil))
			}
			if c.name == "QLinearMatMul" {
				g.Nodes = slices.Insert(g.Nodes, 0, mkNode("QuantizeLinear", "qx", []string{"x", "as", "az"}, []string{"xq"}, nil))
				g.Value("xq")
			}
			err := frontend.RunPasses(g, nil)
			if err == nil {
				_, err = Lower(g)
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}
