package frontend_test

import (
	"testing"

	. "github.com/tessera-ml/tessera/graph"
)

// TestMoveMatMulScale: a matmul of a scaled operand becomes the scaled
// matmul (attention's q / √d · kᵀ); a scale read elsewhere, a constant
// divided by the operand, or a scale that is not one element stays.
func TestMoveMatMulScale(t *testing.T) {
	consts := map[string]*Tensor{"c": Float32Tensor([]int{}, []float32{8}), "v": f32(1, 2, 3, 4)}
	tests := []struct {
		name  string
		nodes []*Node
		outs  []string
		want  string
	}{
		{"div of the first operand", []*Node{node("Div d q,c -> qs", nil), node("MatMul m qs,k -> s", nil)}, []string{"s"}, "MatMul,Div"},
		{"mul of the second operand", []*Node{node("Mul d c,k -> ks", nil), node("MatMul m q,ks -> s", nil)}, []string{"s"}, "MatMul,Mul"},
		{"scaled value read elsewhere", []*Node{node("Div d q,c -> qs", nil), node("MatMul m qs,k -> s", nil), node("Relu r qs -> z", nil)},
			[]string{"s", "z"}, "Div,MatMul,Relu"},
		{"constant divided by the operand", []*Node{node("Div d c,q -> qs", nil), node("MatMul m qs,k -> s", nil)}, []string{"s"}, "Div,MatMul"},
		{"a vector, not a scale", []*Node{node("Mul d q,v -> qs", nil), node("MatMul m qs,k -> s", nil)}, []string{"s"}, "Mul,MatMul"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := build(t, 14, []in{{"q", []int{2, 3, 4}}, {"k", []int{2, 4, 3}}}, consts, tc.nodes, tc.outs...)
			runOnly(t, g, "matmul-scale", "dce")
			if got := ops(g); got != tc.want {
				t.Fatalf("ops %s, want %s", got, tc.want)
			}
			if tc.want == "MatMul,Div" || tc.want == "MatMul,Mul" {
				m, sc := g.Nodes[0], g.Nodes[1]
				if sc.Outputs[0] != "s" || sc.Inputs[0] != m.Outputs[0] || sc.Input(1) != "c" && sc.Input(0) != "c" ||
					m.Inputs[0] != "q" || m.Inputs[1] != "k" || g.Values["s"].Shape[2] != 3 {
					t.Errorf("matmul %v -> %v, scale %v -> %v, s %v", m.Inputs, m.Outputs, sc.Inputs, sc.Outputs, g.Values["s"].Shape)
				}
			}
		})
	}
}
