package frontend

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/x448/float16"

	"github.com/tessera-ml/tessera/graph"
)

// halfModel is y = Relu(x + w) · c in float16: x a float16 input, w a
// float16 initializer, c = Cast(to=float16)(x32) computed from a float32
// input, y a declared float16 output; z = Cast(to=float32)(y) is a
// second, float32 output.
func halfModel(w []float32) *graph.Graph {
	g := graph.New("half", 17)
	g.AddInput("x", graph.Float16, []int{4})
	g.AddInput("x32", graph.Float32, []int{4})
	g.AddConst("w", &graph.Tensor{DType: graph.Float16, Shape: []int{4}, F32: w})
	g.AddNode(&graph.Node{Name: "add", OpType: "Add", Inputs: []string{"x", "w"}, Outputs: []string{"s"}})
	g.AddNode(&graph.Node{Name: "relu", OpType: "Relu", Inputs: []string{"s"}, Outputs: []string{"r"}})
	g.AddNode(&graph.Node{Name: "half", OpType: "Cast", Inputs: []string{"x32"}, Outputs: []string{"c"}, Attrs: map[string]graph.Attr{"to": {Kind: graph.AttrInt, I: 10}}})
	g.AddNode(&graph.Node{Name: "mul", OpType: "Mul", Inputs: []string{"r", "c"}, Outputs: []string{"y"}})
	g.AddNode(&graph.Node{Name: "wide", OpType: "Cast", Inputs: []string{"y"}, Outputs: []string{"z"}, Attrs: map[string]graph.Attr{"to": {Kind: graph.AttrInt, I: 1}}})
	g.Outputs = []string{"y", "z"}
	g.Declared = map[string]graph.Decl{"y": {DType: graph.Float16, Shape: []int{4}}, "z": {DType: graph.Float32, Shape: []int{4}}}
	return g
}

// TestFloat16InFloat32: a float16 model loads with float16 only at its
// inputs, its outputs and its Casts to float16, every other op computing
// in float32; with its inputs frozen, the folded outputs are the float32
// computation rounded where the model's Casts round.
func TestFloat16InFloat32(t *testing.T) {
	w := []float32{0.5, -1, 0.25, 1000}
	l, err := Prepare(halfModel(w), "half.onnx", LoadOptions{NoPass: map[string]bool{"fold-constants": true}})
	if err != nil {
		t.Fatal(err)
	}
	g := l.Graph
	if len(l.Notes) != 1 || !strings.Contains(l.Notes[0], "computed in float32") {
		t.Errorf("notes %q: want one saying float16 is computed in float32", l.Notes)
	}
	for _, n := range g.Nodes {
		to, _ := n.Int("to", 0)
		for _, name := range slices.Concat(n.Inputs, n.Outputs) {
			v := g.Values[name]
			ok := v.DType != graph.Float16 || n.OpType == "Cast" || name == "x"
			if !ok {
				t.Errorf("node %s (%s) reads or writes %s of float16", n.Name, n.OpType, name)
			}
		}
		if n.OpType == "Cast" && to == 10 && g.Values[n.Outputs[0]].DType != graph.Float16 {
			t.Errorf("Cast %s to float16 makes %s", n.Name, g.Values[n.Outputs[0]].DType)
		}
	}
	for name, want := range map[string]graph.DType{"x": graph.Float16, "x32": graph.Float32, "y": graph.Float16, "z": graph.Float32, "w": graph.Float32} {
		if got := g.Values[name].DType; got != want {
			t.Errorf("%s is %s, want %s", name, got, want)
		}
	}
	if !slices.Equal(g.Inputs, []string{"x", "x32"}) || !slices.Equal(g.Outputs, []string{"y", "z"}) {
		t.Errorf("inputs %v, outputs %v: the model's names must stay", g.Inputs, g.Outputs)
	}

	// Frozen inputs fold: y = roundhalf(Relu(x + w) · roundhalf(x32)).
	x := []string{"1.5", "0.75", "-3", "0.001"}
	x32 := []string{"0.1", "3", "7", "65519"}
	l, err = Prepare(halfModel(w), "half.onnx", LoadOptions{Freeze: map[string][]string{"x": x, "x32": x32}})
	if err != nil {
		t.Fatal(err)
	}
	round := func(v float64) float32 { return float16.Fromfloat32(float32(v)).Float32() }
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
	if math.IsInf(float64(want[3]), 1) != true {
		t.Errorf("the test means 1000.001·65519 to round to +inf in float16: %v", want[3])
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
