package frontend_test

import (
	"math"
	"testing"

	"github.com/tessera-ml/tessera/frontend"
	. "github.com/tessera-ml/tessera/graph"
	tops "github.com/tessera-ml/tessera/ops"
)

// TestTabulateQuantized: an elementwise function of one 8-bit tensor
// that a QuantizeLinear quantizes again (a QDQ model's SiLU and
// hard-swish, a requantization) becomes a TableLookup of that tensor, or
// an Identity where the table is; the graph computes, for every value of
// the tensor's type, what it computed before, and what float64 arithmetic
// gives within one step. A function of two tensors, a chain whose
// intermediate value is read elsewhere, and per-channel parameters stay.
func TestTabulateQuantized(t *testing.T) {
	scalar := func(dt DType, v int64) *Tensor { return &Tensor{DType: dt, Shape: []int{}, I64: []int64{v}} }
	f := func(v float32) *Tensor { return Float32Tensor([]int{}, []float32{v}) }
	consts := map[string]*Tensor{
		"one": f(1), "u0": scalar(Uint8, 0), "i0": scalar(Int8, 0),
		"xs": f(0.05), "xz": scalar(Uint8, 128), "ixz": scalar(Int8, -3),
		"ss": f(1.0 / 256), "sz": scalar(Uint8, 0),
		"ys": f(0.03), "yz": scalar(Uint8, 10), "iys": f(0.04), "iyz": scalar(Int8, 5),
		"cs": f32(0.05, 0.1), "cz": &Tensor{DType: Uint8, Shape: []int{2}, I64: []int64{128, 128}},
	}
	silu := []*Node{
		node("QuantizeLinear qx x,one,u0 -> xq", nil),
		node("DequantizeLinear dx xq,xs,xz -> xf", nil),
		node("Sigmoid sig xf -> s", nil),
		node("QuantizeLinear qs s,ss,sz -> sq", nil),
		node("DequantizeLinear ds sq,ss,sz -> sf", nil),
		node("Mul m xf,sf -> y", nil),
		node("QuantizeLinear qy y,ys,yz -> yq", nil),
	}
	hardSwish := []*Node{
		node("QuantizeLinear qx x,one,i0 -> xq", nil),
		node("DequantizeLinear dx xq,xs,ixz -> xf", nil),
		node("HardSwish hs xf -> y", nil),
		node("QuantizeLinear qy y,iys,iyz -> yq", nil),
	}
	requant := []*Node{
		node("QuantizeLinear qx x,one,u0 -> xq", nil),
		node("DequantizeLinear dx xq,xs,xz -> y", nil),
		node("QuantizeLinear qy y,ys,yz -> yq", nil),
	}
	roundTrip := []*Node{
		node("QuantizeLinear qx x,one,u0 -> xq", nil),
		node("DequantizeLinear dx xq,xs,xz -> y", nil),
		node("QuantizeLinear qy y,xs,xz -> yq", nil),
	}
	sigmoid := func(v float64) float64 { return 1 / (1 + math.Exp(-v)) }
	quant := func(v, s float64, z, lo, hi int64) float64 {
		return float64(min(max(int64(math.RoundToEven(v/s))+z, lo), hi))
	}
	tests := []struct {
		name  string
		nodes []*Node
		outs  []string
		lo    int64  // the 8-bit input's smallest value
		want  string // ops after the pass
		ref   func(q int64) float64
	}{
		{"silu", silu, []string{"yq"}, 0, "QuantizeLinear,TableLookup", func(q int64) float64 {
			x := float64(q-128) * 0.05
			s := quant(sigmoid(x), 1.0/256, 0, 0, 255) / 256
			return quant(x*s, 0.03, 10, 0, 255)
		}},
		{"hard-swish int8", hardSwish, []string{"yq"}, -128, "QuantizeLinear,TableLookup", func(q int64) float64 {
			x := float64(q+3) * 0.05
			return quant(x*min(max(x/6+0.5, 0), 1), 0.04, 5, -128, 127)
		}},
		{"requantization", requant, []string{"yq"}, 0, "QuantizeLinear,TableLookup", func(q int64) float64 {
			return quant(float64(q-128)*0.05, 0.03, 10, 0, 255)
		}},
		{"round trip", roundTrip, []string{"yq"}, 0, "QuantizeLinear,Identity", func(q int64) float64 { return float64(q) }},
		{"two tensors", []*Node{
			node("QuantizeLinear qx x,one,u0 -> xq", nil), node("QuantizeLinear qx2 x,ys,u0 -> xq2", nil),
			node("DequantizeLinear dx xq,xs,xz -> a", nil), node("DequantizeLinear dx2 xq2,xs,xz -> b", nil),
			node("Mul m a,b -> y", nil), node("QuantizeLinear qy y,ys,yz -> yq", nil),
		}, []string{"yq"}, 0, "QuantizeLinear,QuantizeLinear,DequantizeLinear,DequantizeLinear,Mul,QuantizeLinear", nil},
		{"read elsewhere", silu, []string{"yq", "s"}, 0, "QuantizeLinear,DequantizeLinear,Sigmoid,QuantizeLinear,DequantizeLinear,Mul,QuantizeLinear", nil},
		{"per channel", []*Node{
			node("QuantizeLinear qx x,one,u0 -> xq", nil),
			node("DequantizeLinear dx xq,cs,cz -> xf", map[string]Attr{"axis": intA(0)}),
			node("Sigmoid sig xf -> y", nil), node("QuantizeLinear qy y,ys,yz -> yq", nil),
		}, []string{"yq"}, 0, "QuantizeLinear,DequantizeLinear,Sigmoid,QuantizeLinear", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// x holds every value of the 8-bit type once (scale 1).
			x := make([]float32, 256)
			for i := range x {
				x[i] = float32(tc.lo + int64(i))
			}
			g := build(t, 17, []in{{"x", []int{2, 128}}}, consts, tc.nodes, tc.outs...)
			before := g.Clone()
			if err := frontend.InferShapes(before); err != nil {
				t.Fatal(err)
			}
			runOnly(t, g, "lookup-tables", "dce")
			if got := ops(g); got != tc.want {
				t.Fatalf("ops %s, want %s", got, tc.want)
			}
			if tc.ref == nil {
				return
			}
			want, got := evalBoth(t, before, g, x)
			off := 0
			for i := range x {
				q := tc.lo + int64(i)
				if got[0][i] != want[0][i] {
					t.Fatalf("value %d: %v, before the pass %v", q, got[0][i], want[0][i])
				}
				if d := math.Abs(float64(got[0][i]) - tc.ref(q)); d > 1 {
					t.Fatalf("value %d: %v, float64 arithmetic gives %v", q, got[0][i], tc.ref(q))
				} else if d != 0 {
					off++
				}
			}
			if off > 4 {
				t.Errorf("%d of 256 values a step from float64 arithmetic's", off)
			}
		})
	}
	// On integer kernels for a target that gathers the bytes of a lookup,
	// a hard-swish stays float arithmetic; a SiLU (an exponential) and a
	// requantization are tabulated there too.
	for _, tc := range []struct {
		name  string
		nodes []*Node
		want  string
	}{
		{"hard-swish, bytes gathered", hardSwish, "QuantizeLinear,DequantizeLinear,HardSwish,QuantizeLinear"},
		{"silu, bytes gathered", silu, "QuantizeLinear,TableLookup"},
		{"requantization, bytes gathered", requant, "QuantizeLinear,TableLookup"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := build(t, 17, []in{{"x", []int{2, 128}}}, consts, tc.nodes, "yq")
			g.Integer, g.ScalarTables = true, true
			runOnly(t, g, "lookup-tables", "dce")
			if got := ops(g); got != tc.want {
				t.Fatalf("ops %s, want %s", got, tc.want)
			}
		})
	}
}

// TestConcatOfQuantized: on integer kernels, a QuantizeLinear of a Concat
// of dequantized 8-bit tensors becomes a Concat of the inputs requantized
// (each a table, or nothing where its scale and zero point are the
// output's), so the Concat moves bytes; the graph computes, for every
// value, what it computed before.
func TestConcatOfQuantized(t *testing.T) {
	scalar := func(dt DType, v int64) *Tensor { return &Tensor{DType: dt, Shape: []int{}, I64: []int64{v}} }
	f := func(v float32) *Tensor { return Float32Tensor([]int{}, []float32{v}) }
	consts := map[string]*Tensor{
		"one": f(1), "u0": scalar(Uint8, 0), "s1": f(0.05), "z1": scalar(Uint8, 128),
		"s2": f(0.03), "z2": scalar(Uint8, 100),
	}
	for _, c := range []struct {
		name, bs, bz string // b's scale and zero point
		want         string
	}{
		{"other scale", "s2", "z2", "QuantizeLinear,QuantizeLinear,TableLookup,Concat"},
		{"same scale", "s1", "z1", "QuantizeLinear,QuantizeLinear,Concat"},
	} {
		t.Run(c.name, func(t *testing.T) {
			nodes := []*Node{
				node("QuantizeLinear qa x,one,u0 -> a", nil),
				node("QuantizeLinear qb x,one,u0 -> b", nil),
				node("DequantizeLinear da a,s1,z1 -> af", nil),
				node("DequantizeLinear db b,"+c.bs+","+c.bz+" -> bf", nil),
				node("Concat cat af,bf -> cf", map[string]Attr{"axis": intA(1)}),
				node("QuantizeLinear qy cf,s1,z1 -> y", nil),
			}
			g := build(t, 17, []in{{"x", []int{2, 128}}}, consts, nodes, "y")
			g.Integer = true
			before := g.Clone()
			if err := frontend.InferShapes(before); err != nil {
				t.Fatal(err)
			}
			runOnly(t, g, "fuse-qlinear", "lookup-tables", "remove-noops", "dce")
			if got := ops(g); got != c.want {
				t.Fatalf("ops %s, want %s", got, c.want)
			}
			x := make([]float32, 256)
			for i := range x {
				x[i] = float32(i)
			}
			want, got := evalBoth(t, before, g, x)
			for i := range want[0] {
				if got[0][i] != want[0][i] {
					t.Fatalf("element %d: %v, before the passes %v", i, got[0][i], want[0][i])
				}
			}
		})
	}
}

// evalBoth evaluates graphs before and after (shapes inferred) on input x
// with the reference evaluator.
func evalBoth(t *testing.T, before, after *Graph, x []float32) (want, got [][]float32) {
	t.Helper()
	want, err := tops.EvalGraph(before, map[string][]float32{"x": x})
	if err != nil {
		t.Fatal(err)
	}
	if got, err = tops.EvalGraph(after, map[string][]float32{"x": x}); err != nil {
		t.Fatal(err)
	}
	return want, got
}
