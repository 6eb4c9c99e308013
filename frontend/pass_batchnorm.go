package frontend

import (
	"fmt"
	"math"
	"slices"

	"github.com/tessera-ml/tessera/graph"
)

// foldBatchNorm folds an inference-mode BatchNormalization into the Conv or
// Gemm that feeds it, when that node has no other reader and its weights,
// bias and the normalization's parameters are constants. With
// s = scale / sqrt(var + eps) per output channel c:
//
//	W'[c, ...] = W[c, ...] * s[c]
//	B'[c]      = (B[c] - mean[c]) * s[c] + bias[c]
//
// computed in float64 and rounded to float32. For Gemm the channel is the
// column n of the output: B's column n (row n when transB) is scaled, and C
// becomes beta*C scaled and shifted the same way (beta becomes 1).
func foldBatchNorm(g *graph.Graph) (bool, error) {
	producers := g.Producers()
	consumers := g.Consumers()
	changed := false
	for i := 0; i < len(g.Nodes); i++ {
		bn := g.Nodes[i]
		if bn.OpType != "BatchNormalization" || bn.Domain != "" || len(bn.Inputs) != 5 {
			continue
		}
		x := bn.Inputs[0]
		p := producers[x]
		if p == nil || (p.OpType != "Conv" && p.OpType != "Gemm") || p.Domain != "" || len(consumers[x]) != 1 || g.IsOutput(x) {
			continue
		}
		s, shift, ok, err := bnAffine(g, bn)
		if err != nil {
			return false, err
		}
		if !ok {
			continue
		}
		var done bool
		if p.OpType == "Conv" {
			done, err = foldIntoConv(g, p, s, shift)
		} else {
			done, err = foldIntoGemm(g, p, s, shift)
		}
		if err != nil {
			return false, err
		}
		if !done {
			continue
		}
		// p now writes the normalized output.
		y := bn.Outputs[0]
		for k, o := range p.Outputs {
			if o == x {
				p.Outputs[k] = y
			}
		}
		delete(g.Values, x)
		g.Nodes = slices.Delete(g.Nodes, i, i+1)
		i--
		changed = true
		producers, consumers = g.Producers(), g.Consumers()
	}
	return changed, nil
}

// bnAffine returns the per-channel scale s = scale / sqrt(var + eps) and
// shift = bias - mean*s of inference-mode BatchNormalization bn, computed
// in float64; ok is false when a parameter is not a float32 constant of
// one element per channel, or bn is in training mode or writes its
// running statistics.
func bnAffine(g *graph.Graph, bn *graph.Node) (s, shift []float64, ok bool, err error) {
	if bn.OpType != "BatchNormalization" || bn.Domain != "" || len(bn.Inputs) != 5 || bn.Output(1) != "" || bn.Output(2) != "" {
		return nil, nil, false, nil
	}
	if tm, err := bn.Int("training_mode", 0); err != nil || tm != 0 {
		return nil, nil, false, err
	}
	var params [4][]float64
	for k := range params {
		t := g.ConstOf(bn.Inputs[1+k])
		if t == nil || t.DType != graph.Float32 || len(t.Shape) != 1 || (k > 0 && t.Shape[0] != len(params[0])) {
			return nil, nil, false, nil
		}
		params[k] = t.Float64s()
	}
	eps, err := bn.Float("epsilon", 1e-5)
	if err != nil {
		return nil, nil, false, err
	}
	scale, bias, mean, variance := params[0], params[1], params[2], params[3]
	s = make([]float64, len(scale))
	shift = make([]float64, len(scale))
	for c := range s {
		s[c] = scale[c] / math.Sqrt(variance[c]+float64(eps))
		shift[c] = bias[c] - mean[c]*s[c]
	}
	return s, shift, true, nil
}

// decomposeBatchNorm writes an inference-mode BatchNormalization that
// fold-batchnorm could not fold (its input is not a Conv's or a Gemm's
// own: a Concat's in DenseNet, a graph input) as Mul by the per-channel
// scale and Add of the shift (bnAffine), constants of shape [C, 1, ...]:
// the same arithmetic, but elementwise ops that fuse like any other and
// that the layout pass carries channels-last.
func decomposeBatchNorm(g *graph.Graph) (bool, error) {
	changed := false
	var out []*graph.Node
	for _, bn := range g.Nodes {
		x := g.Values[bn.Input(0)]
		s, shift, ok, err := bnAffine(g, bn)
		if err != nil {
			return false, err
		}
		if !ok || x == nil || len(x.Shape) < 2 || x.DType != graph.Float32 || x.Shape[1] != len(s) {
			out = append(out, bn)
			continue
		}
		shape := make([]int, len(x.Shape)-1)
		for i := range shape {
			shape[i] = 1
		}
		shape[0] = len(s)
		f32 := func(v []float64) *graph.Tensor {
			d := make([]float32, len(v))
			for i, x := range v {
				d[i] = float32(x)
			}
			return graph.Float32Tensor(slices.Clone(shape), d)
		}
		scaled := g.FreshName(bn.Outputs[0] + "_scaled")
		g.Value(scaled).DType = graph.Float32
		out = append(out,
			&graph.Node{Name: bn.Name + "/scale", OpType: "Mul", Inputs: []string{bn.Inputs[0], newConst(g, bn.Name+"_scale", f32(s))}, Outputs: []string{scaled}},
			&graph.Node{Name: bn.Name + "/shift", OpType: "Add", Inputs: []string{scaled, newConst(g, bn.Name+"_shift", f32(shift))}, Outputs: []string{bn.Outputs[0]}})
		changed = true
	}
	g.Nodes = out
	return changed, nil
}

// newConst adds a constant named after base, unique in g.
func newConst(g *graph.Graph, base string, t *graph.Tensor) string {
	name := base
	for k := 1; g.Values[name] != nil; k++ {
		name = fmt.Sprintf("%s_%d", base, k)
	}
	g.AddConst(name, t)
	return name
}

func foldIntoConv(g *graph.Graph, conv *graph.Node, s, shift []float64) (bool, error) {
	w := g.ConstOf(conv.Input(1))
	if w == nil || w.DType != graph.Float32 || len(w.Shape) < 1 || w.Shape[0] != len(s) || len(s) == 0 {
		return false, nil
	}
	var b []float64
	if conv.Input(2) != "" {
		bt := g.ConstOf(conv.Input(2))
		if bt == nil || bt.DType != graph.Float32 || bt.Len() != len(s) {
			return false, nil
		}
		b = bt.Float64s()
	}
	per := w.Len() / len(s)
	nw := &graph.Tensor{DType: graph.Float32, Shape: slices.Clone(w.Shape), F32: make([]float32, w.Len())}
	for i, v := range w.F32 {
		nw.F32[i] = float32(float64(v) * s[i/per])
	}
	nb := graph.Float32Tensor([]int{len(s)}, make([]float32, len(s)))
	for c := range s {
		bc := 0.0
		if b != nil {
			bc = b[c]
		}
		nb.F32[c] = float32(bc*s[c] + shift[c])
	}
	conv.Inputs = append(conv.Inputs[:min(len(conv.Inputs), 2)], "")
	conv.Inputs[1] = newConst(g, conv.Name+"_W_bnfolded", nw)
	conv.Inputs[2] = newConst(g, conv.Name+"_B_bnfolded", nb)
	return true, nil
}

func foldIntoGemm(g *graph.Graph, gemm *graph.Node, s, shift []float64) (bool, error) {
	w := g.ConstOf(gemm.Input(1))
	if w == nil || w.DType != graph.Float32 || len(w.Shape) != 2 {
		return false, nil
	}
	tb, err := gemm.Int("transB", 0)
	if err != nil {
		return false, err
	}
	beta, err := gemm.Float("beta", 1)
	if err != nil {
		return false, err
	}
	n := len(s)
	if (tb == 0 && w.Shape[1] != n) || (tb != 0 && w.Shape[0] != n) {
		return false, nil
	}
	out := g.Values[gemm.Outputs[0]]
	if out == nil || len(out.Shape) != 2 || out.Shape[1] != n {
		return false, nil
	}
	nw := &graph.Tensor{DType: graph.Float32, Shape: slices.Clone(w.Shape), F32: make([]float32, w.Len())}
	for i, v := range w.F32 {
		c := i % w.Shape[1] // column
		if tb != 0 {
			c = i / w.Shape[1] // row
		}
		nw.F32[i] = float32(float64(v) * s[c])
	}
	// C' = beta*C*s + shift, broadcast to [n] or kept at [M, n].
	cshape := []int{n}
	var cval func(m, c int) float64
	if name := gemm.Input(2); name != "" {
		ct := g.ConstOf(name)
		if ct == nil || ct.DType != graph.Float32 {
			return false, nil
		}
		cv := ct.Float64s()
		cs := ct.Shape
		if len(cs) == 2 && cs[0] != 1 {
			cshape = []int{out.Shape[0], n}
		}
		if len(cs) > 2 {
			return false, nil
		}
		cval = func(m, c int) float64 { return cv[graph.BroadcastSrc(cs, []int{m, c}[2-len(cs):])] * float64(beta) }
	}
	nc := graph.Float32Tensor(cshape, make([]float32, graph.NumElems(cshape)))
	rows := 1
	if len(cshape) == 2 {
		rows = cshape[0]
	}
	for m := range rows {
		for c := range n {
			v := 0.0
			if cval != nil {
				v = cval(m, c)
			}
			nc.F32[m*n+c] = float32(v*s[c] + shift[c])
		}
	}
	bName := newConst(g, gemm.Name+"_B_bnfolded", nw)
	cName := newConst(g, gemm.Name+"_C_bnfolded", nc)
	gemm.Inputs = []string{gemm.Inputs[0], bName, cName}
	gemm.Attrs["beta"] = graph.Attr{Kind: graph.AttrFloat, F: 1}
	return true, nil
}
