package frontend_test

import (
	"slices"
	"strings"
	"testing"

	. "github.com/tessera-ml/tessera/graph"
)

// TestFuseQLinear: the quantized Conv and MatMul of a QDQ model become
// QLinearConv and QLinearMatMul (a Relu between, a Max with the output's
// zero point); a bias whose scale is not x's times w's, weights computed
// at run time or a float value read elsewhere keep the float form. A max
// pool or a transpose between a DequantizeLinear and a QuantizeLinear of
// the same parameters runs on the integers.
func TestFuseQLinear(t *testing.T) {
	u8 := func(v int64) *Tensor { return &Tensor{DType: Uint8, Shape: []int{}, I64: []int64{v}} }
	consts := map[string]*Tensor{
		"xs": Float32Tensor([]int{}, []float32{0.5}), "xz": u8(3),
		"w":  {DType: Int8, Shape: []int{2, 1, 1, 1}, I64: []int64{3, -4}},
		"ws": f32(0.25, 0.125), "wz": {DType: Int8, Shape: []int{2}, I64: []int64{0, 0}},
		"b":  {DType: Int32, Shape: []int{2}, I64: []int64{10, -20}},
		"bs": f32(0.125, 0.0625), "bad": f32(0.125, 0.07),
		"ys": Float32Tensor([]int{}, []float32{0.75}), "yz": u8(7),
		"m":  {DType: Int8, Shape: []int{4, 3}, I64: []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, -1, -2, -3}},
		"ms": Float32Tensor([]int{}, []float32{0.1}),
		"gb": {DType: Int32, Shape: []int{3}, I64: []int64{5, -7, 9}}, "gbs": Float32Tensor([]int{}, []float32{0.05}),
	}
	dqx := node("DequantizeLinear dx xq,xs,xz -> xf", nil)
	dqw := node("DequantizeLinear dw w,ws,wz -> wf", map[string]Attr{"axis": intA(0)})
	q := node("QuantizeLinear q y,ys,yz -> yq", nil)
	pool := map[string]Attr{"kernel_shape": ints(2, 2)}
	tests := []struct {
		name  string
		nodes []*Node
		outs  []string
		want  string
	}{
		{"conv with bias", []*Node{dqx, dqw, node("DequantizeLinear db b,bs -> bf", map[string]Attr{"axis": intA(0)}), node("Conv c xf,wf,bf -> y", nil), q}, []string{"yq"}, "QuantizeLinear,QLinearConv"},
		{"conv and relu", []*Node{dqx, dqw, node("Conv c xf,wf -> r", nil), node("Relu relu r -> y", nil), q}, []string{"yq"}, "QuantizeLinear,QLinearConv,Max"},
		{"bias of another scale", []*Node{dqx, dqw, node("DequantizeLinear db b,bad -> bf", map[string]Attr{"axis": intA(0)}), node("Conv c xf,wf,bf -> y", nil), q}, []string{"yq"},
			"QuantizeLinear,DequantizeLinear,DequantizeLinear,DequantizeLinear,Conv,QuantizeLinear"},
		{"conv output read elsewhere", []*Node{dqx, dqw, node("Conv c xf,wf -> y", nil), q}, []string{"yq", "y"},
			"QuantizeLinear,DequantizeLinear,DequantizeLinear,Conv,QuantizeLinear"},
		{"matmul", []*Node{node("DequantizeLinear dx xq,xs,xz -> xf", nil), node("DequantizeLinear dm m,ms -> mf", nil), node("MatMul mm xf,mf -> y", nil), q}, []string{"yq"},
			"QuantizeLinear,QLinearMatMul"},
		// A Gemm is a 1×1 convolution between Reshapes; with alpha 2 it
		// stays in float.
		{"gemm with bias", []*Node{node("DequantizeLinear dx xq,xs,xz -> xf", nil), node("DequantizeLinear dm m,ms -> mf", nil),
			node("DequantizeLinear db gb,gbs -> bf", nil), node("Gemm gm xf,mf,bf -> y", nil), q}, []string{"yq"}, "QuantizeLinear,Reshape,QLinearConv,Reshape"},
		{"gemm alpha 2", []*Node{node("DequantizeLinear dx xq,xs,xz -> xf", nil), node("DequantizeLinear dm m,ms -> mf", nil),
			node("Gemm gm xf,mf -> y", map[string]Attr{"alpha": floatA(2)}), q}, []string{"yq"}, "QuantizeLinear,DequantizeLinear,DequantizeLinear,Gemm,QuantizeLinear"},
		// Between a DequantizeLinear and a QuantizeLinear of the same
		// scale and zero point, a max pool or a transpose runs on the
		// integers; of another scale, in float.
		{"max pool on integers", []*Node{dqx, node("MaxPool mp xf -> y", pool), node("QuantizeLinear q y,xs,xz -> yq", nil)}, []string{"yq"}, "QuantizeLinear,MaxPool"},
		{"transpose on integers", []*Node{dqx, node("Transpose tr xf -> y", map[string]Attr{"perm": ints(0, 1, 3, 2)}), node("QuantizeLinear q y,xs,xz -> yq", nil)}, []string{"yq"}, "QuantizeLinear,Transpose"},
		{"max pool requantized", []*Node{dqx, node("MaxPool mp xf -> y", pool), q}, []string{"yq"}, "QuantizeLinear,DequantizeLinear,MaxPool,QuantizeLinear"},
		{"max pool read elsewhere", []*Node{dqx, node("MaxPool mp xf -> y", pool), node("QuantizeLinear q y,xs,xz -> yq", nil)}, []string{"yq", "y"}, "QuantizeLinear,DequantizeLinear,MaxPool,QuantizeLinear"},
	}
	t.Run("float unless the graph runs on integers", func(t *testing.T) {
		x := node("QuantizeLinear qx x,xs,xz -> xq", nil)
		g := build(t, 17, []in{{"x", []int{1, 1, 3, 4}}}, consts, []*Node{x, dqx, dqw, node("Conv c xf,wf -> y", nil), q}, "yq")
		runOnly(t, g, "fuse-qlinear", "dce")
		if got, want := ops(g), "QuantizeLinear,DequantizeLinear,DequantizeLinear,Conv,QuantizeLinear"; got != want {
			t.Fatalf("ops %s, want %s", got, want)
		}
	})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x := node("QuantizeLinear qx x,xs,xz -> xq", nil)
			shape := []int{1, 1, 3, 4}
			if strings.HasPrefix(tc.name, "matmul") || strings.HasPrefix(tc.name, "gemm") {
				shape = []int{2, 4}
			}
			g := build(t, 17, []in{{"x", shape}}, consts, append([]*Node{x}, tc.nodes...), tc.outs...)
			g.Integer = true
			runOnly(t, g, "fuse-qlinear", "dce")
			if got := ops(g); got != tc.want {
				t.Fatalf("ops %s, want %s", got, tc.want)
			}
			if last := g.Nodes[len(g.Nodes)-1]; tc.want == "QuantizeLinear,"+last.OpType && (last.Inputs[0] != "xq" || g.Values["yq"].DType != Uint8) {
				t.Errorf("%s reads %s, want the uint8 xq; writes %s", last.OpType, last.Inputs[0], g.Values["yq"].DType)
			}
			if tc.name == "bias of another scale" {
				if want := "the quantized Conv at node c runs in float: its bias is not an int32 constant of scale x_scale·w_scale and zero point 0"; !slices.Contains(g.Notes, want) {
					t.Errorf("notes %q, want %q", g.Notes, want)
				}
			}
		})
	}
	// x·xᵀ, both operands computed at run time: on integers where the
	// target sums four 8-bit products exactly, else in float with a note.
	for _, exact := range []bool{false, true} {
		t.Run(map[bool]string{false: "matmul of activations, no exact dots", true: "matmul of activations"}[exact], func(t *testing.T) {
			nodes := []*Node{node("QuantizeLinear qx x,xs,xz -> xq", nil), node("DequantizeLinear dx xq,xs,xz -> xf", nil),
				node("Transpose tr xq -> xtq", map[string]Attr{"perm": ints(1, 0)}), node("DequantizeLinear dt xtq,xs,xz -> xtf", nil),
				node("MatMul mm xf,xtf -> y", nil), q}
			g := build(t, 17, []in{{"x", []int{2, 4}}}, consts, nodes, "yq")
			g.Integer, g.ExactDots = true, exact
			runOnly(t, g, "fuse-qlinear", "dce")
			want := "QuantizeLinear,DequantizeLinear,Transpose,DequantizeLinear,MatMul,QuantizeLinear"
			if exact {
				want = "QuantizeLinear,Transpose,QLinearMatMul"
			}
			if got := ops(g); got != want {
				t.Fatalf("ops %s, want %s (notes %q)", got, want, g.Notes)
			}
			note := "the quantized MatMul at node mm runs in float: the weights are computed at run time (integer sums of two computed operands need a CPU that sums four 8-bit products exactly: VNNI, sdot)"
			if !exact && !slices.Contains(g.Notes, note) {
				t.Errorf("notes %q, want %q", g.Notes, note)
			}
		})
	}
}
