package frontend

import (
	"fmt"
	"maps"
	"slices"

	"github.com/tessera-ml/tessera/graph"
)

// Float16 and bfloat16 models compute in float32. Kernels hold every
// floating-point value as a float32 (no CPU target has half-precision
// arithmetic), so computeHalfInFloat32 rewrites a graph's values of one
// half-precision type (half: float16 or bfloat16) into float32 before
// shape inference: its constants of that type (initializers, Constant and
// ConstantOfShape values) become float32 tensors of the same values, an
// input of that type is read through a Cast to float32, an op told to
// make it (a "dtype" attribute) makes float32, an output of that type is
// the float32 result rounded by a Cast, and a Cast to the type inside the
// graph keeps its rounding (its value read through a Cast back to
// float32). Afterwards values of the type are only the model's inputs and
// outputs and the results of its Casts to it, and every op but Cast sees
// float32: the model runs as its float32 twin would, with the roundings
// its Casts ask for, not those of half-precision arithmetic between them
// (more accurate; results may differ from a half-precision runtime's by
// one rounding per op: 2^-11 relative for float16, 2^-8 for bfloat16). It
// reports whether the graph had values of the type.
func computeHalfInFloat32(g *graph.Graph, half graph.DType) (bool, error) {
	halfType := int64(half.ONNX())
	for _, n := range g.Nodes {
		for _, name := range slices.Sorted(maps.Keys(n.Attrs)) {
			if a := n.Attrs[name]; a.Kind == graph.AttrGraph && a.G != nil && hasHalf(a.G, half) {
				return false, graph.Unsupportedf("node %s (%s): %s inside its subgraph %s (%s is taken in the main graph only; convert the model to float32)", n.Name, n.OpType, half, name, half)
			}
		}
	}
	if !hasHalf(g, half) {
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
		if v := g.Values[name]; v.Const != nil && v.Const.DType == half {
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
		if g.Values[name].DType != half {
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
		half := v != nil && (v.DType == half || g.Declared[name].DType == half ||
			typed.Values[name] != nil && typed.Values[name].DType == half)
		if !half || rounded[name] || g.IsInput(name) {
			continue
		}
		rounded[name] = true
		p := producers[name]
		if p != nil && isCastTo(p, halfType) {
			continue
		}
		f := freshName(g, name+"_float32")
		v.Name = f
		g.Values[f] = v
		delete(g.Values, name)
		if p == nil { // a constant
			nodes = append(nodes, cast(f, name, halfType))
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
			case a.Kind == graph.AttrTensor && a.T != nil && a.T.DType == half:
				t := a.T.Clone()
				t.DType = graph.Float32
				n.Attrs[name] = graph.Attr{Kind: graph.AttrTensor, T: t}
			case name == "dtype" && a.Kind == graph.AttrInt && a.I == halfType:
				n.Attrs[name] = graph.Attr{Kind: graph.AttrInt, I: float32Type}
			}
		}
		nodes = append(nodes, n)
		for _, out := range n.Outputs {
			if name, ok := roundInto[out]; ok {
				nodes = append(nodes, cast(out, name, halfType))
			}
		}
	}
	// An op that reads a Cast to float16 (the model's or one above) reads
	// it through a Cast back to float32: only the model's outputs read
	// float16.
	var all []*graph.Node
	for _, n := range nodes {
		all = append(all, n)
		if !isCastTo(n, halfType) {
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

// float32Type is the ONNX data type number of float32.
var float32Type = int64(graph.Float32.ONNX())

// isCastTo reports whether n is a Cast to the ONNX data type to.
func isCastTo(n *graph.Node, to int64) bool {
	t, err := n.Int("to", 0)
	return n.OpType == "Cast" && n.Domain == "" && err == nil && t == to
}

// hasHalf reports whether g has a value, constant or tensor attribute of
// half-precision type half, or a Cast to it.
func hasHalf(g *graph.Graph, half graph.DType) bool {
	halfType := int64(half.ONNX())
	for _, v := range g.Values {
		if v.DType == half || v.Const != nil && v.Const.DType == half {
			return true
		}
	}
	for _, d := range g.Declared {
		if d.DType == half {
			return true
		}
	}
	for _, n := range g.Nodes {
		for name, a := range n.Attrs {
			if a.Kind == graph.AttrTensor && a.T != nil && a.T.DType == half ||
				a.Kind == graph.AttrInt && a.I == halfType && (name == "dtype" || name == "to" && n.OpType == "Cast") {
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

// bfloat16AtBoundary makes a bfloat16 model's inputs and outputs float32
// values, after computeHalfInFloat32: an input is taken as float32 and
// rounded to bfloat16 (to nearest, ties to even) on entry; an output is
// the bfloat16 result written as float32, exactly. Unlike float16, which
// the runtime takes and returns as such (TESSERA_FLOAT16), bfloat16 has
// no type in numpy's files nor in most callers' languages: the values
// cross the API as the float32s they are.
func bfloat16AtBoundary(g *graph.Graph) {
	bf16 := int64(graph.BFloat16.ONNX())
	cast := func(in, out string, to int64) *graph.Node {
		g.Value(out)
		return &graph.Node{Name: out, OpType: "Cast", Inputs: []string{in}, Outputs: []string{out}, Attrs: map[string]graph.Attr{"to": {Kind: graph.AttrInt, I: to}}}
	}
	float32At := func(name string) {
		g.Values[name].DType = graph.Float32
		if d, ok := g.Declared[name]; ok && d.DType == graph.BFloat16 {
			d.DType = graph.Float32
			g.Declared[name] = d
		}
	}
	var entry []*graph.Node
	for _, name := range g.Inputs {
		if g.Values[name].DType != graph.BFloat16 {
			continue
		}
		r := freshName(g, name+"_bfloat16")
		for _, n := range g.Nodes {
			for i, in := range n.Inputs {
				if in == name {
					n.Inputs[i] = r
				}
			}
		}
		float32At(name)
		entry = append(entry, cast(name, r, bf16))
	}
	producers := g.Producers()
	var nodes []*graph.Node
	exits := map[*graph.Node][]*graph.Node{}
	for _, name := range g.Outputs {
		v, p := g.Values[name], producers[name]
		if v == nil || v.DType != graph.BFloat16 && g.Declared[name].DType != graph.BFloat16 || p == nil {
			continue
		}
		r := freshName(g, name+"_bfloat16")
		for k, o := range p.Outputs {
			if o == name {
				p.Outputs[k] = r
			}
		}
		for _, n := range g.Nodes {
			for i, in := range n.Inputs {
				if in == name {
					n.Inputs[i] = r
				}
			}
		}
		float32At(name)
		exits[p] = append(exits[p], cast(r, name, float32Type))
	}
	nodes = append(nodes, entry...)
	for _, n := range g.Nodes {
		nodes = append(nodes, n)
		nodes = append(nodes, exits[n]...)
	}
	g.Nodes = nodes
}
