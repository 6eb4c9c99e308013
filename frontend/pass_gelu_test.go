package frontend_test

import (
	"testing"

	. "github.com/tessera-ml/tessera/graph"
)

// TestFuseGelu: nn.GELU as PyTorch exports it below opset 20 (Div by √2,
// Erf, Add 1, Mul by x, Mul by 0.5), and the same with x·0.5 first, a Mul
// by 1/√2 or the operands swapped, becomes one Gelu(x); a pattern whose
// Erf is read elsewhere, that adds 2, or divides √2 by x, stays.
func TestFuseGelu(t *testing.T) {
	consts := map[string]*Tensor{"sqrt2": f32(1.4142135), "rsqrt2": f32(0.70710677), "one": f32(1), "two": f32(2), "half": f32(0.5)}
	pytorch := func(extra ...*Node) []*Node {
		return append([]*Node{
			node("Div d x,sqrt2 -> s", nil),
			node("Erf e s -> r", nil),
			node("Add a r,one -> r1", nil),
			node("Mul m x,r1 -> p", nil),
			node("Mul h p,half -> y", nil),
		}, extra...)
	}
	tests := []struct {
		name  string
		nodes []*Node
		outs  []string
		want  string
	}{
		{"pytorch", pytorch(), []string{"y"}, "Gelu"},
		{"half first", []*Node{
			node("Mul h half,x -> xh", nil),
			node("Mul d x,rsqrt2 -> s", nil),
			node("Erf e s -> r", nil),
			node("Add a one,r -> r1", nil),
			node("Mul m r1,xh -> y", nil),
		}, []string{"y"}, "Gelu"},
		{"erf read elsewhere", pytorch(node("Relu z r -> z", nil)), []string{"y", "z"},
			"Div,Erf,Add,Mul,Mul,Relu"},
		{"adds two", []*Node{
			node("Div d x,sqrt2 -> s", nil),
			node("Erf e s -> r", nil),
			node("Add a r,two -> r1", nil),
			node("Mul m x,r1 -> p", nil),
			node("Mul h p,half -> y", nil),
		}, []string{"y"}, "Div,Erf,Add,Mul,Mul"},
		{"divides the constant", []*Node{
			node("Div d sqrt2,x -> s", nil),
			node("Erf e s -> r", nil),
			node("Add a r,one -> r1", nil),
			node("Mul m x,r1 -> p", nil),
			node("Mul h p,half -> y", nil),
		}, []string{"y"}, "Div,Erf,Add,Mul,Mul"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := build(t, 14, []in{{"x", []int{2, 3, 4}}}, consts, tc.nodes, tc.outs...)
			runOnly(t, g, "fuse-gelu", "dce")
			if got := ops(g); got != tc.want {
				t.Fatalf("ops %s, want %s", got, tc.want)
			}
			if n := g.Nodes[0]; tc.want == "Gelu" && (len(n.Inputs) != 1 || n.Inputs[0] != "x" || n.Outputs[0] != "y") {
				t.Errorf("Gelu %v -> %v, want x -> y", n.Inputs, n.Outputs)
			}
		})
	}
}
