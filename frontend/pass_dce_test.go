package frontend_test

import (
	. "github.com/tessera-ml/tessera/graph"
	"slices"
	"testing"
)

func TestEliminateDeadCode(t *testing.T) {
	tests := []struct {
		name   string
		nodes  []*Node
		outs   []string
		ops    string
		consts []string
	}{
		{"unused branch", []*Node{node("Relu r x -> y", nil), node("Add a x,w -> d", nil), node("Exp e d -> d2", nil)}, []string{"y"}, "Relu", nil},
		{"every output live", []*Node{node("Relu r x -> y", nil), node("Add a x,w -> z", nil)}, []string{"y", "z"}, "Relu,Add", []string{"w"}},
		{"dead node reading a live value", []*Node{node("Relu r x -> y", nil), node("Exp e y -> d", nil)}, []string{"y"}, "Relu", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := build(t, 0, []in{{"x", []int{2}}}, map[string]*Tensor{"w": f32(1, 2)}, tc.nodes, tc.outs...)
			runOnly(t, g, "dce")
			if got := ops(g); got != tc.ops {
				t.Errorf("ops %s, want %s", got, tc.ops)
			}
			if got := g.ConstNames(); !slices.Equal(got, tc.consts) {
				t.Errorf("constants %v, want %v", got, tc.consts)
			}
		})
	}
}
