package frontend_test

import (
	"fmt"

	. "github.com/tessera-ml/tessera/graph"
)

import "testing"

func TestRemoveNoops(t *testing.T) {
	tests := []struct {
		name  string
		nodes []*Node
		out   string
		ops   string
		feeds string // the value the last node reads (or the graph output's producer writes)
	}{
		{"identity", []*Node{node("Identity i x -> a", nil), node("Relu r a -> y", nil)}, "y", "Relu", "x"},
		{"dropout", []*Node{node("Dropout d x -> a", nil), node("Relu r a -> y", nil)}, "y", "Relu", "x"},
		{"dropout with an unread mask", []*Node{node("Dropout d x -> a,mask", nil), node("Relu r a -> y", nil)}, "y", "Relu", "x"},
		{"same-shape reshape", []*Node{node("Reshape s x,shp -> a", nil), node("Relu r a -> y", nil)}, "y", "Relu", "x"},
		{"identity transpose", []*Node{node("Transpose t x -> a", map[string]Attr{"perm": ints(0, 1)}), node("Relu r a -> y", nil)}, "y", "Relu", "x"},
		{"real transpose stays", []*Node{node("Transpose t x -> a", map[string]Attr{"perm": ints(1, 0)}), node("Relu r a -> y", nil)}, "y", "Transpose,Relu", "a"},
		{"zero pad", []*Node{node("Pad p x,zero -> a", nil), node("Relu r a -> y", nil)}, "y", "Relu", "x"},
		{"shifting pad stays", []*Node{node("Pad p x,shift -> a", nil), node("Relu r a -> y", nil)}, "y", "Pad,Relu", "a"},
		{"graph output keeps its name", []*Node{node("Relu r x -> a", nil), node("Identity i a -> y", nil)}, "y", "Relu", "x"},
		{"identity of a graph input to an output stays", []*Node{node("Identity i x -> y", nil)}, "y", "Identity", "x"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := build(t, 0, []in{{"x", []int{3, 3}}}, map[string]*Tensor{"shp": i64(3, 3), "zero": i64(0, 0, 0, 0), "shift": i64(0, 1, 0, -1)}, tc.nodes, tc.out)
			runOnly(t, g, "remove-noops")
			if got := ops(g); got != tc.ops {
				t.Fatalf("ops %s, want %s", got, tc.ops)
			}
			last := g.Nodes[len(g.Nodes)-1]
			if last.Inputs[0] != tc.feeds {
				t.Errorf("%s reads %s, want %s", last.OpType, last.Inputs[0], tc.feeds)
			}
			if last.Outputs[0] != tc.out {
				t.Errorf("%s writes %s, want %s", last.OpType, last.Outputs[0], tc.out)
			}
		})
	}
}

// TestMergeReshapes: a reshape of a reshape becomes one Reshape of the
// first one's input to the static shape; dce then drops the inner one.
func TestMergeReshapes(t *testing.T) {
	g := build(t, 0, []in{{"x", []int{2, 6}}}, map[string]*Tensor{"shp": i64(3, 4), "ax": i64(0)}, []*Node{
		node("Reshape r x,shp -> a", nil),
		node("Unsqueeze u a,ax -> b", nil),
		node("Flatten f b -> c", nil),
		node("Relu n c -> y", nil),
	}, "y")
	runOnly(t, g, "merge-reshapes", "dce")
	if got := ops(g); got != "Reshape,Relu" {
		t.Fatalf("ops %s, want Reshape,Relu", got)
	}
	r := g.Nodes[0]
	if r.Inputs[0] != "x" || fmt.Sprint(g.ConstOf(r.Inputs[1]).Int64s()) != "[1 12]" || r.Outputs[0] != "c" {
		t.Errorf("merged: %v -> %v, shape %v", r.Inputs, r.Outputs, g.ConstOf(r.Inputs[1]).Int64s())
	}
}
