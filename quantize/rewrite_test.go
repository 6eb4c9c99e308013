package quantize

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/assemble"
	"github.com/tessera-ml/tessera/frontend"
	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/graph/onnx"
)

// builder writes small float graphs with random weights.
type builder struct {
	t   *testing.T
	g   *graph.Graph
	rng *rand.Rand
}

func newBuilder(t *testing.T, opset int) *builder {
	return &builder{t: t, g: graph.New("test", opset), rng: rand.New(rand.NewPCG(7, 7))}
}

func (b *builder) input(name string, shape ...int) { b.g.AddInput(name, graph.Float32, shape) }

// weight adds a constant of random values in [-scale, scale).
func (b *builder) weight(name string, scale float32, shape ...int) {
	v := make([]float32, graph.NumElems(shape))
	for i := range v {
		v[i] = scale * float32(2*b.rng.Float64()-1)
	}
	b.g.AddConst(name, graph.Float32Tensor(shape, v))
}

func (b *builder) node(op string, ins, outs []string, attrs map[string]graph.Attr) {
	b.g.AddNode(&graph.Node{Name: op + "_" + outs[0], OpType: op, Inputs: ins, Outputs: outs, Attrs: attrs})
}

func (b *builder) done(outputs ...string) *graph.Graph {
	b.g.Outputs = outputs
	if err := frontend.InferShapes(b.g); err != nil {
		b.t.Fatal(err)
	}
	return b.g
}

func ints(v ...int64) graph.Attr { return graph.Attr{Kind: graph.AttrInts, Ints: v} }
func one(v int64) graph.Attr     { return graph.Attr{Kind: graph.AttrInt, I: v} }

// quantizeTest quantizes g on 3 random samples with the reference
// evaluator.
func quantizeTest(t *testing.T, g *graph.Graph) (*graph.Graph, *Report) {
	t.Helper()
	samples, err := RandomSamples(g, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	q, rep, err := Quantize(context.Background(), g, Options{Samples: samples, Run: ReferenceRunner})
	if err != nil {
		t.Fatal(err)
	}
	return q, rep
}

// opsOrder lists the graph's op types in node order.
func opsOrder(g *graph.Graph) []string {
	var out []string
	for _, n := range g.Nodes {
		out = append(out, n.OpType)
	}
	return out
}

// producer returns the node that writes value.
func producer(g *graph.Graph, value string) *graph.Node { return g.Producers()[value] }

// constOf returns value's constant, failing the test when it is none.
func constOf(t *testing.T, g *graph.Graph, value string) *graph.Tensor {
	t.Helper()
	v := g.Values[value]
	if v == nil || v.Const == nil {
		t.Fatalf("%s is not a constant", value)
	}
	return v.Const
}

// dqParams returns the scale and zero-point constants of the
// DequantizeLinear that writes value, and its axis (-1 without).
func dqParams(t *testing.T, g *graph.Graph, value string) (q, scale, zp *graph.Tensor, axis int) {
	t.Helper()
	n := producer(g, value)
	if n == nil || n.OpType != "DequantizeLinear" {
		t.Fatalf("%s is not written by a DequantizeLinear (%v)", value, n)
	}
	axis = -1
	if a, ok := n.Attrs["axis"]; ok {
		axis = int(a.I)
	}
	if v := g.Values[n.Inputs[0]]; v.Const != nil {
		q = v.Const
	}
	return q, constOf(t, g, n.Inputs[1]), constOf(t, g, n.Inputs[2]), axis
}

// TestConvRelu checks the QDQ form of Conv → Relu → output: the input's
// Q/DQ, the weight per output channel, the int32 bias of scale input ×
// weight, the Relu folded into the Conv's Q, the output keeping its name;
// and that the model computes the float model's output within the
// quantization error (the input's half step through 18 weights of at most
// 0.5 is up to 8 output steps), and encodes and decodes.
func TestConvRelu(t *testing.T) {
	b := newBuilder(t, 17)
	b.input("x", 1, 2, 5, 5)
	b.weight("w", 0.5, 3, 2, 3, 3)
	b.weight("b", 0.2, 3)
	b.node("Conv", []string{"x", "w", "b"}, []string{"c"}, map[string]graph.Attr{"pads": ints(1, 1, 1, 1)})
	b.node("Relu", []string{"c"}, []string{"y"}, nil)
	g := b.done("y")
	q, rep := quantizeTest(t, g)

	want := []string{"QuantizeLinear", "DequantizeLinear", "DequantizeLinear", "DequantizeLinear", "Conv", "QuantizeLinear", "DequantizeLinear"}
	if got := opsOrder(q); !slices.Equal(got, want) {
		t.Fatalf("nodes %v, want %v", got, want)
	}
	conv := q.Nodes[4]
	if conv.Outputs[0] != "y_QuantizeLinear_Input" || producer(q, "y").OpType != "DequantizeLinear" {
		t.Errorf("the Conv writes %s; y is written by %v", conv.Outputs[0], producer(q, "y"))
	}
	_, xs, xz, _ := dqParams(t, q, conv.Inputs[0])
	if xs.Len() != 1 || xz.DType != graph.Uint8 || len(xs.Shape) != 0 {
		t.Errorf("input scale %v, zero point %v: want uint8 scalars", xs, xz)
	}
	wq, ws, wz, axis := dqParams(t, q, conv.Inputs[1])
	if wq.DType != graph.Int8 || !slices.Equal(wq.Shape, []int{3, 2, 3, 3}) || axis != 0 || !slices.Equal(ws.Shape, []int{3}) || wz.DType != graph.Int8 || slices.ContainsFunc(wz.I64, func(z int64) bool { return z != 0 }) {
		t.Errorf("weight %v axis %d scales %v zero points %v: want int8 per output channel, zero points 0", wq, axis, ws, wz)
	}
	if conv.Inputs[2] != "b" {
		t.Errorf("the Conv reads bias %s, want b (written by its DequantizeLinear)", conv.Inputs[2])
	}
	bq, bs, bz, baxis := dqParams(t, q, "b")
	if bq.DType != graph.Int32 || bz.DType != graph.Int32 || baxis != 0 {
		t.Errorf("bias %v zero point %v axis %d: want int32 along axis 0", bq, bz, baxis)
	}
	for i := range 3 {
		if want := xs.F32[0] * ws.F32[i]; bs.F32[i] != want {
			t.Errorf("bias scale %d = %g, want input × weight = %g", i, bs.F32[i], want)
		}
		if got, b := float64(bq.I64[i])*float64(bs.F32[i]), g.Values["b"].Const.F32[i]; math.Abs(got-float64(b)) > float64(bs.F32[i]) {
			t.Errorf("bias %d = %g comes back as %g", i, b, got)
		}
	}
	_, ys, yz, _ := dqParams(t, q, "y")
	if yz.I64[0] != 0 {
		t.Errorf("the Relu's range starts at 0: zero point %d", yz.I64[0])
	}
	if rep.Folded != 1 || rep.Activations != 2 || rep.Weights != 1 || rep.PerChannel != 1 || rep.Biases != 1 {
		t.Errorf("report %+v", rep)
	}
	if _, ok := q.Values["c"]; ok {
		t.Error("the folded Relu's input is still a value")
	}
	checkClose(t, g, q, ys.F32[0], 8)
	checkRoundTrip(t, q)
}

// checkClose runs g and q with the reference evaluator on a random input
// and checks q's output within steps output steps of g's.
func checkClose(t *testing.T, g, q *graph.Graph, step float32, steps float64) {
	t.Helper()
	samples, err := RandomSamples(g, 1, 99)
	if err != nil {
		t.Fatal(err)
	}
	ins, err := kernelInputs(samples[0])
	if err != nil {
		t.Fatal(err)
	}
	want, err := assemble.Reference(g, ins)
	if err != nil {
		t.Fatal(err)
	}
	got, err := assemble.Reference(q, ins)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want[0] {
		if d := math.Abs(float64(got[0][i] - want[0][i])); d > steps*float64(step) {
			t.Fatalf("output %d: %g, the float model's %g: %.2f steps of %g apart", i, got[0][i], want[0][i], d/float64(step), step)
		}
	}
}

// checkRoundTrip writes q, of the size Write says, and decodes it again.
func checkRoundTrip(t *testing.T, q *graph.Graph) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "q.onnx")
	n, err := Write(path, q)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(path); err != nil || st.Size() != n || n == 0 {
		t.Errorf("Write said %d bytes; the file: %v, %v", n, st, err)
	}
	back, err := onnx.DecodeFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.Opset != q.Opset || !slices.Equal(opsOrder(back), opsOrder(q)) {
		t.Errorf("decoded opset %d %v, wrote opset %d %v", back.Opset, opsOrder(back), q.Opset, opsOrder(q))
	}
	if err := frontend.InferShapes(back); err != nil {
		t.Errorf("the written model does not check: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("Write left %d files", len(entries))
	}
}

// TestRewriteRules checks the op rules on small graphs.
func TestRewriteRules(t *testing.T) {
	for _, c := range []struct {
		name  string
		build func(b *builder) *graph.Graph
		check func(t *testing.T, g, q *graph.Graph, rep *Report)
	}{
		{"a Relu whose input has two readers stays", func(b *builder) *graph.Graph {
			b.input("x", 1, 2, 4, 4)
			b.weight("w", 0.5, 2, 2, 1, 1)
			b.node("Conv", []string{"x", "w"}, []string{"c"}, nil)
			b.node("Relu", []string{"c"}, []string{"r"}, nil)
			b.node("Add", []string{"c", "r"}, []string{"y"}, nil)
			return b.done("y")
		}, func(t *testing.T, g, q *graph.Graph, rep *Report) {
			if rep.Folded != 0 || !slices.Contains(opsOrder(q), "Relu") {
				t.Errorf("the Relu was folded: %v", opsOrder(q))
			}
			relu := q.Nodes[slices.Index(opsOrder(q), "Relu")]
			if producer(q, relu.Inputs[0]).OpType != "DequantizeLinear" {
				t.Errorf("the Relu reads %s", relu.Inputs[0])
			}
		}},
		{"Gemm with transB: weight axis 0; beta folded into the bias", func(b *builder) *graph.Graph {
			b.input("x", 2, 4)
			b.weight("w", 1, 3, 4)
			b.weight("b", 1, 3)
			b.node("Gemm", []string{"x", "w", "b"}, []string{"y"}, map[string]graph.Attr{"transB": one(1), "beta": {Kind: graph.AttrFloat, F: 0.5}})
			return b.done("y")
		}, func(t *testing.T, g, q *graph.Graph, rep *Report) {
			gemm := q.Nodes[slices.Index(opsOrder(q), "Gemm")]
			if _, _, _, axis := dqParams(t, q, gemm.Inputs[1]); axis != 0 {
				t.Errorf("weight axis %d, want 0", axis)
			}
			if beta, _ := gemm.Float("beta", 1); beta != 1 {
				t.Errorf("beta %g, want 1 (folded into the bias)", beta)
			}
			bq, bs, _, _ := dqParams(t, q, "b")
			for i, v := range g.Values["b"].Const.F32 {
				if got := float64(bq.I64[i]) * float64(bs.F32[i]); math.Abs(got-0.5*float64(v)) > float64(bs.F32[i]) {
					t.Errorf("bias %d comes back as %g, want 0.5·%g", i, got, v)
				}
			}
		}},
		{"Gemm without transB: weight axis 1", func(b *builder) *graph.Graph {
			b.input("x", 2, 4)
			b.weight("w", 1, 4, 3)
			b.weight("b", 1, 3)
			b.node("Gemm", []string{"x", "w", "b"}, []string{"y"}, nil)
			return b.done("y")
		}, func(t *testing.T, g, q *graph.Graph, rep *Report) {
			gemm := q.Nodes[slices.Index(opsOrder(q), "Gemm")]
			if _, ws, _, axis := dqParams(t, q, gemm.Inputs[1]); axis != 1 || ws.Len() != 3 {
				t.Errorf("weight axis %d, %d scales; want axis 1, 3", axis, ws.Len())
			}
		}},
		{"MatMul with a [K, N] weight: axis 1", func(b *builder) *graph.Graph {
			b.input("x", 1, 2, 4)
			b.weight("w", 1, 4, 5)
			b.node("MatMul", []string{"x", "w"}, []string{"y"}, nil)
			return b.done("y")
		}, func(t *testing.T, g, q *graph.Graph, rep *Report) {
			mm := q.Nodes[slices.Index(opsOrder(q), "MatMul")]
			if _, ws, _, axis := dqParams(t, q, mm.Inputs[1]); axis != 1 || ws.Len() != 5 {
				t.Errorf("weight axis %d, %d scales; want axis 1, 5", axis, ws.Len())
			}
			if producer(q, mm.Inputs[0]).OpType != "DequantizeLinear" {
				t.Error("the activation is not quantized")
			}
		}},
		{"MaxPool and Reshape share their input's scale", func(b *builder) *graph.Graph {
			b.input("x", 1, 2, 4, 4)
			b.weight("w", 0.5, 2, 2, 1, 1)
			b.g.AddConst("shape", graph.Int64Tensor([]int{2}, []int64{1, 8}))
			b.node("Conv", []string{"x", "w"}, []string{"c"}, nil)
			b.node("Relu", []string{"c"}, []string{"r"}, nil)
			b.node("MaxPool", []string{"r"}, []string{"m"}, map[string]graph.Attr{"kernel_shape": ints(2, 2), "strides": ints(2, 2)})
			b.node("Reshape", []string{"m", "shape"}, []string{"y"}, nil)
			return b.done("y")
		}, func(t *testing.T, g, q *graph.Graph, rep *Report) {
			if rep.Shared != 2 || rep.Folded != 1 {
				t.Errorf("report %+v", rep)
			}
			pool := q.Nodes[slices.Index(opsOrder(q), "MaxPool")]
			in := producer(q, pool.Inputs[0])
			out := producer(q, "y")
			if in.Inputs[1] != out.Inputs[1] || in.Inputs[2] != out.Inputs[2] {
				t.Errorf("the output's scale %s and zero point %s, the input's %s and %s", out.Inputs[1], out.Inputs[2], in.Inputs[1], in.Inputs[2])
			}
			if q.Values["shape"] == nil || q.Values["shape"].DType != graph.Int64 {
				t.Error("the Reshape's shape was touched")
			}
		}},
		{"Add of a constant: a uint8 constant, its own range", func(b *builder) *graph.Graph {
			b.input("x", 2, 4)
			b.weight("c", 3, 4)
			b.node("Add", []string{"x", "c"}, []string{"y"}, nil)
			return b.done("y")
		}, func(t *testing.T, g, q *graph.Graph, rep *Report) {
			add := q.Nodes[slices.Index(opsOrder(q), "Add")]
			cq, cs, cz, axis := dqParams(t, q, add.Inputs[1])
			if cq.DType != graph.Uint8 || cz.DType != graph.Uint8 || axis != -1 || cs.Len() != 1 || rep.Constants != 1 {
				t.Errorf("constant %v scale %v zero point %v axis %d", cq, cs, cz, axis)
			}
		}},
		{"a bias two Convs share is copied", func(b *builder) *graph.Graph {
			b.input("x", 1, 2, 4, 4)
			b.weight("w1", 0.5, 2, 2, 1, 1)
			b.weight("w2", 0.1, 2, 2, 1, 1)
			b.weight("b", 0.5, 2)
			b.node("Conv", []string{"x", "w1", "b"}, []string{"c1"}, nil)
			b.node("Conv", []string{"x", "w2", "b"}, []string{"c2"}, nil)
			b.node("Add", []string{"c1", "c2"}, []string{"y"}, nil)
			return b.done("y")
		}, func(t *testing.T, g, q *graph.Graph, rep *Report) {
			var biases []string
			for _, n := range q.Nodes {
				if n.OpType == "Conv" {
					biases = append(biases, n.Inputs[2])
				}
			}
			if rep.Biases != 2 || biases[0] == biases[1] {
				t.Errorf("biases %v, report %+v", biases, rep)
			}
			_, s1, _, _ := dqParams(t, q, biases[0])
			_, s2, _, _ := dqParams(t, q, biases[1])
			if s1.F32[0] == s2.F32[0] {
				t.Error("both copies have the same scale")
			}
		}},
		{"an op left float reads dequantized values", func(b *builder) *graph.Graph {
			b.input("x", 1, 2, 4, 4)
			b.weight("w", 0.5, 2, 2, 1, 1)
			b.node("Conv", []string{"x", "w"}, []string{"c"}, nil)
			b.node("Tanh", []string{"c"}, []string{"y"}, nil)
			return b.done("y")
		}, func(t *testing.T, g, q *graph.Graph, rep *Report) {
			tanh := q.Nodes[slices.Index(opsOrder(q), "Tanh")]
			if tanh.Inputs[0] != "c_DequantizeLinear_Output" || producer(q, "y").OpType != "Tanh" {
				t.Errorf("Tanh reads %s and y is written by %s", tanh.Inputs[0], producer(q, "y").OpType)
			}
		}},
		{"a bias too large for int32 at scale input × weight raises the weight's scale", func(b *builder) *graph.Graph {
			b.input("x", 1, 2, 4, 4)
			b.weight("w", 1e-9, 2, 2, 1, 1)
			b.g.AddConst("b", graph.Float32Tensor([]int{2}, []float32{5, -4.5}))
			b.node("Conv", []string{"x", "w", "b"}, []string{"y"}, nil)
			return b.done("y")
		}, func(t *testing.T, g, q *graph.Graph, rep *Report) {
			if rep.Raised != 2 || rep.Clipped != 0 {
				t.Errorf("raised %d channels, clipped %d bias values; want 2 and 0", rep.Raised, rep.Clipped)
			}
			bq, bs, _, _ := dqParams(t, q, "b")
			for i, v := range []float64{5, -4.5} {
				if got := float64(bq.I64[i]) * float64(bs.F32[i]); math.Abs(got-v) > float64(bs.F32[i]) {
					t.Errorf("bias %d comes back as %g, want %g", i, got, v)
				}
			}
			conv := q.Nodes[slices.Index(opsOrder(q), "Conv")]
			_, xs, _, _ := dqParams(t, q, conv.Inputs[0])
			_, ws, _, _ := dqParams(t, q, conv.Inputs[1])
			for i := range 2 {
				if bs.F32[i] != xs.F32[0]*ws.F32[i] {
					t.Errorf("bias scale %g is not input × raised weight scale %g", bs.F32[i], xs.F32[0]*ws.F32[i])
				}
			}
		}},
		{"Clip(0, 6) folds like a Relu", func(b *builder) *graph.Graph {
			b.input("x", 1, 2, 4, 4)
			b.weight("w", 4, 2, 2, 1, 1)
			b.g.AddConst("lo", graph.Float32Tensor([]int{}, []float32{0}))
			b.g.AddConst("hi", graph.Float32Tensor([]int{}, []float32{6}))
			b.node("Conv", []string{"x", "w"}, []string{"c"}, nil)
			b.node("Clip", []string{"c", "lo", "hi"}, []string{"y"}, nil)
			return b.done("y")
		}, func(t *testing.T, g, q *graph.Graph, rep *Report) {
			if rep.Folded != 1 || slices.Contains(opsOrder(q), "Clip") {
				t.Errorf("the Clip stays: %v", opsOrder(q))
			}
			if q.Values["lo"] != nil || q.Values["hi"] != nil {
				t.Error("the Clip's bounds are still constants")
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := c.build(newBuilder(t, 17))
			q, rep := quantizeTest(t, g)
			c.check(t, g, q, rep)
			checkRoundTrip(t, q)
		})
	}
}

// TestQuantizeErrors checks the errors of models and samples that cannot
// be quantized.
func TestQuantizeErrors(t *testing.T) {
	tanh := func(opset int) *graph.Graph {
		b := newBuilder(t, opset)
		b.input("x", 2, 4)
		b.node("Tanh", []string{"x"}, []string{"y"}, nil)
		return b.done("y")
	}
	conv := func(opset int) *graph.Graph {
		b := newBuilder(t, opset)
		b.input("x", 1, 2, 4, 4)
		b.weight("w", 0.5, 2, 2, 1, 1)
		b.node("Conv", []string{"x", "w"}, []string{"y"}, nil)
		return b.done("y")
	}
	good, _ := RandomSamples(conv(17), 1, 1)
	wrong := [][]*graph.Tensor{{graph.Float32Tensor([]int{1, 2, 4, 5}, make([]float32, 40))}}
	ints := [][]*graph.Tensor{{{DType: graph.Int64, Shape: []int{1, 2, 4, 4}, I64: make([]int64, 32)}}}
	for _, c := range []struct {
		name    string
		g       *graph.Graph
		opts    Options
		wantErr string
	}{
		{"no op to quantize", tanh(17), Options{}, "no op to quantize"},
		{"opset 12", conv(12), Options{Samples: good}, "opset 12"},
		{"no samples", conv(17), Options{}, "no calibration samples"},
		{"a sample of the wrong shape", conv(17), Options{Samples: wrong}, "shape [1 2 4 5], input x takes [1 2 4 4]"},
		{"a sample of the wrong dtype", conv(17), Options{Samples: ints}, "int64 values, input x is float32"},
		{"a percentile out of range", conv(17), Options{Samples: good, Method: Percentile, Percentile: 101}, "percentile 101"},
		{"an unknown method", conv(17), Options{Samples: good, Method: "entropy"}, `method "entropy"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.opts.Samples == nil && c.wantErr == "no op to quantize" {
				c.opts.Samples, _ = RandomSamples(c.g, 1, 1)
			}
			c.opts.Run = ReferenceRunner
			_, _, err := Quantize(context.Background(), c.g, c.opts)
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("error %v, want one saying %q", err, c.wantErr)
			}
		})
	}
}

// TestDegenerateRange checks that a tensor that is 0 in every sample gets
// scale 1 and zero point 0, never scale 0, and is reported.
func TestDegenerateRange(t *testing.T) {
	b := newBuilder(t, 17)
	b.input("x", 1, 2, 4, 4)
	b.weight("w", 0.5, 2, 2, 1, 1)
	b.node("Conv", []string{"x", "w"}, []string{"y"}, nil)
	g := b.done("y")
	zeros := [][]*graph.Tensor{{graph.Float32Tensor([]int{1, 2, 4, 4}, make([]float32, 32))}}
	for _, m := range []Method{MinMax, Percentile} {
		q, rep, err := Quantize(context.Background(), g, Options{Samples: zeros, Method: m, Run: ReferenceRunner})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(rep.Degenerate, []string{"x", "y"}) {
			t.Errorf("%s: degenerate %v, want [x y]", m, rep.Degenerate)
		}
		for _, n := range q.Nodes {
			if n.OpType == "QuantizeLinear" {
				if s, z := constOf(t, q, n.Inputs[1]).F32[0], constOf(t, q, n.Inputs[2]).I64[0]; s != 1 || z != 0 {
					t.Errorf("%s: %s has scale %g and zero point %d, want 1 and 0", m, n.Inputs[0], s, z)
				}
			}
		}
	}
}

// TestPercentileCalibration checks that the percentile method cuts an
// outlier minmax keeps.
func TestPercentileCalibration(t *testing.T) {
	b := newBuilder(t, 17)
	b.input("x", 1, 1, 100, 100)
	b.weight("w", 1, 1, 1, 1, 1)
	b.node("Conv", []string{"x", "w"}, []string{"y"}, nil)
	g := b.done("y")
	v := make([]float32, 10000)
	for i := range v {
		v[i] = float32(i%100) / 100
	}
	v[0] = 1000
	samples := [][]*graph.Tensor{{graph.Float32Tensor([]int{1, 1, 100, 100}, v)}}
	scale := func(m Method) float32 {
		q, _, err := Quantize(context.Background(), g, Options{Samples: samples, Method: m, Percentile: 99.9, Run: ReferenceRunner})
		if err != nil {
			t.Fatal(err)
		}
		return constOf(t, q, "x_scale").F32[0]
	}
	if mm, pc := scale(MinMax), scale(Percentile); mm != float32(1000.0/255) || pc > 1.0/255 {
		t.Errorf("input scale %g by minmax (want %g), %g by percentile (want at most %g)", mm, float32(1000.0/255), pc, 1.0/255)
	}
}

// TestReduceRange: with Options.ReduceRange the weights are quantized to
// 7 bits, [-64, 64], each channel's largest |w| at ±64 (onnxruntime's
// reduce_range), the biases on the matching scales; the model still
// computes the float model's output within the (coarser) quantization
// error.
func TestReduceRange(t *testing.T) {
	b := newBuilder(t, 17)
	b.input("x", 1, 4, 5, 5)
	b.weight("w", 0.5, 3, 4, 3, 3)
	b.weight("b", 0.2, 3)
	b.node("Conv", []string{"x", "w", "b"}, []string{"y"}, map[string]graph.Attr{"pads": ints(1, 1, 1, 1)})
	g := b.done("y")
	samples, err := RandomSamples(g, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	q, _, err := Quantize(context.Background(), g, Options{Samples: samples, Run: ReferenceRunner, ReduceRange: true})
	if err != nil {
		t.Fatal(err)
	}
	conv := q.Nodes[slices.IndexFunc(q.Nodes, func(n *graph.Node) bool { return n.OpType == "Conv" })]
	wq, ws, _, _ := dqParams(t, q, conv.Inputs[1])
	per := len(wq.I64) / 3
	for m := range 3 {
		ch := wq.I64[m*per : (m+1)*per]
		lo, hi := slices.Min(ch), slices.Max(ch)
		if lo < -64 || hi > 64 || max(-lo, hi) != 64 {
			t.Errorf("channel %d spans [%d, %d]: want its largest |w| at 64 and nothing beyond", m, lo, hi)
		}
		wf := g.Values["w"].Const.F32[m*per : (m+1)*per]
		var amax float32
		for _, v := range wf {
			amax = max(amax, v, -v)
		}
		if want := amax / 64; math.Abs(float64(ws.F32[m]-want)) > 1e-6*float64(want) {
			t.Errorf("channel %d scale %g, want max|w|/64 = %g", m, ws.F32[m], want)
		}
	}
	_, ys, _, _ := dqParams(t, q, "y")
	checkClose(t, g, q, ys.F32[0], 16)
}
