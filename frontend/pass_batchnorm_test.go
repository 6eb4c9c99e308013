package frontend_test

import (
	. "github.com/tessera-ml/tessera/graph"
	"math"
	"testing"
)

func TestFoldBatchNorm(t *testing.T) {
	// Two channels: s = scale/sqrt(var+eps), shift = bias - mean*s.
	scale, bias, mean, variance := []float64{2, 0.5}, []float64{1, -1}, []float64{0.5, 2}, []float64{3, 0.25}
	eps := 1e-3
	s := make([]float64, 2)
	shift := make([]float64, 2)
	for c := range s {
		s[c] = scale[c] / math.Sqrt(variance[c]+eps)
		shift[c] = bias[c] - mean[c]*s[c]
	}
	bnConsts := func(m map[string]*Tensor) map[string]*Tensor {
		m["scale"], m["bias"], m["mean"], m["var"] = f32(2, 0.5), f32(1, -1), f32(0.5, 2), f32(3, 0.25)
		return m
	}
	bn := node("BatchNormalization bn h,scale,bias,mean,var -> y", map[string]Attr{"epsilon": floatA(float32(eps))})
	tests := []struct {
		name   string
		inputs []in
		consts map[string]*Tensor
		nodes  []*Node
		ops    string
		weight string // input index 1 of the remaining node
		wantW  []float64
		wantB  []float64 // input index 2
	}{
		{
			name:   "conv with bias",
			inputs: []in{{"x", []int{1, 1, 3, 3}}},
			consts: bnConsts(map[string]*Tensor{"w": Float32Tensor([]int{2, 1, 1, 1}, []float32{3, 4}), "b": f32(1, 2)}),
			nodes:  []*Node{node("Conv c x,w,b -> h", nil), bn},
			ops:    "Conv",
			wantW:  []float64{3 * s[0], 4 * s[1]},
			wantB:  []float64{1*s[0] + shift[0], 2*s[1] + shift[1]},
		},
		{
			name:   "conv without bias",
			inputs: []in{{"x", []int{1, 1, 3, 3}}},
			consts: bnConsts(map[string]*Tensor{"w": Float32Tensor([]int{2, 1, 1, 1}, []float32{3, 4})}),
			nodes:  []*Node{node("Conv c x,w -> h", nil), bn},
			ops:    "Conv",
			wantW:  []float64{3 * s[0], 4 * s[1]},
			wantB:  shift,
		},
		{
			name:   "gemm transB with beta",
			inputs: []in{{"x", []int{4, 1}}},
			consts: bnConsts(map[string]*Tensor{"w": Float32Tensor([]int{2, 1}, []float32{3, 4}), "c": f32(1, 2)}),
			nodes:  []*Node{node("Gemm g x,w,c -> h", map[string]Attr{"transB": intA(1), "beta": floatA(2)}), bn},
			ops:    "Gemm",
			wantW:  []float64{3 * s[0], 4 * s[1]},
			wantB:  []float64{2*1*s[0] + shift[0], 2*2*s[1] + shift[1]},
		},
		{
			name:   "conv output read twice stays",
			inputs: []in{{"x", []int{1, 1, 3, 3}}},
			consts: bnConsts(map[string]*Tensor{"w": Float32Tensor([]int{2, 1, 1, 1}, []float32{3, 4})}),
			nodes:  []*Node{node("Conv c x,w -> h", nil), bn, node("Add a y,h -> z", nil)},
			ops:    "Conv,BatchNormalization,Add",
		},
		{
			name:   "weights computed at run time stay",
			inputs: []in{{"x", []int{1, 1, 3, 3}}, {"w", []int{2, 1, 1, 1}}},
			consts: bnConsts(map[string]*Tensor{}),
			nodes:  []*Node{node("Conv c x,w -> h", nil), bn},
			ops:    "Conv,BatchNormalization",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := "y"
			if tc.nodes[len(tc.nodes)-1].OpType == "Add" {
				out = "z"
			}
			g := build(t, 0, tc.inputs, tc.consts, tc.nodes, out)
			runOnly(t, g, "fold-batchnorm", "dce")
			if got := ops(g); got != tc.ops {
				t.Fatalf("ops %s, want %s", got, tc.ops)
			}
			if tc.wantW == nil {
				return
			}
			n := g.Nodes[0]
			if n.Outputs[0] != "y" {
				t.Errorf("%s writes %s, want y", n.OpType, n.Outputs[0])
			}
			check := func(what string, got *Tensor, want []float64) {
				if got == nil || got.Len() != len(want) {
					t.Fatalf("%s = %v, want %v", what, got, want)
				}
				for i, w := range want {
					if got.F32[i] != float32(w) {
						t.Errorf("%s[%d] = %v, want %v", what, i, got.F32[i], float32(w))
					}
				}
			}
			check("weight", g.Values[n.Inputs[1]].Const, tc.wantW)
			check("bias", g.Values[n.Inputs[2]].Const, tc.wantB)
		})
	}
}
