package frontend_test

import (
	"testing"

	. "github.com/tessera-ml/tessera/graph"
)

// TestFuseSilu: Mul(x, Sigmoid(x)), either operand first, becomes one
// Silu(x); a Sigmoid read elsewhere, of another value, or a product that
// broadcasts stays.
func TestFuseSilu(t *testing.T) {
	tests := []struct {
		name  string
		nodes []*Node
		outs  []string
		want  string
	}{
		{"x first", []*Node{node("Sigmoid s x -> sx", nil), node("Mul m x,sx -> y", nil)}, []string{"y"}, "Silu"},
		{"sigmoid first", []*Node{node("Sigmoid s x -> sx", nil), node("Mul m sx,x -> y", nil)}, []string{"y"}, "Silu"},
		{"sigmoid read elsewhere", []*Node{node("Sigmoid s x -> sx", nil), node("Mul m x,sx -> y", nil), node("Relu r sx -> z", nil)},
			[]string{"y", "z"}, "Sigmoid,Mul,Relu"},
		{"sigmoid an output", []*Node{node("Sigmoid s x -> sx", nil), node("Mul m x,sx -> y", nil)}, []string{"y", "sx"}, "Sigmoid,Mul"},
		{"sigmoid of another value", []*Node{node("Relu r x -> rx", nil), node("Sigmoid s rx -> sx", nil), node("Mul m x,sx -> y", nil)},
			[]string{"y"}, "Relu,Sigmoid,Mul"},
		{"a broadcast operand", []*Node{node("Sigmoid s v -> sv", nil), node("Mul m v,sv -> p", nil), node("Mul b x,p -> y", nil)},
			[]string{"y"}, "Silu,Mul"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := build(t, 14, []in{{"x", []int{2, 3, 4}}, {"v", []int{4}}}, nil, tc.nodes, tc.outs...)
			runOnly(t, g, "fuse-silu", "dce")
			if got := ops(g); got != tc.want {
				t.Fatalf("ops %s, want %s", got, tc.want)
			}
			if n := g.Nodes[0]; tc.want == "Silu" && (len(n.Inputs) != 1 || n.Inputs[0] != "x" || n.Outputs[0] != "y") {
				t.Errorf("Silu %v -> %v, want x -> y", n.Inputs, n.Outputs)
			}
		})
	}
}
