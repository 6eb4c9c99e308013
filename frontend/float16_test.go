package frontend

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/x448/float16"

	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/tir"
)

// halfModel is y = Relu(x + w) · c in half precision dt (float16 or
// bfloat16): x an input of dt, w an initializer of dt, c = Cast(to=dt)(x32)
// computed from a float32 input, y a declared output of dt; z =
// Cast(to=float32)(y) is a second, float32 output.
func halfModel(w []float32, dt graph.DType) *graph.Graph {
	g := graph.New("half", 17)
	g.AddInput("x", dt, []int{4})
	g.AddInput("x32", graph.Float32, []int{4})
	g.AddConst("w", &graph.Tensor{DType: dt, Shape: []int{4}, F32: w})
	g.AddNode(&graph.Node{Name: "add", OpType: "Add", Inputs: []string{"x", "w"}, Outputs: []string{"s"}})
	g.AddNode(&graph.Node{Name: "relu", OpType: "Relu", Inputs: []string{"s"}, Outputs: []string{"r"}})
	g.AddNode(&graph.Node{Name: "half", OpType: "Cast", Inputs: []string{"x32"}, Outputs: []string{"c"}, Attrs: map[string]graph.Attr{"to": {Kind: graph.AttrInt, I: int64(dt.ONNX())}}})
	g.AddNode(&graph.Node{Name: "mul", OpType: "Mul", Inputs: []string{"r", "c"}, Outputs: []string{"y"}})
	g.AddNode(&graph.Node{Name: "wide", OpType: "Cast", Inputs: []string{"y"}, Outputs: []string{"z"}, Attrs: map[string]graph.Attr{"to": {Kind: graph.AttrInt, I: 1}}})
	g.Outputs = []string{"y", "z"}
	g.Declared = map[string]graph.Decl{"y": {DType: dt, Shape: []int{4}}, "z": {DType: graph.Float32, Shape: []int{4}}}
	return g
}

// TestFloat16InFloat32: a float16 or bfloat16 model loads with that type
// only at its inputs, its outputs and its Casts to it (a bfloat16 model
// only at its Casts: its inputs and outputs are float32 at the API), every
// other op computing in float32; with its inputs frozen, the folded
// outputs are the float32 computation rounded where the model's Casts and
// its inputs and outputs round (ties to even).
func TestFloat16InFloat32(t *testing.T) {
	for _, c := range []struct {
		dt    graph.DType
		round func(float64) float32
		inf   bool // 1000.001·65519 overflows
	}{
		{graph.Float16, func(v float64) float32 { return float16.Fromfloat32(float32(v)).Float32() }, true},
		{graph.BFloat16, func(v float64) float32 { return tir.RoundBFloat16(float32(v)) }, false},
	} {
		t.Run(c.dt.String(), func(t *testing.T) { checkHalfModel(t, c.dt, c.round, c.inf) })
	}
}

func checkHalfModel(t *testing.T, dt graph.DType, round func(float64) float32, inf bool) {
	w := []float32{0.5, -1, 0.25, 1000}
	l, err := Prepare(halfModel(w, dt), "half.onnx", LoadOptions{NoPass: map[string]bool{"fold-constants": true}})
	if err != nil {
		t.Fatal(err)
	}
	g := l.Graph
	if len(l.Notes) != 1 || !strings.Contains(l.Notes[0], "has "+dt.String()+" values: they are computed in float32") {
		t.Errorf("notes %q: want one saying %s is computed in float32", l.Notes, dt)
	}
	for _, n := range g.Nodes {
		to, _ := n.Int("to", 0)
		for _, name := range slices.Concat(n.Inputs, n.Outputs) {
			v := g.Values[name]
			ok := v.DType != dt || n.OpType == "Cast" || name == "x"
			if !ok {
				t.Errorf("node %s (%s) reads or writes %s of %s", n.Name, n.OpType, name, dt)
			}
		}
		if n.OpType == "Cast" && to == int64(dt.ONNX()) && g.Values[n.Outputs[0]].DType != dt {
			t.Errorf("Cast %s to %s makes %s", n.Name, dt, g.Values[n.Outputs[0]].DType)
		}
	}
	io := dt // bfloat16 inputs and outputs are float32 at the API
	if dt == graph.BFloat16 {
		io = graph.Float32
	}
	for name, want := range map[string]graph.DType{"x": io, "x32": graph.Float32, "y": io, "z": graph.Float32, "w": graph.Float32} {
		if got := g.Values[name].DType; got != want {
			t.Errorf("%s is %s, want %s", name, got, want)
		}
	}
	if !slices.Equal(g.Inputs, []string{"x", "x32"}) || !slices.Equal(g.Outputs, []string{"y", "z"}) {
		t.Errorf("inputs %v, outputs %v: the model's names must stay", g.Inputs, g.Outputs)
	}

	// Frozen inputs fold: y = round(Relu(x + w) · round(x32)).
	x := []string{"1.5", "0.75", "-3", "0.001"}
	x32 := []string{"0.1", "3", "7", "65519"}
	l, err = Prepare(halfModel(w, dt), "half.onnx", LoadOptions{Freeze: map[string][]string{"x": x, "x32": x32}})
	if err != nil {
		t.Fatal(err)
	}
	var want []float32
	for i := range w {
		xi := round(parse(t, x[i]))
		r := math.Max(float64(xi+w[i]), 0)
		want = append(want, round(float64(float32(r)*round(parse(t, x32[i])))))
	}
	for _, name := range []string{"y", "z"} {
		c := l.Graph.ConstOf(name)
		if c == nil {
			t.Fatalf("%s did not fold", name)
		}
		if !slices.Equal(c.F32, want) {
			t.Errorf("%s = %v, want %v", name, c.F32, want)
		}
	}
	if math.IsInf(float64(want[3]), 1) != inf {
		t.Errorf("1000.001·65519 rounds to %v in %s", want[3], dt)
	}
}

func parse(t *testing.T, s string) float64 {
	var v float64
	if _, err := fmt.Sscan(s, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestFloat16Subgraph: float16 inside a subgraph is refused by node.
func TestFloat16Subgraph(t *testing.T) {
	body := graph.New("body", 17)
	body.AddInput("b", graph.Float16, []int{1})
	body.AddNode(&graph.Node{Name: "id", OpType: "Identity", Inputs: []string{"b"}, Outputs: []string{"o"}})
	body.Outputs = []string{"o"}
	g := graph.New("sub", 17)
	g.AddInput("cond", graph.Bool, []int{})
	g.AddNode(&graph.Node{Name: "branch", OpType: "If", Inputs: []string{"cond"}, Outputs: []string{"y"},
		Attrs: map[string]graph.Attr{"then_branch": {Kind: graph.AttrGraph, G: body}, "else_branch": {Kind: graph.AttrGraph, G: body}}})
	g.Outputs = []string{"y"}
	_, err := Prepare(g, "sub.onnx", LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), "node branch (If): float16 inside its subgraph else_branch") {
		t.Errorf("float16 in a subgraph: %v", err)
	}
}

// TestFloat16DeclaredTypes: an output declared float32 that the model
// computes in float16 is refused, as in a float32 model, although its
// kernels compute float32.
func TestFloat16DeclaredTypes(t *testing.T) {
	g := graph.New("relu16", 17)
	g.AddInput("x", graph.Float16, []int{4})
	g.AddNode(&graph.Node{Name: "relu", OpType: "Relu", Inputs: []string{"x"}, Outputs: []string{"y"}})
	g.Outputs = []string{"y"}
	g.Declared = map[string]graph.Decl{"y": {DType: graph.Float32}}
	if _, err := Prepare(g.Clone(), "relu16.onnx", LoadOptions{}); err == nil || !strings.Contains(err.Error(), "output y is declared float32, but the graph computes float16") {
		t.Errorf("a float16 Relu declared float32: %v", err)
	}
	g.Declared["y"] = graph.Decl{DType: graph.Float16}
	l, err := Prepare(g, "relu16.onnx", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Graph.Values["y"].DType; got != graph.Float16 {
		t.Errorf("y is %s, want float16", got)
	}
}

// TestFloat16Undeclared: an output the model does not declare is float16
// where the ops' rules make it so, as a float16 runtime would return it.
func TestFloat16Undeclared(t *testing.T) {
	g := graph.New("relu16", 17)
	g.AddInput("x", graph.Float16, []int{4})
	g.AddNode(&graph.Node{Name: "relu", OpType: "Relu", Inputs: []string{"x"}, Outputs: []string{"y"}})
	g.Outputs = []string{"y"}
	l, err := Prepare(g, "relu16.onnx", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Graph.Values["y"].DType; got != graph.Float16 {
		t.Errorf("y is %s, want float16", got)
	}
}
