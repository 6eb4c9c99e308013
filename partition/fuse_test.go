package partition

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tessera-ml/tessera/frontend"
	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/te"
)

// tg builds small graphs for the fusion tests: values are named by the
// test, nodes after their first output.
type tg struct {
	g   *graph.Graph
	rng *rand.Rand
}

func newTG(opset int) *tg {
	return &tg{g: graph.New("test", opset), rng: rand.New(rand.NewPCG(7, 7))}
}

func (b *tg) input(name string, shape ...int) string {
	b.g.AddInput(name, graph.Float32, shape)
	return name
}

// weight adds a float32 constant of random data.
func (b *tg) weight(name string, shape ...int) string {
	data := make([]float32, graph.NumElems(shape))
	for i := range data {
		data[i] = float32(b.rng.Float64()*2 - 1)
	}
	b.g.AddConst(name, graph.Float32Tensor(shape, data))
	return name
}

func (b *tg) ints(name string, v ...int64) string {
	b.g.AddConst(name, graph.Int64Tensor([]int{len(v)}, v))
	return name
}

func (b *tg) scalar(name string, v float32) string {
	b.g.AddConst(name, graph.Float32Tensor([]int{}, []float32{v}))
	return name
}

// op adds a node writing out.
func (b *tg) op(out, op string, in []string, kv ...any) string {
	at := map[string]graph.Attr{}
	for i := 0; i+1 < len(kv); i += 2 {
		switch v := kv[i+1].(type) {
		case int:
			at[kv[i].(string)] = graph.Attr{Kind: graph.AttrInt, I: int64(v)}
		case float32:
			at[kv[i].(string)] = graph.Attr{Kind: graph.AttrFloat, F: v}
		case []int64:
			at[kv[i].(string)] = graph.Attr{Kind: graph.AttrInts, Ints: v}
		case string:
			at[kv[i].(string)] = graph.Attr{Kind: graph.AttrString, S: v}
		default:
			panic(fmt.Sprintf("attribute %v: %T", kv[i], v))
		}
	}
	b.g.AddNode(&graph.Node{Name: out, OpType: op, Inputs: in, Outputs: []string{out}, Attrs: at})
	return out
}

// done marks the graph outputs and runs the passes (minus disabled).
//
// nil disables convert-layout only: these graphs test fusion, and the
// layout pass's transposes would add groups of their own; a test of NHWC
// groups passes a map that names convert-layout false.
func (b *tg) done(t *testing.T, disabled map[string]bool, outs ...string) *graph.Graph {
	t.Helper()
	if disabled == nil {
		disabled = map[string]bool{"convert-layout": true}
	}
	b.g.Outputs = append(b.g.Outputs, outs...)
	if err := frontend.RunPasses(b.g, disabled); err != nil {
		t.Fatalf("passes: %v", err)
	}
	return b.g
}

func conv3x3(b *tg, out, x string, cin, cout int, bias bool) string {
	in := []string{x, b.weight(out+".w", cout, cin, 3, 3)}
	if bias {
		in = append(in, b.weight(out+".b", cout))
	}
	return b.op(out, "Conv", in, "pads", []int64{1, 1, 1, 1})
}

func batchNorm(b *tg, out, x string, c int) string {
	return b.op(out, "BatchNormalization", []string{x, b.weight(out+".scale", c), b.weight(out+".bias", c),
		b.weight(out+".mean", c), b.ones(out+".var", c)})
}

func (b *tg) ones(name string, n int) string {
	data := make([]float32, n)
	for i := range data {
		data[i] = 1 + float32(b.rng.Float64())
	}
	b.g.AddConst(name, graph.Float32Tensor([]int{n}, data))
	return name
}

// fusionCase is a graph and the groups fusion must make of it, each as
// its op list (Group.Ops).
type fusionCase struct {
	name  string
	build func(t *testing.T) *graph.Graph
	opts  Options
	want  []string
}

var fusionCases = []fusionCase{
	{"conv+bias+relu", func(t *testing.T) *graph.Graph {
		b := newTG(17)
		x := b.input("x", 1, 3, 8, 8)
		y := conv3x3(b, "conv", x, 3, 4, false)
		y = b.op("bias", "Add", []string{y, b.weight("b", 1, 4, 1, 1)})
		return b.done(t, nil, b.op("relu", "Relu", []string{y}))
	}, Options{}, []string{"Conv+Add+Relu"}},
	{"gemm+bias+relu", func(t *testing.T) *graph.Graph {
		b := newTG(17)
		x := b.input("x", 2, 16)
		y := b.op("gemm", "Gemm", []string{x, b.weight("w", 8, 16)}, "transB", 1)
		y = b.op("bias", "Add", []string{b.weight("b", 8), y})
		return b.done(t, nil, b.op("relu", "Relu", []string{y}))
	}, Options{}, []string{"Gemm+Add+Relu"}},
	{"matmul+bias+gelu", func(t *testing.T) *graph.Graph {
		b := newTG(20)
		x := b.input("x", 1, 4, 16)
		y := b.op("mm", "MatMul", []string{x, b.weight("w", 16, 8)})
		y = b.op("bias", "Add", []string{y, b.weight("b", 8)})
		return b.done(t, nil, b.op("gelu", "Gelu", []string{y}))
	}, Options{}, []string{"MatMul+Add+Gelu"}},
	// BatchNormalization folds into the convolution's weights and bias;
	// the residual Add and the ReLU join the convolution by rule.
	{"conv+bn+add+relu", func(t *testing.T) *graph.Graph {
		b := newTG(17)
		x := b.input("x", 1, 4, 8, 8)
		y := batchNorm(b, "bn", conv3x3(b, "conv", x, 4, 4, false), 4)
		y = b.op("add", "Add", []string{y, x})
		return b.done(t, nil, b.op("relu", "Relu", []string{y}))
	}, Options{}, []string{"Conv+Add+Relu"}},
	// Unfolded, BatchNormalization is a broadcast op and fuses all the
	// same.
	{"conv+bn+add+relu unfolded", func(t *testing.T) *graph.Graph {
		b := newTG(17)
		x := b.input("x", 1, 4, 8, 8)
		y := batchNorm(b, "bn", conv3x3(b, "conv", x, 4, 4, false), 4)
		y = b.op("add", "Add", []string{y, x})
		return b.done(t, map[string]bool{"fold-batchnorm": true, "decompose-batchnorm": true, "convert-layout": true}, b.op("relu", "Relu", []string{y}))
	}, Options{}, []string{"Conv+BatchNormalization+Add+Relu"}},
	// Not folded, decompose-batchnorm writes it as Mul and Add.
	{"conv+bn+add+relu decomposed", func(t *testing.T) *graph.Graph {
		b := newTG(17)
		x := b.input("x", 1, 4, 8, 8)
		y := batchNorm(b, "bn", conv3x3(b, "conv", x, 4, 4, false), 4)
		y = b.op("add", "Add", []string{y, x})
		return b.done(t, map[string]bool{"fold-batchnorm": true, "convert-layout": true}, b.op("relu", "Relu", []string{y}))
	}, Options{}, []string{"Conv+Mul+Add×2+Relu"}},
	{"elementwise chain", func(t *testing.T) *graph.Graph {
		b := newTG(17)
		y := b.op("e", "Exp", []string{b.input("x", 2, 3)})
		y = b.op("n", "Neg", []string{y})
		y = b.op("s", "Sigmoid", []string{y})
		y = b.op("m", "Mul", []string{y, b.scalar("two", 2)})
		return b.done(t, nil, b.op("t", "Tanh", []string{y}))
	}, Options{}, []string{"Exp+Neg+Sigmoid+Mul+Tanh"}},
	{"diamond", func(t *testing.T) *graph.Graph {
		b := newTG(17)
		a := b.op("a", "Relu", []string{b.input("x", 2, 3)})
		e := b.op("e", "Exp", []string{a})
		n := b.op("n", "Neg", []string{a})
		return b.done(t, nil, b.op("s", "Add", []string{e, n}))
	}, Options{}, []string{"Relu+Exp+Neg+Add"}},
	// Two anchors meet in one Add: the first takes it, the second stays
	// alone (a group holds one anchor).
	{"two anchors", func(t *testing.T) *graph.Graph {
		b := newTG(17)
		x := b.input("x", 1, 2, 6, 6)
		c1 := conv3x3(b, "c1", x, 2, 3, true)
		c2 := b.op("c2", "Conv", []string{x, b.weight("c2.w", 3, 2, 1, 1)})
		y := b.op("add", "Add", []string{c1, c2})
		return b.done(t, nil, b.op("relu", "Relu", []string{y}))
	}, Options{}, []string{"Conv", "Conv+Add+Relu"}},
	// A graph output is materialized: it ends its group.
	{"graph output inside", func(t *testing.T) *graph.Graph {
		b := newTG(17)
		x := b.input("x", 1, 2, 6, 6)
		r := b.op("relu", "Relu", []string{conv3x3(b, "c", x, 2, 2, true)})
		return b.done(t, nil, r, b.op("exp", "Exp", []string{r}))
	}, Options{}, []string{"Conv+Relu", "Exp"}},
	// An anchor's epilogue must be elementwise: a reshape after a
	// convolution starts a new group, which then takes the ReLU.
	{"injective after anchor", func(t *testing.T) *graph.Graph {
		b := newTG(17)
		x := b.input("x", 1, 2, 6, 6)
		y := b.op("flat", "Reshape", []string{conv3x3(b, "c", x, 2, 2, true), b.ints("shape", 1, 72)})
		return b.done(t, nil, b.op("relu", "Relu", []string{y}))
	}, Options{}, []string{"Conv", "Reshape+Relu"}},
	// Layout changes become the anchor's prologue (phase 2).
	{"injective prologue", func(t *testing.T) *graph.Graph {
		b := newTG(17)
		y := b.op("r", "Reshape", []string{b.input("x", 1, 4, 12), b.ints("shape", 1, 4, 3, 4)})
		y = b.op("t", "Transpose", []string{y}, "perm", []int64{0, 2, 1, 3})
		y = b.op("mm", "MatMul", []string{y, b.weight("w", 4, 5)})
		return b.done(t, nil, b.op("relu", "Relu", []string{y}))
	}, Options{}, []string{"Reshape+Transpose+MatMul+Relu"}},
	{"flatten before gemm", func(t *testing.T) *graph.Graph {
		b := newTG(17)
		y := b.op("gap", "GlobalAveragePool", []string{b.input("x", 1, 8, 4, 4)})
		y = b.op("flat", "Flatten", []string{y}, "axis", 1)
		return b.done(t, nil, b.op("fc", "Gemm", []string{y, b.weight("w", 3, 8), b.weight("b", 3)}, "transB", 1))
	}, Options{}, []string{"GlobalAveragePool", "Flatten+Gemm"}},
	// Reductions take elementwise producers (phase 0) and injective ones
	// (phase 2), but not their consumers.
	{"reduction", func(t *testing.T) *graph.Graph {
		b := newTG(17)
		y := b.op("e", "Exp", []string{b.input("x", 2, 3, 4)})
		y = b.op("t", "Transpose", []string{y}, "perm", []int64{0, 2, 1})
		y = b.op("sum", "ReduceSum", []string{y, b.ints("axes", 2)}, "keepdims", 0)
		return b.done(t, nil, b.op("relu", "Relu", []string{y}))
	}, Options{}, []string{"Exp+Transpose+ReduceSum", "Relu"}},
	{"attention scores", func(t *testing.T) *graph.Graph {
		b := newTG(17)
		q, k := b.input("q", 1, 2, 4, 3), b.input("k", 1, 2, 3, 4)
		s := b.op("s", "MatMul", []string{q, k})
		s = b.op("scaled", "Div", []string{s, b.scalar("scale", 1.7)})
		s = b.op("masked", "Add", []string{s, b.input("mask", 1, 1, 1, 4)})
		return b.done(t, nil, b.op("p", "Softmax", []string{s}, "axis", -1))
	}, Options{}, []string{"MatMul+Div+Add", "Softmax"}},
	// Attention: the scores (their scale moved after the matmul by the
	// matmul-scale pass), their softmax and its product with the values
	// are one group, a normalization between two anchors; the heads'
	// reshapes join it as prologues.
	{"attention", func(t *testing.T) *graph.Graph {
		b := newTG(17)
		q := b.op("q", "Div", []string{b.input("xq", 1, 2, 4, 3), b.scalar("sqrt_d", 1.7)})
		s := b.op("s", "MatMul", []string{q, b.input("k", 1, 2, 3, 4)})
		p := b.op("p", "Softmax", []string{s}, "axis", -1)
		return b.done(t, nil, b.op("o", "MatMul", []string{p, b.input("v", 1, 2, 4, 5)}))
	}, Options{}, []string{"MatMul+Div+Softmax+MatMul"}},
	{"attention with heads and a mask", func(t *testing.T) *graph.Graph {
		b := newTG(17)
		heads := func(name string, perm ...int64) string {
			y := b.op(name+".r", "Reshape", []string{b.input(name, 1, 4, 6), b.ints(name+".shape", 1, 4, 2, 3)})
			return b.op(name+".t", "Transpose", []string{y}, "perm", perm)
		}
		s := b.op("s", "MatMul", []string{heads("xq", 0, 2, 1, 3), heads("xk", 0, 2, 3, 1)})
		s = b.op("masked", "Add", []string{s, b.weight("mask", 1, 1, 4, 4)})
		p := b.op("p", "Softmax", []string{s}, "axis", -1)
		return b.done(t, nil, b.op("o", "MatMul", []string{p, heads("xv", 0, 2, 1, 3)}))
	}, Options{}, []string{"Reshape+Transpose+Reshape+Transpose+MatMul+Add+Softmax+Reshape+Transpose+MatMul"}},
	// Not a sandwich: the probabilities are a graph output; the classifier
	// after a convolution's global pool (a reduction that shrinks).
	{"attention probabilities read", func(t *testing.T) *graph.Graph {
		b := newTG(17)
		s := b.op("s", "MatMul", []string{b.input("q", 2, 4, 3), b.input("k", 2, 3, 4)})
		p := b.op("p", "Softmax", []string{s}, "axis", -1)
		return b.done(t, nil, p, b.op("o", "MatMul", []string{p, b.input("v", 2, 4, 5)}))
	}, Options{}, []string{"MatMul", "Softmax", "MatMul"}},
	// A layer's matmul, a LayerNormalization and the classifier: the
	// anchors read weights, so they stay apart.
	{"matmul, layernorm, classifier", func(t *testing.T) *graph.Graph {
		b := newTG(17)
		y := b.op("mm", "MatMul", []string{b.input("x", 1, 4, 8), b.weight("w", 8, 8)})
		y = b.op("ln", "LayerNormalization", []string{y, b.weight("gamma", 8), b.weight("beta", 8)}, "axis", -1)
		y = b.op("flat", "Reshape", []string{y, b.ints("shape", 4, 8)})
		return b.done(t, nil, b.op("fc", "Gemm", []string{y, b.weight("w2", 3, 8), b.weight("b2", 3)}, "transB", 1))
	}, Options{}, []string{"MatMul", "LayerNormalization", "Reshape+Gemm"}},
	{"conv, pool, classifier", func(t *testing.T) *graph.Graph {
		b := newTG(17)
		y := b.op("gap", "GlobalAveragePool", []string{conv3x3(b, "c", b.input("x", 1, 3, 4, 4), 3, 8, true)})
		y = b.op("flat", "Flatten", []string{y}, "axis", 1)
		return b.done(t, nil, b.op("fc", "Gemm", []string{y, b.weight("w", 3, 8), b.weight("b", 3)}, "transB", 1))
	}, Options{}, []string{"Conv", "GlobalAveragePool", "Flatten+Gemm"}},
	{"pooling epilogue", func(t *testing.T) *graph.Graph {
		b := newTG(17)
		y := b.op("mp", "MaxPool", []string{b.input("x", 1, 2, 6, 6)}, "kernel_shape", []int64{2, 2}, "strides", []int64{2, 2})
		return b.done(t, nil, b.op("relu", "Relu", []string{y}))
	}, Options{}, []string{"MaxPool+Relu"}},
	// A Split and the branches that meet again are one group; a Split
	// whose outputs both leave makes a group of two outputs.
	{"split diamond", func(t *testing.T) *graph.Graph {
		b := newTG(17)
		x := b.input("x", 2, 6)
		b.g.AddNode(&graph.Node{Name: "split", OpType: "Split", Inputs: []string{x}, Outputs: []string{"s0", "s1"},
			Attrs: map[string]graph.Attr{"axis": {Kind: graph.AttrInt, I: 1}, "num_outputs": {Kind: graph.AttrInt, I: 2}}})
		r0 := b.op("r0", "Relu", []string{"s0"})
		r1 := b.op("r1", "Exp", []string{"s1"})
		return b.done(t, nil, b.op("add", "Add", []string{r0, r1}))
	}, Options{}, []string{"Split+Relu+Exp+Add"}},
	{"split outputs", func(t *testing.T) *graph.Graph {
		b := newTG(17)
		x := b.op("e", "Exp", []string{b.input("x", 2, 6)})
		b.g.AddNode(&graph.Node{Name: "split", OpType: "Split", Inputs: []string{x, b.ints("sizes", 2, 4)}, Outputs: []string{"s0", "s1"},
			Attrs: map[string]graph.Attr{"axis": {Kind: graph.AttrInt, I: 1}}})
		return b.done(t, nil, "s1", "s0")
	}, Options{}, []string{"Exp+Split"}},
	// A quantized residual block with a downsampling branch: the first
	// convolution's group takes the Add; the second's dequantization moves
	// into that group, so the second writes its 8-bit integers instead of
	// their float32 dequantization.
	{"dequantization in its reader's group", func(t *testing.T) *graph.Graph {
		b := newTG(17)
		x := b.input("x", 1, 2, 6, 6)
		s := b.scalar("s", 0.05)
		b.g.AddConst("z", &graph.Tensor{DType: graph.Uint8, Shape: []int{}, I64: []int64{128}})
		dq := func(name, c string) string {
			return b.op(name+".dq", "DequantizeLinear", []string{b.op(name+".q", "QuantizeLinear", []string{c, s, "z"}), s, "z"})
		}
		main := dq("main", conv3x3(b, "c1", x, 2, 2, true))
		side := dq("side", conv3x3(b, "c2", x, 2, 2, true))
		return b.done(t, nil, b.op("sum", "Add", []string{main, side}))
	}, Options{}, []string{"Conv+QuantizeLinear", "Conv+QuantizeLinear+DequantizeLinear×2+Add"}},
	{"max fuse depth", func(t *testing.T) *graph.Graph {
		b := newTG(17)
		y := b.input("x", 3)
		for i := range 10 {
			y = b.op(fmt.Sprintf("r%d", i), "Sigmoid", []string{y})
		}
		return b.done(t, nil, y)
	}, Options{MaxFuseDepth: 4}, []string{"Sigmoid×4", "Sigmoid×4", "Sigmoid×2"}},
	{"no fusion", func(t *testing.T) *graph.Graph {
		b := newTG(17)
		x := b.input("x", 1, 2, 6, 6)
		return b.done(t, nil, b.op("relu", "Relu", []string{conv3x3(b, "c", x, 2, 2, true)}))
	}, Options{MaxFuseDepth: 1}, []string{"Conv", "Relu"}},
}

func TestFuse(t *testing.T) {
	for _, c := range fusionCases {
		t.Run(c.name, func(t *testing.T) {
			g := c.build(t)
			groups, err := Fuse(g, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, grp := range groups {
				got = append(got, grp.Ops())
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("groups %q, want %q", got, c.want)
			}
			checkGroups(t, g, groups)
		})
	}
}

// checkGroups checks the invariants of a partition: every node in exactly
// one group, groups in an executable order, and only roots read outside.
func checkGroups(t *testing.T, g *graph.Graph, groups []*Group) {
	t.Helper()
	seen := map[*graph.Node]int{}
	for i, grp := range groups {
		if grp.ID != i {
			t.Errorf("group %d has ID %d", i, grp.ID)
		}
		for _, n := range grp.Nodes {
			if _, dup := seen[n]; dup {
				t.Errorf("node %s in two groups", n.Name)
			}
			seen[n] = i
		}
	}
	if len(seen) != len(g.Nodes) {
		t.Errorf("%d of %d nodes in groups", len(seen), len(g.Nodes))
	}
	producer := g.Producers()
	for i, grp := range groups {
		for _, n := range grp.Nodes {
			for _, in := range n.Inputs {
				p := producer[in]
				if p == nil || seen[p] == i {
					continue
				}
				if seen[p] > i {
					t.Errorf("group %d reads %s of the later group %d", i, in, seen[p])
				}
				if !slices.Contains(groups[seen[p]].Outputs, in) {
					t.Errorf("group %d reads %s, which is not an output of group %d", i, in, seen[p])
				}
				if p != groups[seen[p]].Root() {
					t.Errorf("group %d reads %s of a non-root node of group %d", i, in, seen[p])
				}
			}
		}
	}
	for _, o := range g.Outputs {
		if p := producer[o]; p != nil && !slices.Contains(groups[seen[p]].Outputs, o) {
			t.Errorf("graph output %s is not an output of group %d", o, seen[p])
		}
	}
}

func TestPatternOf(t *testing.T) {
	for _, c := range []struct {
		op, domain string
		want       Pattern
	}{
		{"Relu", "", ElemWise},
		{"Clip", "", ElemWise},
		{"Add", "", Broadcast},
		{"BatchNormalization", "", Broadcast},
		{"Reshape", "", Injective},
		{"Transpose", "ai.onnx", Injective},
		{"Softmax", "", CommReduce},
		{"ReduceMean", "", CommReduce},
		{"Conv", "", OutEWiseFusable},
		{"MatMul", "", OutEWiseFusable},
		{"Shape", "", Opaque},
		{"NoSuchOp", "", Opaque},
		{"Relu", "com.example", Opaque},
	} {
		if got := PatternOf(&graph.Node{OpType: c.op, Domain: c.domain}); got != c.want {
			t.Errorf("PatternOf(%s %q) = %v, want %v", c.op, c.domain, got, c.want)
		}
	}
	if !(ElemWise < Broadcast && Broadcast < Injective && Injective < CommReduce && CommReduce < OutEWiseFusable && OutEWiseFusable < Opaque) {
		t.Error("patterns are not ordered")
	}
	if Combine(Broadcast, Injective) != Injective || Combine(OutEWiseFusable, ElemWise) != OutEWiseFusable {
		t.Error("Combine is not the larger pattern")
	}
}

func TestEdgePattern(t *testing.T) {
	b := newTG(17)
	x := b.input("x", 2, 3)
	y := b.op("y", "Add", []string{x, b.weight("bias", 3)})
	g := b.done(t, map[string]bool{"fold-constants": true}, y)
	n := g.Nodes[0]
	if p := EdgePattern(g, n, "x"); p != ElemWise {
		t.Errorf("Add's read of its full-shape operand is %v, want elemwise", p)
	}
	if p := EdgePattern(g, n, "bias"); p != Broadcast {
		t.Errorf("Add's read of the bias is %v, want broadcast", p)
	}
}

// An opaque node fuses with nothing; Fuse does not need shapes.
func TestFuseOpaque(t *testing.T) {
	g := graph.New("opaque", 17)
	g.AddInput("x", graph.Float32, []int{3})
	for i, op := range []string{"Relu", "Custom", "Relu", "Exp"} {
		in := "x"
		if i > 0 {
			in = fmt.Sprintf("v%d", i-1)
		}
		g.AddNode(&graph.Node{Name: fmt.Sprint(i), OpType: op, Inputs: []string{in}, Outputs: []string{fmt.Sprintf("v%d", i)}})
	}
	g.Outputs = []string{"v3"}
	groups, err := Fuse(g, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, grp := range groups {
		got = append(got, grp.Ops())
	}
	if want := []string{"Relu", "Custom", "Relu+Exp"}; !slices.Equal(got, want) {
		t.Errorf("groups %q, want %q", got, want)
	}
}

// TestGroupsCompute checks that running the groups' DAGs one after the
// other, wired by Group.Inputs and Group.Outputs, computes what the whole
// graph computes, and that the task's DAG (another group's, for a weight
// above one) gives the same results on this group's inputs.
func TestGroupsCompute(t *testing.T) {
	for _, c := range fusionCases {
		t.Run(c.name, func(t *testing.T) {
			g := c.build(t)
			if _, err := Extract(g, c.opts); err != nil {
				t.Fatal(err)
			}
			checkComputes(t, g, c.opts)
		})
	}
}

// checkComputes compares the group-by-group evaluation of g with the
// evaluation of the whole graph, on random inputs.
func checkComputes(t *testing.T, g *graph.Graph, opts Options) {
	t.Helper()
	p, err := Extract(g, opts)
	if err != nil {
		t.Fatal(err)
	}
	inputs := randomInputs(g, rand.New(rand.NewPCG(1, 2)))
	want := evalLowered(t, g, inputs)

	vals := map[string][]float32{}
	for k, v := range inputs {
		vals[k] = v
	}
	value := func(name string) []float32 {
		if v, ok := vals[name]; ok {
			return v
		}
		c := g.Values[name].Const
		if c == nil {
			t.Fatalf("value %s is read before it is computed", name)
		}
		f := make([]float32, c.Len())
		for i, x := range c.Float64s() {
			f[i] = float32(x)
		}
		return f
	}
	for _, grp := range p.Groups {
		in := make([][]float32, len(grp.Inputs))
		for i, name := range grp.Inputs {
			in[i] = value(name)
		}
		out, err := grp.DAG.Eval(in)
		if err != nil {
			t.Fatalf("group %d: %v", grp.ID, err)
		}
		// The task's DAG is interchangeable with the group's.
		tout, err := grp.Task.DAG.Eval(in)
		if err != nil {
			t.Fatalf("group %d, task DAG: %v", grp.ID, err)
		}
		for i, o := range grp.Outputs {
			if d := maxDiff(out[i], tout[i]); d != 0 {
				t.Errorf("group %d: output %s differs by %g between its DAG and its task's", grp.ID, o, d)
			}
			vals[o] = out[i]
		}
		// An alternative algorithm computes the same outputs.
		for _, alt := range grp.Alternatives {
			ain := make([][]float32, len(alt.Inputs))
			for i, name := range alt.Inputs {
				ain[i] = value(name)
			}
			aout, err := alt.DAG.Eval(ain)
			if err != nil {
				t.Fatalf("group %d, %s: %v", grp.ID, alt.Algorithm, err)
			}
			for i, o := range grp.Outputs {
				if d := maxDiff(aout[i], out[i]); d > 1e-4 {
					t.Errorf("group %d: output %s of %s differs from the direct one by %g", grp.ID, o, alt.Algorithm, d)
				}
			}
		}
	}
	for i, o := range g.Outputs {
		if d := maxDiff(vals[o], want[i]); d > 1e-5 {
			t.Errorf("output %s: group-by-group result differs from the whole graph's by %g", o, d)
		}
	}
}

// evalWhole lowers g and evaluates it on seeded random inputs.
func evalWhole(t *testing.T, g *graph.Graph) [][]float32 {
	t.Helper()
	return evalLowered(t, g, randomInputs(g, rand.New(rand.NewPCG(3, 4))))
}

// randomInputs draws every graph input of g uniformly from [-1, 1).
func randomInputs(g *graph.Graph, rng *rand.Rand) map[string][]float32 {
	inputs := map[string][]float32{}
	for _, name := range g.Inputs {
		data := make([]float32, graph.NumElems(g.Values[name].Shape))
		for i := range data {
			data[i] = float32(rng.Float64()*2 - 1)
		}
		inputs[name] = data
	}
	return inputs
}

// evalLowered lowers the whole of g and evaluates it on inputs.
func evalLowered(t *testing.T, g *graph.Graph, inputs map[string][]float32) [][]float32 {
	t.Helper()
	l, err := Lower(g)
	if err != nil {
		t.Fatal(err)
	}
	dag, err := te.NewDAG(l.Outputs...)
	if err != nil {
		t.Fatal(err)
	}
	feed, err := l.Feed(dag, inputs)
	if err != nil {
		t.Fatal(err)
	}
	out, err := dag.Eval(feed)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// maxDiff is the largest elementwise difference relative to max(1, |b|).
func maxDiff(a, b []float32) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	d := 0.0
	for i := range a {
		x := math.Abs(float64(a[i])-float64(b[i])) / math.Max(1, math.Abs(float64(b[i])))
		if x > d || math.IsNaN(x) {
			d = x
		}
	}
	return d
}

func TestGroupOps(t *testing.T) {
	ops := func(types ...string) *Group {
		grp := &Group{}
		for _, op := range types {
			grp.Nodes = append(grp.Nodes, &graph.Node{OpType: op})
		}
		return grp
	}
	for _, c := range []struct {
		grp  *Group
		want string
	}{
		{ops("Conv"), "Conv"},
		{ops("Conv", "Add", "Relu"), "Conv+Add+Relu"},
		{ops("Reshape", "Transpose", "Transpose", "MatMul", "Add", "Add"), "Reshape+Transpose×2+MatMul+Add×2"},
	} {
		if got := c.grp.Ops(); got != c.want {
			t.Errorf("Ops() = %q, want %q", got, c.want)
		}
	}
}
