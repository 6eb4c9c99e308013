package modelgen

import (
	"fmt"

	"github.com/x448/float16"

	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/tir"
)

// Float16 returns a copy of the float32 model g as a float16 one, the way
// a framework exports a model converted to half precision: every float32
// constant (initializers, Constant values) rounded to float16, every
// float32 value (inputs, outputs, the intermediate values the file
// declares) float16, every Cast to float32 made a Cast to float16. Values
// of other dtypes (integers, bool) keep theirs.
func Float16(g *graph.Graph) (*graph.Graph, error) {
	return toHalf(g, graph.Float16, "_fp16", func(v float32) float32 { return float16.Fromfloat32(v).Float32() })
}

// BFloat16 is Float16 for bfloat16: constants rounded to nearest, ties to
// even (tir.RoundBFloat16).
func BFloat16(g *graph.Graph) (*graph.Graph, error) {
	return toHalf(g, graph.BFloat16, "_bf16", tir.RoundBFloat16)
}

// toHalf is Float16 and BFloat16: dtype dt, name suffix, rounding round.
func toHalf(g *graph.Graph, dt graph.DType, suffix string, round func(float32) float32) (*graph.Graph, error) {
	h := g.Clone()
	h.Name = g.Name + suffix
	half := func(t *graph.Tensor) *graph.Tensor {
		if t == nil || t.DType != graph.Float32 {
			return t
		}
		c := t.Clone()
		c.DType = dt
		for i, v := range c.F32 {
			c.F32[i] = round(v)
		}
		return c
	}
	for _, v := range h.Values {
		if v.Const != nil {
			v.Const = half(v.Const)
			v.DType = v.Const.DType
		}
	}
	for _, v := range h.Values {
		if v.DType == graph.Float32 {
			v.DType = dt
		}
	}
	for name, d := range h.Declared {
		if d.DType == graph.Float32 {
			d.DType = dt
			h.Declared[name] = d
		}
	}
	for _, n := range h.Nodes {
		for name, a := range n.Attrs {
			switch {
			case a.Kind == graph.AttrTensor:
				n.Attrs[name] = graph.Attr{Kind: graph.AttrTensor, T: half(a.T)}
			case a.Kind == graph.AttrGraph:
				return nil, fmt.Errorf("modelgen: %s: node %s (%s) has a subgraph: %s converts flat graphs only", g.Name, n.Name, n.OpType, dt)
			case n.OpType == "Cast" && name == "to" && a.I == int64(graph.Float32.ONNX()):
				n.Attrs[name] = graph.Attr{Kind: graph.AttrInt, I: int64(dt.ONNX())}
			}
		}
	}
	return h, nil
}
