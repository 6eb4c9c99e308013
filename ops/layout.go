package ops

import "github.com/tessera-ml/tessera/graph"

// Layout says what the layout pass (convert-layout, package frontend) may
// do with an op: how the op's meaning depends on the order of its inputs'
// axes.
type Layout uint8

const (
	// LayoutFixed: the op reads its inputs in the layout the model gives
	// them (the default).
	LayoutFixed Layout = iota
	// LayoutFree: each output element is computed from the same element
	// of every input, with numpy broadcasting (Relu, Add, Where): the op
	// runs in any layout, its constant operands permuted alike.
	LayoutFree
	// LayoutChannelsLast: a 2-D sliding-window op with a channels-last
	// form, chosen by its data_layout attribute (Conv, the pools).
	LayoutChannelsLast
	// LayoutAxes: the op works along axes that its attributes or constant
	// inputs name and is otherwise layout-free (Concat, Split, Slice,
	// Pad): its Op.PermuteAxes renames them for permuted inputs.
	LayoutAxes
	// LayoutTranspose: the op permutes its input's axes by its perm
	// attribute (Transpose): on a permuted input it permutes by the
	// composition.
	LayoutTranspose
)

// LayoutOf returns the layout rule of node n's op (LayoutFixed for an op
// of another domain or one that is not defined).
func LayoutOf(n *graph.Node) Layout {
	if op := LookupNode(n); op != nil {
		return op.Layout
	}
	return LayoutFixed
}

// The PermuteAxes rules of the ops that work along named axes
// (LayoutAxes): each renames the axes of a node for inputs permuted
// by perm, axis i of a permuted input being axis perm[i] of the original.

// permutedAxis returns the axis of a permuted input of rank len(perm) that
// is axis a (negative from the end) of the original, or false when a is
// out of range.
func permutedAxis(perm []int, a int64) (int64, bool) {
	r := int64(len(perm))
	if a < -r || a >= r {
		return 0, false
	}
	if a < 0 {
		a += r
	}
	for i, p := range perm {
		if int64(p) == a {
			return int64(i), true
		}
	}
	return 0, false
}

// permutedAxes maps each axis of axes by permutedAxis.
func permutedAxes(perm []int, axes []int64) ([]int64, bool) {
	out := make([]int64, len(axes))
	for i, a := range axes {
		p, ok := permutedAxis(perm, a)
		if !ok {
			return nil, false
		}
		out[i] = p
	}
	return out, true
}

// setIntsInput makes input i of n a new int64 constant holding v.
func setIntsInput(g *graph.Graph, n *graph.Node, i int, what string, v []int64) {
	name := g.FreshName(n.Name + "/" + what)
	g.AddConst(name, graph.Int64Tensor([]int{len(v)}, v))
	for len(n.Inputs) <= i {
		n.Inputs = append(n.Inputs, "")
	}
	n.Inputs[i] = name
}

// permuteAxisAttr: Concat and Split work along their axis attribute.
func permuteAxisAttr(g *graph.Graph, n *graph.Node, perm []int) bool {
	a, err := n.Int("axis", 0)
	if err != nil {
		return false
	}
	p, ok := permutedAxis(perm, a)
	if !ok {
		return false
	}
	n.SetAttr("axis", graph.Attr{Kind: graph.AttrInt, I: p})
	return true
}

// permuteSlice: Slice's axes are an attribute before opset 10 and input 3
// from it, 0, 1, … when omitted; starts, ends and steps go with them
// unchanged.
func permuteSlice(g *graph.Graph, n *graph.Node, perm []int) bool {
	starts, ok, err := graph.IntsParam(g, n, 1, "starts", "starts")
	if err != nil || !ok {
		return false
	}
	attrs := n.HasAttr("starts")
	axes, ok, err := graph.IntsParam(g, n, 3, "axes", "axes")
	if err != nil {
		return false
	}
	if !ok {
		axes = make([]int64, len(starts))
		for i := range axes {
			axes[i] = int64(i)
		}
	}
	moved, ok := permutedAxes(perm, axes)
	if !ok {
		return false
	}
	if attrs {
		n.SetAttr("axes", graph.Attr{Kind: graph.AttrInts, Ints: moved})
	} else {
		setIntsInput(g, n, 3, "axes", moved)
	}
	return true
}

// permutePad: Pad's pads list the begins of its axes, then their ends: an
// attribute before opset 11 ("paddings" in opset 1), input 1 from it, for
// every axis or, from opset 18, for the axes of input 3.
func permutePad(g *graph.Graph, n *graph.Node, perm []int) bool {
	if n.Input(3) != "" {
		axes, ok, err := graph.IntsParam(g, n, 3, "", "axes")
		if err != nil || !ok {
			return false
		}
		moved, ok := permutedAxes(perm, axes)
		if !ok {
			return false
		}
		setIntsInput(g, n, 3, "axes", moved)
		return true
	}
	attr := "pads"
	if n.HasAttr("paddings") {
		attr = "paddings"
	}
	pads, ok, err := graph.IntsParam(g, n, 1, attr, "pads")
	r := len(perm)
	if err != nil || !ok || len(pads) != 2*r {
		return false
	}
	moved := make([]int64, 2*r)
	for i, p := range perm {
		moved[i], moved[r+i] = pads[p], pads[r+p]
	}
	if n.HasAttr(attr) {
		n.SetAttr(attr, graph.Attr{Kind: graph.AttrInts, Ints: moved})
	} else {
		setIntsInput(g, n, 1, "pads", moved)
	}
	return true
}
