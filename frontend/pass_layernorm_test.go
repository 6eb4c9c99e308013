package frontend_test

import (
	"testing"

	. "github.com/tessera-ml/tessera/graph"
)

// TestFuseLayerNorm: nn.LayerNorm as PyTorch exports it below opset 17
// (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add) becomes one
// LayerNormalization; a pattern whose centered value is read elsewhere,
// or that reduces an axis other than the last ones, stays.
func TestFuseLayerNorm(t *testing.T) {
	consts := map[string]*Tensor{"two": f32(2), "eps": f32(1e-5), "gamma": f32(1, 2, 3, 4), "beta": f32(4, 3, 2, 1)}
	pattern := func(axes Attr, extra ...*Node) []*Node {
		nodes := []*Node{
			node("ReduceMean m x -> mu", map[string]Attr{"axes": axes}),
			node("Sub s x,mu -> d", nil),
			node("Pow p d,two -> d2", nil),
			node("ReduceMean v d2 -> var", map[string]Attr{"axes": axes}),
			node("Add a var,eps -> ve", nil),
			node("Sqrt q ve -> sd", nil),
			node("Div n d,sd -> nx", nil),
			node("Mul g nx,gamma -> gx", nil),
			node("Add b beta,gx -> y", nil),
		}
		return append(nodes, extra...)
	}
	tests := []struct {
		name  string
		nodes []*Node
		outs  []string
		want  string
	}{
		{"last axis", pattern(ints(-1)), []string{"y"}, "LayerNormalization"},
		{"last two axes", pattern(ints(1, 2)), []string{"y"}, "LayerNormalization"},
		{"not the last axes", pattern(ints(1)), []string{"y"}, "ReduceMean,Sub,Pow,ReduceMean,Add,Sqrt,Div,Mul,Add"},
		{"centered value read elsewhere", pattern(ints(-1), node("Relu r d -> z", nil)), []string{"y", "z"},
			"ReduceMean,Sub,Pow,ReduceMean,Add,Sqrt,Div,Mul,Add,Relu"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := build(t, 14, []in{{"x", []int{2, 3, 4}}}, consts, tc.nodes, tc.outs...)
			runOnly(t, g, "fuse-layernorm", "dce")
			if got := ops(g); got != tc.want {
				t.Fatalf("ops %s, want %s", got, tc.want)
			}
			if tc.want != "LayerNormalization" {
				return
			}
			n := g.Nodes[0]
			axis, _ := n.Int("axis", 0)
			eps, _ := n.Float("epsilon", 0)
			wantAxis := int64(2)
			if tc.name == "last two axes" {
				wantAxis = 1
			}
			if axis != wantAxis || eps != 1e-5 || n.Inputs[0] != "x" || n.Inputs[1] != "gamma" || n.Inputs[2] != "beta" || n.Outputs[0] != "y" {
				t.Errorf("%v -> %v, axis %d, epsilon %g", n.Inputs, n.Outputs, axis, eps)
			}
		})
	}
}
