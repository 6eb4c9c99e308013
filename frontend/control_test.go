package frontend_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/frontend"
	. "github.com/tessera-ml/tessera/graph"
)

// Control flow: If, Loop and Scan expand (ops.Op.Expand) during shape
// inference once what decides them is known.

// branch makes a subgraph of the given nodes and outputs; its nodes may
// read values of the enclosing graph.
func branch(name string, consts map[string]*Tensor, nodes []*Node, outputs ...string) *Graph {
	g := New(name, 17)
	for k, c := range consts {
		g.AddConst(k, c)
	}
	for _, n := range nodes {
		g.AddNode(n)
	}
	g.Outputs = outputs
	return g
}

func ifNode(name, cond string, then, els *Graph, outs ...string) *Node {
	return &Node{Name: name, OpType: "If", Inputs: []string{cond}, Outputs: outs, Attrs: map[string]Attr{
		"then_branch": {Kind: AttrGraph, G: then}, "else_branch": {Kind: AttrGraph, G: els}}}
}

// rateModel branches on the scalar int64 input sr, as Silero VAD does:
// then y = x·2 (+ a nested If on x's shape, taken), else y = x + 1.
func rateModel(t *testing.T) *Graph {
	t.Helper()
	g := New("rate", 17)
	g.AddInput("x", Float32, []int{2, 3})
	g.AddInput("sr", Int64, []int{})
	g.AddConst("k16", Int64Tensor([]int{}, []int64{16000}))
	g.AddConst("two", Float32Tensor([]int{}, []float32{2}))
	g.AddNode(node("Equal eq sr,k16 -> is16", nil))
	nested := ifNode("inner", "rows2",
		branch("inner_then", nil, []*Node{node("Mul m x,two -> t", nil)}, "t"), // "t" also names a value of the outer graph
		branch("inner_else", nil, []*Node{node("Neg n x -> t2", nil)}, "t2"), "r")
	then := branch("then", map[string]*Tensor{"i0": Int64Tensor([]int{}, []int64{0}), "k2": Int64Tensor([]int{}, []int64{2})}, []*Node{
		node("Shape s x -> shp", nil),
		node("Gather g shp,i0 -> rows", nil),
		node("Equal e rows,k2 -> rows2", nil),
		nested,
	}, "r")
	els := branch("else", map[string]*Tensor{"one": Float32Tensor([]int{}, []float32{1})}, []*Node{node("Add a x,one -> p", nil)}, "p")
	g.AddNode(ifNode("if", "is16", then, els, "y"))
	g.AddNode(node("Relu t x -> t", nil)) // a value named as one of the nested branch's
	g.AddNode(node("Add z y,t -> out", nil))
	g.Outputs = []string{"out"}
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	return g
}

func TestIfFolds(t *testing.T) {
	x := f32(1, -2, 3, -4, 5, -6)
	x.Shape = []int{2, 3}
	for _, tc := range []struct {
		sr   int64
		want []float32 // out = y + relu(x)
	}{
		{16000, []float32{3, -4, 9, -8, 15, -12}},
		{8000, []float32{3, -1, 7, -3, 11, -5}},
	} {
		g := rateModel(t)
		if err := g.Freeze("sr", Int64Tensor([]int{}, []int64{tc.sr})); err != nil {
			t.Fatal(err)
		}
		if err := frontend.RunPasses(g, nil); err != nil {
			t.Fatalf("sr=%d: %v", tc.sr, err)
		}
		if strings.Contains(ops(g), "If") {
			t.Fatalf("sr=%d: If left: %s", tc.sr, ops(g))
		}
		if err := g.Freeze("x", x); err != nil {
			t.Fatal(err)
		}
		if err := frontend.RunPasses(g, nil); err != nil {
			t.Fatal(err)
		}
		got := g.Values["out"].Const
		if got == nil || !slices.Equal(got.F32, tc.want) {
			t.Errorf("sr=%d: out = %v, want %v", tc.sr, got, tc.want)
		}
	}
}

func TestIfOnRunTimeData(t *testing.T) {
	g := rateModel(t)
	err := frontend.RunPasses(g, nil)
	var cf *ControlFlowError
	if !errors.As(err, &cf) || !slices.Equal(cf.Inputs, []string{"sr"}) || cf.Node != "if" || cf.Opset != 17 {
		t.Fatalf("got %v, want a *ControlFlowError naming input sr", err)
	}
	for _, want := range []string{"If (opset 17) at node if", "condition is16", "from input sr", "--freeze sr="} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
	var nc *NotConstantError
	if !errors.As(err, &nc) || nc.Value != "is16" || !errors.Is(err, ErrUnsupported) {
		t.Errorf("%v does not wrap ErrUnsupported and a *NotConstantError for is16", err)
	}
}

func TestIfErrors(t *testing.T) {
	mk := func(then *Graph, cond *Tensor) *Graph {
		g := New("bad", 17)
		g.AddInput("x", Float32, []int{2})
		g.AddConst("c", cond)
		g.AddNode(ifNode("if", "c", then, then, "y"))
		g.Outputs = []string{"y"}
		return g
	}
	ok := branch("b", nil, []*Node{node("Neg n x -> y1", nil)}, "y1")
	two := branch("b", nil, []*Node{node("Neg n x -> y1", nil)}, "y1", "x")
	withInput := branch("b", nil, []*Node{node("Neg n x -> y1", nil)}, "y1")
	withInput.AddInput("z", Float32, []int{2})
	for _, tc := range []struct {
		name string
		g    *Graph
		want string
	}{
		{"condition of two elements", mk(ok, &Tensor{DType: Bool, Shape: []int{2}, I64: []int64{1, 0}}), "want one element"},
		{"outputs differ", mk(two, &Tensor{DType: Bool, Shape: []int{}, I64: []int64{1}}), "2 outputs"},
		{"branch with inputs", mk(withInput, &Tensor{DType: Bool, Shape: []int{}, I64: []int64{1}}), "takes none"},
	} {
		err := frontend.RunPasses(tc.g, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
}

// loopModel: y accumulates x + i over trip iterations (a for loop, the
// condition passed through), and a scan output stacks each iteration's
// value; the body computes its condition when whileLoop.
func loopModel(t *testing.T, whileLoop bool) *Graph {
	t.Helper()
	g := New("loop", 17)
	g.AddInput("x", Float32, []int{2})
	g.AddInput("trips", Int64, []int{})
	g.AddConst("cond", &Tensor{DType: Bool, Shape: []int{}, I64: []int64{1}})
	body := New("body", 17)
	body.AddInput("i", Int64, []int{})
	body.AddInput("c", Bool, []int{})
	body.AddInput("acc", Float32, []int{2})
	body.AddNode(node("Cast ci i -> fi", map[string]Attr{"to": intA(1)}))
	body.AddNode(node("Add a1 acc,x -> s1", nil))
	body.AddNode(node("Add a2 s1,fi -> s2", nil))
	cond := "c_out"
	if whileLoop {
		body.AddConst("limit", Float32Tensor([]int{}, []float32{10}))
		body.AddNode(node("ReduceSum r s2 -> tot", map[string]Attr{"keepdims": intA(0)}))
		body.AddNode(node("Less l tot,limit -> c_out", nil))
	} else {
		body.AddNode(node("Identity id c -> c_out", nil))
	}
	body.Outputs = []string{cond, "s2", "s2"}
	g.AddNode(&Node{Name: "loop", OpType: "Loop", Inputs: []string{"trips", "cond", "x"}, Outputs: []string{"y", "ys"},
		Attrs: map[string]Attr{"body": {Kind: AttrGraph, G: body}}})
	g.Outputs = []string{"y", "ys"}
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	return g
}

func TestLoopUnrolls(t *testing.T) {
	g := loopModel(t, false)
	if err := g.Freeze("trips", Int64Tensor([]int{}, []int64{3})); err != nil {
		t.Fatal(err)
	}
	if err := g.Freeze("x", f32(1, -1)); err != nil {
		t.Fatal(err)
	}
	if err := frontend.RunPasses(g, nil); err != nil {
		t.Fatal(err)
	}
	// acc starts at x = (1, -1); iteration i adds x + i: (2, -2), (4, -2),
	// (7, -1).
	y, ys := g.Values["y"].Const, g.Values["ys"].Const
	if y == nil || !slices.Equal(y.F32, []float32{7, -1}) {
		t.Errorf("y = %v, want [7 -1]", y)
	}
	if ys == nil || !slices.Equal(ys.Shape, []int{3, 2}) || !slices.Equal(ys.F32, []float32{2, -2, 4, -2, 7, -1}) {
		t.Errorf("ys = %v, want [3 2][2 -2 4 -2 7 -1]", ys)
	}
}

func TestLoopErrors(t *testing.T) {
	err := frontend.RunPasses(loopModel(t, false), nil)
	var cf *ControlFlowError
	if !errors.As(err, &cf) || !slices.Equal(cf.Inputs, []string{"trips"}) || !strings.Contains(err.Error(), "Loop (opset 17) at node loop: trip count trips is computed at run time from input trips") {
		t.Errorf("trip count at run time: %v", err)
	}
	g := loopModel(t, true)
	if err := g.Freeze("trips", Int64Tensor([]int{}, []int64{3})); err != nil {
		t.Fatal(err)
	}
	err = frontend.RunPasses(g, nil)
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "its body computes the condition c_out: a loop that stops on run-time data") {
		t.Errorf("while loop: %v", err)
	}
}
