package frontend

import (
	"fmt"
	"slices"

	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/ops"
)

// convertLayout makes the 2-D convolutions and pools of the model, and the
// ops between them that do not depend on the layout, run on channels-last
// (NHWC) activations, which vectorize along the channels: contiguous loads
// of the input, a register tile of output channels, weights packed to
// match (package schedule's RewriteLayout). Values keep their NCHW names
// and meaning: a converted op writes a channels-last twin NAME_nhwc, and a
// Transpose back to NAME is inserted only where something still reads the
// NCHW value (an op without a channels-last form, a graph output); a
// Transpose to NHWC only where a chain begins (a graph input, or a value
// an NCHW op computed). A chain of converted ops passes twins from one to
// the next, so no two transposes ever cancel. A Conv that reads an image
// the model takes as input reads it where it is, NCHW, and writes a twin
// (out_layout): the model's input is not transposed before its first
// convolution (readsInputNCHW).
//
// What an op allows is its LayoutOf (package ops declares it): elementwise
// ops run on twins (their constants permuted alike), ops along named axes
// (Concat, Split, Slice, Pad) rename them, a Transpose composes its
// permutation with the twin's, and a reshape that splits or merges the
// channels of a twin ([N, C, H, W] ↔ [N, G, C/G, H, W], as a channel
// shuffle writes it) reshapes the twin. A twin of rank r holds the axes
// N, H, W (the last two of the original) and then the channel axes in
// their order: channelsLast(r). `--no-pass convert-layout` keeps every
// value NCHW.
func convertLayout(g *graph.Graph) (bool, error) {
	twinOf := map[string]string{}     // value → its channels-last twin
	pending := map[string]string{}    // converted values whose own form is not written yet
	constTwins := map[string]string{} // constant and rank → its permuted copy
	var out []*graph.Node
	changed := false
	fresh := func(base, like string) string {
		name := base
		for k := 2; g.Values[name] != nil; k++ {
			name = fmt.Sprintf("%s%d", base, k)
		}
		g.Value(name).DType = g.Values[like].DType
		return name
	}
	// transpose writes in, of shape from, permuted by perm as outName: a
	// Reshape when the permutation keeps the order of the axes longer
	// than 1 (a pooled [1, 1, 1, C] value), the same data; else a
	// Transpose.
	transpose := func(in, outName, name string, from []int, perm []int) {
		if to, ok := sameOrder(from, perm); ok {
			reshape(g, &out, in, outName, name, to)
			return
		}
		out = append(out, &graph.Node{Name: name, OpType: "Transpose", Inputs: []string{in}, Outputs: []string{outName},
			Attrs: map[string]graph.Attr{"perm": {Kind: graph.AttrInts, Ints: ints64(perm)}}})
	}
	toNHWC := func(name string) string {
		if t, ok := twinOf[name]; ok {
			return t
		}
		t := fresh(name+"_nhwc", name)
		transpose(name, t, name+"/to_nhwc", g.Values[name].Shape, channelsLast(4))
		twinOf[name] = t
		return t
	}
	needNCHW := func(name string) {
		if t, ok := pending[name]; ok {
			s := g.Values[name].Shape
			perm := channelsLast(len(s))
			transpose(t, name, name+"/to_nchw", permuted(s, perm), inverse(perm))
			delete(pending, name)
		}
	}
	convertOutputs := func(n *graph.Node) {
		for i, o := range n.Outputs {
			if o == "" {
				continue
			}
			t := fresh(o+"_nhwc", o)
			n.Outputs[i] = t
			twinOf[o], pending[o] = t, t
		}
		changed = true
	}
	for _, n := range g.Nodes {
		switch {
		case nhwcWindowOp(g, n) && readsInputNCHW(g, n, twinOf):
			n.SetAttr(graph.LayoutAttr, graph.Attr{Kind: graph.AttrString, S: "NCHW"})
			n.SetAttr(graph.OutLayoutAttr, graph.Attr{Kind: graph.AttrString, S: "NHWC"})
			convertOutputs(n)
		case nhwcWindowOp(g, n):
			n.Inputs[0] = toNHWC(n.Inputs[0])
			n.SetAttr(graph.LayoutAttr, graph.Attr{Kind: graph.AttrString, S: "NHWC"})
			convertOutputs(n)
		case followsLayout(g, n, twinOf):
			r := len(g.Values[n.Outputs[0]].Shape)
			for i, in := range n.Inputs {
				if t, ok := twinOf[in]; ok {
					n.Inputs[i] = t
				} else if v := g.Values[in]; in != "" && v.Const != nil && graph.NumElems(v.Shape) > 1 {
					key := fmt.Sprintf("%s@%d", in, r)
					if constTwins[key] == "" {
						constTwins[key] = fresh(in+"_nhwc", in)
						g.AddConst(constTwins[key], permuteConst(v.Const, channelsLast(r)))
					}
					n.Inputs[i] = constTwins[key]
				}
			}
			convertOutputs(n)
		case axesFollowLayout(g, n, twinOf):
			for i, in := range n.Inputs {
				if t, ok := twinOf[in]; ok {
					n.Inputs[i] = t
				}
			}
			convertOutputs(n)
		case ops.LayoutOf(n) == ops.LayoutTranspose && twinOf[n.Input(0)] != "":
			// The output is the input permuted by p; the twin is the
			// input permuted by q. A permutation that keeps N, H and W
			// in place permutes the twin's channel axes: the output
			// gets a twin. Any other is one permutation of the twin.
			p, _ := n.Ints("perm")
			x := g.Values[n.Input(0)].Shape
			if len(p) != len(x) { // the default perm, reversed axes
				needNCHW(n.Input(0))
				break
			}
			q := channelsLast(len(x))
			if t, ok := keepsSpatial(p); ok {
				convertOutputs(n)
				transpose(twinOf[n.Input(0)], n.Outputs[0], n.Name, permuted(x, q), t)
				continue
			}
			qinv := inverse(q)
			t := make([]int, len(p))
			for j, a := range p {
				t[j] = qinv[a]
			}
			transpose(twinOf[n.Input(0)], n.Outputs[0], n.Name, permuted(x, q), t)
			changed = true
			continue
		case ops.CopyOf(n) == ops.CopyReshape && twinOf[n.Input(0)] != "" && len(n.Outputs) == 1 &&
			splitsChannels(g.Values[n.Input(0)].Shape, g.Values[n.Outputs[0]].Shape):
			in := twinOf[n.Input(0)]
			shape := g.Values[n.Outputs[0]].Shape
			convertOutputs(n)
			reshape(g, &out, in, n.Outputs[0], n.Name, ints64(permuted(shape, channelsLast(len(shape)))))
			continue
		default:
			for _, in := range n.Inputs {
				needNCHW(in)
			}
		}
		out = append(out, n)
	}
	for _, o := range g.Outputs {
		needNCHW(o)
	}
	g.Nodes = out
	return changed, nil
}

// reshape appends to nodes a Reshape named name of in to shape, written as
// outName.
func reshape(g *graph.Graph, nodes *[]*graph.Node, in, outName, name string, shape []int64) {
	c := g.FreshName(name + "/shape")
	g.AddConst(c, graph.Int64Tensor([]int{len(shape)}, shape))
	*nodes = append(*nodes, &graph.Node{Name: name, OpType: "Reshape", Inputs: []string{in, c}, Outputs: []string{outName}})
}

// channelsLast is the permutation from a value of rank r ≥ 3 (N, the
// channel axes, H, W) to its twin: N, H, W, then the channel axes.
// channelsLast(4) is [0, 2, 3, 1].
func channelsLast(r int) []int {
	perm := []int{0, r - 2, r - 1}
	for a := 1; a < r-2; a++ {
		perm = append(perm, a)
	}
	return perm
}

// keepsSpatial returns, for a Transpose by p of a value of rank len(p) ≥ 4
// that keeps axes 0 and the last two in place, the permutation of the
// twins: the same permutation of the channel axes, after N, H, W.
func keepsSpatial(p []int64) ([]int, bool) {
	r := len(p)
	if r < 4 || p[0] != 0 || p[r-2] != int64(r-2) || p[r-1] != int64(r-1) {
		return nil, false
	}
	t := []int{0, 1, 2}
	for _, a := range p[1 : r-2] {
		if a < 1 || a >= int64(r-2) {
			return nil, false
		}
		t = append(t, int(a)+2)
	}
	return t, true
}

// splitsChannels reports whether a reshape from shape in to shape out, both
// of rank ≥ 4, keeps N and the last two axes and only splits or merges the
// channel axes between them: then its twin is a reshape of the input's
// twin.
func splitsChannels(in, out []int) bool {
	ri, ro := len(in), len(out)
	if ri < 4 || ro < 4 || in[0] != out[0] || in[ri-2] != out[ro-2] || in[ri-1] != out[ro-1] {
		return false
	}
	return graph.NumElems(in[1:ri-2]) == graph.NumElems(out[1:ro-2])
}

// permuted returns shape permuted by perm: axis i of the result is axis
// perm[i] of shape.
func permuted(shape []int, perm []int) []int {
	out := make([]int, len(perm))
	for i, p := range perm {
		out[i] = shape[p]
	}
	return out
}

// inverse returns the inverse of permutation perm.
func inverse(perm []int) []int {
	inv := make([]int, len(perm))
	for i, p := range perm {
		inv[p] = i
	}
	return inv
}

func ints64(v []int) []int64 {
	out := make([]int64, len(v))
	for i, x := range v {
		out[i] = int64(x)
	}
	return out
}

// sameOrder returns the shape of a value of shape from permuted by perm,
// and whether the permutation keeps the order of the axes longer than 1:
// then it moves no data.
func sameOrder(from []int, perm []int) ([]int64, bool) {
	if len(from) != len(perm) {
		return nil, false
	}
	to := make([]int64, len(perm))
	last := -1
	ok := true
	for i, p := range perm {
		to[i] = int64(from[p])
		if from[p] > 1 {
			ok = ok && p > last
			last = p
		}
	}
	return to, ok
}

// nhwcWindowOp reports whether n is a 2-D sliding-window op with a
// channels-last form (LayoutChannelsLast) that has no layout yet.
func nhwcWindowOp(g *graph.Graph, n *graph.Node) bool {
	if ops.LayoutOf(n) != ops.LayoutChannelsLast || n.HasAttr(graph.LayoutAttr) || len(n.Inputs) == 0 || len(n.Outputs) == 0 {
		return false
	}
	x := g.Values[n.Inputs[0]]
	if x == nil || len(x.Shape) != 4 {
		return false
	}
	// Floats; the 8-bit integers of a QLinearConv or of a MaxPool on
	// quantized values (fuseQLinear's integerMove).
	quantized := x.DType == graph.Uint8 || x.DType == graph.Int8
	if x.DType != graph.Float32 && n.OpType != "QLinearConv" && !(quantized && n.OpType == "MaxPool") {
		return false
	}
	// One output: MaxPool's Indices and storage order have no NHWC form.
	so, err := n.Int("storage_order", 0)
	return err == nil && so == 0 && (len(n.Outputs) == 1 || (len(n.Outputs) == 2 && n.Outputs[1] == ""))
}

// maxInputChannelsNCHW is the most channels of a graph input that a Conv
// reads where it is, NCHW (readsInputNCHW): an image's 1, 3 or 4. Its
// reduction reads those few channels of each tap either way, and a twin
// would have too few to fill a vector; a wider input is transposed, so
// that the convolution reads it contiguously and keeps its Winograd
// alternative.
const maxInputChannelsNCHW = 4

// readsInputNCHW reports whether Conv n (a window op with a channels-last
// form) reads a graph input of at most maxInputChannelsNCHW channels that
// has no twin yet: it then reads it as NCHW and writes a twin. So does a
// QLinearConv that reads such an input quantized (QuantizeLinear of the
// input, which then runs where the input is, on contiguous rows, instead
// of in a transpose that stores three bytes per pixel).
func readsInputNCHW(g *graph.Graph, n *graph.Node, twinOf map[string]string) bool {
	x := n.Inputs[0]
	if twinOf[x] != "" || len(g.Values[x].Shape) != 4 || g.Values[x].Shape[1] > maxInputChannelsNCHW {
		return false
	}
	switch n.OpType {
	case "Conv":
		return g.IsInput(x)
	case "QLinearConv":
		for _, p := range g.Nodes {
			if slices.Contains(p.Outputs, x) {
				return p.OpType == "QuantizeLinear" && p.Domain == "" && g.IsInput(p.Inputs[0]) && twinOf[p.Inputs[0]] == ""
			}
		}
	}
	return false
}

// followsLayout reports whether n is a layout-free op whose tensor inputs
// all have twins of its output's rank, or are omitted, of one element, or
// constants that broadcast against its output (a per-channel bias
// [C, 1, 1]: the pass gives them a twin, permuteConst), so that it can run
// on the twins.
func followsLayout(g *graph.Graph, n *graph.Node, twinOf map[string]string) bool {
	if ops.LayoutOf(n) != ops.LayoutFree || len(n.Outputs) != 1 {
		return false
	}
	o := g.Values[n.Outputs[0]]
	if o == nil || len(o.Shape) < 3 {
		return false
	}
	r := len(o.Shape)
	some := false
	for _, in := range n.Inputs {
		if in == "" {
			continue
		}
		v := g.Values[in]
		if v == nil || v.Shape == nil {
			return false
		}
		if _, ok := twinOf[in]; ok {
			if len(v.Shape) != r {
				return false
			}
			some = true
			continue
		}
		if graph.NumElems(v.Shape) != 1 && (v.Const == nil || v.Const.DType != graph.Float32 || len(v.Shape) > r) {
			return false
		}
	}
	return some
}

// axesFollowLayout reports whether n is an op along named axes (Concat,
// Split, Slice, Pad) whose first input has a twin, as every other input of
// its rank has, and rewrites it, by its PermuteAxes, to run on the twins.
// Its other inputs (sizes, starts, pads) do not depend on the layout.
func axesFollowLayout(g *graph.Graph, n *graph.Node, twinOf map[string]string) bool {
	if ops.LayoutOf(n) != ops.LayoutAxes || len(n.Inputs) == 0 || twinOf[n.Inputs[0]] == "" {
		return false
	}
	r := len(g.Values[n.Inputs[0]].Shape)
	for _, in := range n.Inputs {
		v := g.Values[in]
		if in == "" || v == nil || len(v.Shape) != r {
			continue
		}
		if _, ok := twinOf[in]; !ok {
			return false
		}
	}
	op := ops.LookupNode(n)
	return op != nil && op.PermuteAxes != nil && op.PermuteAxes(g, n, channelsLast(r))
}

// permuteConst returns constant c, broadcast against a value of rank
// len(perm), permuted by perm: its shape is padded with leading ones to
// that rank, then permuted with its data.
func permuteConst(c *graph.Tensor, perm []int) *graph.Tensor {
	r := len(perm)
	s := make([]int, r)
	for i := range r - len(c.Shape) {
		s[i] = 1
	}
	copy(s[r-len(c.Shape):], c.Shape)
	to := permuted(s, perm)
	src := graph.Strides(s)
	dst := graph.Strides(to)
	out := make([]float32, len(c.F32))
	idx := make([]int, r)
	for k := range out {
		rem, from := k, 0
		for i := range r {
			idx[i] = rem / dst[i]
			rem %= dst[i]
			from += idx[i] * src[perm[i]]
		}
		out[k] = c.F32[from]
	}
	return graph.Float32Tensor(to, out)
}
