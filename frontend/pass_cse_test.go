package frontend_test

import (
	. "github.com/tessera-ml/tessera/graph"
)

import "testing"

func TestEliminateCommonSubexpressions(t *testing.T) {
	tests := []struct {
		name  string
		nodes []*Node
		outs  []string
		ops   string
	}{
		{"same op, same inputs", []*Node{node("Relu r1 x -> a", nil), node("Relu r2 x -> b", nil), node("Add s a,b -> y", nil)}, []string{"y"}, "Relu,Add"},
		{"chains merge", []*Node{
			node("Relu r1 x -> a", nil), node("Exp e1 a -> a2", nil),
			node("Relu r2 x -> b", nil), node("Exp e2 b -> b2", nil),
			node("Add s a2,b2 -> y", nil)}, []string{"y"}, "Relu,Exp,Add"},
		{"different attributes stay", []*Node{
			node("LeakyRelu r1 x -> a", map[string]Attr{"alpha": floatA(0.1)}),
			node("LeakyRelu r2 x -> b", map[string]Attr{"alpha": floatA(0.2)}),
			node("Add s a,b -> y", nil)}, []string{"y"}, "LeakyRelu,LeakyRelu,Add"},
		{"graph outputs keep their nodes", []*Node{node("Relu r1 x -> a", nil), node("Relu r2 x -> b", nil)}, []string{"a", "b"}, "Relu,Relu"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := build(t, 0, []in{{"x", []int{2}}}, nil, tc.nodes, tc.outs...)
			runOnly(t, g, "cse", "dce")
			if got := ops(g); got != tc.ops {
				t.Errorf("ops %s, want %s", got, tc.ops)
			}
		})
	}
}
