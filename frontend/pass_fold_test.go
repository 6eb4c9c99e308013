package frontend_test

import (
	. "github.com/tessera-ml/tessera/graph"
	"slices"
	"testing"
)

func TestFoldConstants(t *testing.T) {
	tests := []struct {
		name   string
		opset  int
		inputs []in
		consts map[string]*Tensor
		nodes  []*Node
		out    string
		ops    string  // op types left
		folded string  // a value that must now be a constant
		want   *Tensor // its contents
	}{
		{
			name: "shape subgraph", opset: 13,
			inputs: []in{{"x", []int{2, 3, 4}}},
			consts: map[string]*Tensor{"i0": Int64Tensor([]int{}, []int64{0}), "ax": i64(0), "m1": i64(-1)},
			nodes: []*Node{
				node("Shape s x -> shp", nil),
				node("Gather g shp,i0 -> n", nil),
				node("Unsqueeze u n,ax -> n1", nil),
				node("Concat c n1,m1 -> target", map[string]Attr{"axis": intA(0)}),
				node("Reshape r x,target -> y", nil),
			},
			out: "y", ops: "Reshape", folded: "target", want: i64(2, -1),
		},
		{
			name: "constant node", opset: 13,
			inputs: []in{{"x", []int{3}}},
			nodes: []*Node{
				node("Constant k _ -> c", map[string]Attr{"value": {Kind: AttrTensor, T: f32(1, 2, 3)}}),
				node("Add a x,c -> y", nil),
			},
			out: "y", ops: "Add", folded: "c", want: f32(1, 2, 3),
		},
		{
			name:   "float arithmetic on constants",
			inputs: []in{{"x", []int{2}}},
			consts: map[string]*Tensor{"a": f32(1, 4), "b": Float32Tensor([]int{}, []float32{2})},
			nodes: []*Node{
				node("Mul m a,b -> ab", nil),
				node("Sqrt s ab -> r", nil),
				node("Add a x,r -> y", nil),
			},
			out: "y", ops: "Add", folded: "r", want: f32(1.4142135, 2.828427),
		},
		{
			name: "cast, slice, constant of shape", opset: 13,
			inputs: []in{{"x", []int{5, 6}}},
			consts: map[string]*Tensor{"s0": i64(1), "e0": i64(2)},
			nodes: []*Node{
				node("Shape s x -> shp", nil),
				node("Slice sl shp,s0,e0 -> last", nil),
				node("ConstantOfShape k last -> ones", map[string]Attr{"value": {Kind: AttrTensor, T: f32(1)}}),
				node("Cast c ones -> ones_i", map[string]Attr{"to": intA(7)}),
				node("Cast c2 ones_i -> onesf", map[string]Attr{"to": intA(1)}),
				node("Add a x,onesf -> y", nil),
			},
			out: "y", ops: "Add", folded: "onesf", want: f32(1, 1, 1, 1, 1, 1),
		},
		{
			name:   "transpose of a weight",
			inputs: []in{{"x", []int{1, 2}}},
			consts: map[string]*Tensor{"w": Float32Tensor([]int{3, 2}, []float32{1, 2, 3, 4, 5, 6})},
			nodes: []*Node{
				node("Transpose t w -> wt", map[string]Attr{"perm": ints(1, 0)}),
				node("MatMul m x,wt -> y", nil),
			},
			out: "y", ops: "MatMul", folded: "wt", want: Float32Tensor([]int{2, 3}, []float32{1, 3, 5, 2, 4, 6}),
		},
		{
			name:   "run-time values stay",
			inputs: []in{{"x", []int{2}}},
			consts: map[string]*Tensor{"a": f32(1, 4)},
			nodes:  []*Node{node("Add a x,a -> y", nil)},
			out:    "y", ops: "Add",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := build(t, tc.opset, tc.inputs, tc.consts, tc.nodes, tc.out)
			runOnly(t, g, "fold-constants", "dce")
			if got := ops(g); got != tc.ops {
				t.Errorf("ops %s, want %s", got, tc.ops)
			}
			if tc.folded == "" {
				return
			}
			c := g.Values[tc.folded].Const
			if c == nil {
				t.Fatalf("%s is not a constant", tc.folded)
			}
			if c.DType != tc.want.DType || !slices.Equal(c.Shape, tc.want.Shape) || !slices.Equal(c.I64, tc.want.I64) || !slices.Equal(c.F32, tc.want.F32) {
				t.Errorf("%s = %v, want %v", tc.folded, c, tc.want)
			}
		})
	}
}

func TestFoldConstantsSizeCap(t *testing.T) {
	// A ConstantOfShape larger than MaxFoldElems is left to run time
	// rather than allocated.
	g := build(t, 13, []in{{"x", []int{1}}}, map[string]*Tensor{"s": i64(1 << 30)}, []*Node{
		node("ConstantOfShape k s -> big", nil),
		node("Add a x,big -> y", nil),
	}, "y")
	runOnly(t, g, "fold-constants")
	if ops(g) != "ConstantOfShape,Add" {
		t.Errorf("ops %s", ops(g))
	}
}
