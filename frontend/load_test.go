package frontend

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/graph/onnx"
)

// rateModel is a model whose int64 input sr selects y = x·x (sr = 16000)
// or y = x: once sr is frozen, the condition folds to a constant. x has a
// dynamic batch.
func rateModel() *graph.Graph {
	g := graph.New("rate", 17)
	g.AddConst("k16", graph.Int64Tensor([]int{}, []int64{16000}))
	g.AddInput("x", graph.Float32, []int{-1, 3})
	g.AddNode(&graph.Node{Name: "sq", OpType: "Mul", Inputs: []string{"x", "x"}, Outputs: []string{"xx"}})
	g.AddInput("sr", graph.Int64, []int{})
	g.AddNode(&graph.Node{Name: "eq", OpType: "Equal", Inputs: []string{"sr", "k16"}, Outputs: []string{"is16"}})
	g.AddNode(&graph.Node{Name: "pick", OpType: "Where", Inputs: []string{"is16", "xx", "x"}, Outputs: []string{"y"}})
	g.Outputs = []string{"y"}
	return g
}

// TestLoad reads a model file as every command does.
func TestLoad(t *testing.T) {
	data, err := onnx.Encode(rateModel())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "rate.onnx")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := Load(path, LoadOptions{Inputs: map[string][]int{"x": {2, 3}}, Freeze: map[string][]string{"sr": {"16000"}}})
	if err != nil {
		t.Fatal(err)
	}
	g := l.Graph
	if !reflect.DeepEqual(g.Inputs, []string{"x"}) || !reflect.DeepEqual(g.Values["x"].Shape, []int{2, 3}) {
		t.Errorf("inputs %v, x %v: want only x, bound to [2 3]", g.Inputs, g.Values["x"].Shape)
	}
	if got := l.Before.OpsString(); got != "Equal×1 Mul×1 Where×1" {
		t.Errorf("decoded ops %q", got)
	}
	if l.After.Nodes != 2 || l.After.Ops["Equal"] != 0 || l.After.Consts != 1 || l.After.ConstBytes != 8 {
		t.Errorf("after the passes: %+v, want Equal folded to a bool constant", l.After)
	}
	if _, err := Prepare(rateModel(), "rate", LoadOptions{NoPass: map[string]bool{"fold-constants": true}}); err == nil || !strings.Contains(err.Error(), "--input") {
		t.Errorf("a dynamic batch left unbound: %v", err)
	}
}

func TestLoadFreezeErrors(t *testing.T) {
	for _, c := range []struct {
		freeze map[string][]string
		want   string
	}{
		{map[string][]string{"rate": {"1"}}, "--freeze rate: not a graph input (inputs: x, sr)"},
		{map[string][]string{"sr": {"16k"}}, `--freeze sr: value 0 ("16k") is not a valid int64`},
		{map[string][]string{"sr": {"1", "2"}}, "--freeze sr: 2 values for shape [] (1 elements)"},
		{map[string][]string{"x": {"1", "2", "3"}}, "--freeze x: its shape [-1 3] has dynamic dimensions: bind them with --input x=d0,d1,..."},
	} {
		if _, err := Prepare(rateModel(), "rate", LoadOptions{Freeze: c.freeze}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--freeze %v: error %v, want %q", c.freeze, err, c.want)
		}
	}
}

func TestFrozenTensor(t *testing.T) {
	for _, c := range []struct {
		dtype graph.DType
		shape []int
		vals  []string
		want  *graph.Tensor
		err   string
	}{
		{graph.Float32, []int{2}, []string{"0.5", "-1"}, graph.Float32Tensor([]int{2}, []float32{0.5, -1}), ""},
		{graph.Bool, []int{2}, []string{"true", "0"}, &graph.Tensor{DType: graph.Bool, Shape: []int{2}, I64: []int64{1, 0}}, ""},
		{graph.Int8, []int{1}, []string{"300"}, nil, `value 0 ("300") is not a valid int8`},
		{graph.Float32, []int{1}, []string{"x"}, nil, `value 0 ("x") is not a float32`},
		{graph.Bool, []int{1}, []string{"yes"}, nil, "is not a bool"},
		{graph.Float32, []int{-1}, []string{"1", "2", "3"}, graph.Float32Tensor([]int{3}, []float32{1, 2, 3}), ""},
	} {
		got, err := frozenTensor(&graph.Value{Name: "v", DType: c.dtype, Shape: c.shape}, nil, c.vals)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s %v: error %v, want %q", c.dtype, c.vals, err, c.err)
		case c.err == "" && (err != nil || !reflect.DeepEqual(got, c.want)):
			t.Errorf("%s %v: %+v, %v; want %+v", c.dtype, c.vals, got, err, c.want)
		}
	}
}
