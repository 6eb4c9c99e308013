package frontend

import (
	"fmt"
	"maps"
	"slices"

	"github.com/tessera-ml/tessera/graph"
)

// Float16 models compute in float32. Kernels hold every floating-point
// value as a float32 (no CPU target has half-precision arithmetic), so
// computeFloat16InFloat32 rewrites a graph's float16 into float32 before
// shape inference: its float16 constants (initializers, Constant and
// ConstantOfShape values) become float32 tensors of the same values, a
// float16 input is read through a Cast to float32, an op told to make
// float16 (a "dtype" attribute) makes float32, a float16 output is the
// float32 result rounded to float16 by a Cast, and a Cast to float16
// inside the graph keeps its rounding (its float16 value read through a
// Cast back to float32). Afterwards float16 values are only the model's
// inputs and outputs and the results of its Casts to float16, and every op
// but Cast sees float32: the model runs as its float32 twin would, with
// the float16 roundings its Casts ask for, not those of float16
// arithmetic between them (more accurate than float16 arithmetic; results
// may differ from a float16 runtime's by float16's rounding, 2^-11
// relative per op). It reports whether the graph had float16.
func computeFloat16InFloat32(g *graph.Graph) (bool, error) {
	for _, n := range g.Nodes {
		for _, name := range slices.Sorted(maps.Keys(n.Attrs)) {
			if a := n.Attrs[name]; a.Kind == graph.AttrGraph && a.G != nil && hasFloat16(a.G) {
				return false, graph.Unsupportedf("node %s (%s): float16 inside its subgraph %s (float16 is taken in the main graph only; convert the model to float32)", n.Name, n.OpType, name)
			}
		}
	}
	if !hasFloat16(g) {
		return false, nil
	}
	// The types the model declares for its outputs are checked against
	// its own float16 typing first: after the rewrite a Relu of a float16
	// input computes float32, which an output wrongly declared float32
	// would match. Inference on a copy types what the ops' rules can (an
	// op whose rule refuses float16 leaves the rest unchecked here).
	typed := g.Clone()
	_ = InferShapes(typed)
	for _, name := range g.Outputs {
		d, v := g.Declared[name], typed.Values[name]
		if v != nil && d.DType != graph.Undefined && v.DType != graph.Undefined && d.DType != v.DType {
			return false, fmt.Errorf("output %s is declared %s, but the graph computes %s", name, d.DType, v.DType)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(g.Values)) {
		if v := g.Values[name]; v.Const != nil && v.Const.DType == graph.Float16 {
			c := v.Const.Clone()
			c.DType = graph.Float32
			v.Const, v.DType = c, graph.Float32
		}
	}
	var nodes []*graph.Node
	cast := func(in, out string, to int64) *graph.Node {
		g.Value(out)
		return &graph.Node{Name: out, OpType: "Cast", Inputs: []string{in}, Outputs: []string{out}, Attrs: map[string]graph.Attr{"to": {Kind: graph.AttrInt, I: to}}}
	}
	// readAs makes every node read value name as value as instead.
	readAs := func(name, as string) {
		for _, n := range g.Nodes {
			for i, in := range n.Inputs {
				if in == name {
					n.Inputs[i] = as
				}
			}
		}
	}
	for _, name := range g.Inputs {
		if g.Values[name].DType != graph.Float16 {
			continue
		}
		f := freshName(g, name+"_float32")
		readAs(name, f)
		nodes = append(nodes, cast(name, f, float32Type))
	}
	// A float16 output (so declared, or typed so by the ops' rules)
	// computed by another op than a Cast to float16: the op's result takes
	// a new name, and a Cast right after it rounds it
	// into the output, which keeps the model's name (and its readers).
	producers := g.Producers()
	rounded := map[string]bool{}
	roundInto := map[string]string{} // an op's renamed result → the output it rounds into
	for _, name := range g.Outputs {
		v := g.Values[name]
		half := v != nil && (v.DType == graph.Float16 || g.Declared[name].DType == graph.Float16 ||
			typed.Values[name] != nil && typed.Values[name].DType == graph.Float16)
		if !half || rounded[name] || g.IsInput(name) {
			continue
		}
		rounded[name] = true
		p := producers[name]
		if p != nil && isCastTo(p, float16Type) {
			continue
		}
		f := freshName(g, name+"_float32")
		v.Name = f
		g.Values[f] = v
		delete(g.Values, name)
		if p == nil { // a constant
			nodes = append(nodes, cast(f, name, float16Type))
			continue
		}
		for k, o := range p.Outputs {
			if o == name {
				p.Outputs[k] = f
			}
		}
		roundInto[f] = name
	}
	for _, n := range g.Nodes {
		for name, a := range n.Attrs {
			switch {
			case a.Kind == graph.AttrTensor && a.T != nil && a.T.DType == graph.Float16:
				t := a.T.Clone()
				t.DType = graph.Float32
				n.Attrs[name] = graph.Attr{Kind: graph.AttrTensor, T: t}
			case name == "dtype" && a.Kind == graph.AttrInt && a.I == float16Type:
				n.Attrs[name] = graph.Attr{Kind: graph.AttrInt, I: float32Type}
			}
		}
		nodes = append(nodes, n)
		for _, out := range n.Outputs {
			if name, ok := roundInto[out]; ok {
				nodes = append(nodes, cast(out, name, float16Type))
			}
		}
	}
	// An op that reads a Cast to float16 (the model's or one above) reads
	// it through a Cast back to float32: only the model's outputs read
	// float16.
	var all []*graph.Node
	for _, n := range nodes {
		all = append(all, n)
		if !isCastTo(n, float16Type) {
			continue
		}
		out := n.Outputs[0]
		readers := false
		for _, m := range nodes {
			readers = readers || slices.Contains(m.Inputs, out)
		}
		if !readers {
			continue
		}
		f := freshName(g, out+"_float32")
		for _, m := range nodes {
			for i, in := range m.Inputs {
				if in == out {
					m.Inputs[i] = f
				}
			}
		}
		all = append(all, cast(out, f, float32Type))
	}
	g.Nodes = all
	return true, nil
}

// The ONNX data type numbers the rewrite reads and writes.
var (
	float32Type = int64(graph.Float32.ONNX())
	float16Type = int64(graph.Float16.ONNX())
)

// isCastTo reports whether n is a Cast to the ONNX data type to.
func isCastTo(n *graph.Node, to int64) bool {
	t, err := n.Int("to", 0)
	return n.OpType == "Cast" && n.Domain == "" && err == nil && t == to
}

// hasFloat16 reports whether g has a float16 value, constant, tensor
// attribute or Cast to float16.
func hasFloat16(g *graph.Graph) bool {
	for _, v := range g.Values {
		if v.DType == graph.Float16 || v.Const != nil && v.Const.DType == graph.Float16 {
			return true
		}
	}
	for _, d := range g.Declared {
		if d.DType == graph.Float16 {
			return true
		}
	}
	for _, n := range g.Nodes {
		for name, a := range n.Attrs {
			if a.Kind == graph.AttrTensor && a.T != nil && a.T.DType == graph.Float16 ||
				a.Kind == graph.AttrInt && a.I == float16Type && (name == "dtype" || name == "to" && n.OpType == "Cast") {
				return true
			}
		}
	}
	return false
}

// freshName returns name, or name with a number added, that names no
// value of g.
func freshName(g *graph.Graph, name string) string {
	for i, s := 1, name; ; i++ {
		if g.Values[s] == nil {
			return s
		}
		s = fmt.Sprintf("%s_%d", name, i)
	}
}
