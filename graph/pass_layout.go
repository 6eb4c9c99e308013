package graph

import (
	"fmt"
	"maps"
)

// LayoutAttr is the attribute convert-layout sets on the sliding-window
// ops it makes channels-last: data_layout = "NHWC". It is Tessera's own,
// never read from a model file (package onnx refuses it).
const LayoutAttr = "data_layout"

// convertLayout makes the 2-D convolutions and pools of the model, and the
// ops between them that do not depend on the layout (elementwise ops,
// Concat and Split along an axis), run on channels-last (NHWC)
// activations, which vectorize along the channels: contiguous loads of the
// input, a register tile of output channels, weights packed to match
// (package schedule's RewriteLayout). What an op allows is its LayoutOf
// (package ops declares it). Values keep their NCHW names and meaning: a
// converted op writes a new value NAME_nhwc, and a Transpose back to NAME
// is inserted only where something still reads the NCHW value (an op
// without an NHWC form, a graph output); a Transpose to NHWC only where a
// chain begins (a graph input, or a value an NCHW op computed). A chain of
// converted ops passes NHWC values from one to the next, so no two
// transposes ever cancel. `--no-pass convert-layout` keeps every value
// NCHW.
func convertLayout(g *Graph) (bool, error) {
	nhwcOf := map[string]string{}  // NCHW value → its NHWC twin
	pending := map[string]string{} // converted values whose NCHW form is not written yet
	var out []*Node
	changed := false
	fresh := func(base string) string {
		name := base
		for k := 2; g.Values[name] != nil; k++ {
			name = fmt.Sprintf("%s%d", base, k)
		}
		g.Value(name).DType = Float32
		return name
	}
	// transpose writes in, of shape from, permuted by perm as outName: a
	// Reshape when the permutation keeps the order of the axes longer
	// than 1 (a pooled [1, 1, 1, C] value), the same data; else a
	// Transpose.
	transpose := func(in, outName, name string, from []int, perm ...int64) {
		if to, ok := sameOrder(from, perm); ok {
			shape := g.FreshName(name + "/shape")
			g.AddConst(shape, Int64Tensor([]int{len(to)}, to))
			out = append(out, &Node{Name: name, OpType: "Reshape", Inputs: []string{in, shape}, Outputs: []string{outName}})
			return
		}
		out = append(out, &Node{Name: name, OpType: "Transpose", Inputs: []string{in}, Outputs: []string{outName},
			Attrs: map[string]Attr{"perm": {Kind: AttrInts, Ints: perm}}})
	}
	toNHWC := func(name string) string {
		if t, ok := nhwcOf[name]; ok {
			return t
		}
		t := fresh(name + "_nhwc")
		transpose(name, t, name+"/to_nhwc", g.Values[name].Shape, 0, 2, 3, 1)
		nhwcOf[name] = t
		return t
	}
	needNCHW := func(name string) {
		if t, ok := pending[name]; ok {
			s := g.Values[name].Shape // NCHW
			transpose(t, name, name+"/to_nchw", []int{s[0], s[2], s[3], s[1]}, 0, 3, 1, 2)
			delete(pending, name)
		}
	}
	convertOutputs := func(n *Node) {
		for i, o := range n.Outputs {
			if o == "" {
				continue
			}
			t := fresh(o + "_nhwc")
			n.Outputs[i] = t
			nhwcOf[o], pending[o] = t, t
		}
		changed = true
	}
	setAttr := func(n *Node, name string, a Attr) {
		n.Attrs = maps.Clone(n.Attrs) // nodes may share one attribute map
		if n.Attrs == nil {
			n.Attrs = map[string]Attr{}
		}
		n.Attrs[name] = a
	}
	for _, n := range g.Nodes {
		switch {
		case g.nhwcWindowOp(n):
			n.Inputs[0] = toNHWC(n.Inputs[0])
			setAttr(n, LayoutAttr, Attr{Kind: AttrString, S: "NHWC"})
			convertOutputs(n)
		case g.followsLayout(n, nhwcOf):
			for i, in := range n.Inputs {
				if t, ok := nhwcOf[in]; ok {
					n.Inputs[i] = t
				} else if v := g.Values[in]; in != "" && v.Const != nil && NumElems(v.Shape) > 1 {
					t := fresh(in + "_nhwc")
					g.AddConst(t, constNHWC(v.Const))
					nhwcOf[in] = t
					n.Inputs[i] = t
				}
			}
			convertOutputs(n)
		case g.axisFollowsLayout(n, nhwcOf):
			for i, in := range n.Inputs {
				if t, ok := nhwcOf[in]; ok {
					n.Inputs[i] = t
				}
			}
			axis, _ := n.Int("axis", 0)
			setAttr(n, "axis", Attr{Kind: AttrInt, I: nhwcAxis[(axis+4)%4]})
			convertOutputs(n)
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

// sameOrder returns the shape of a value of shape from permuted by perm,
// and whether the permutation keeps the order of the axes longer than 1:
// then it moves no data.
func sameOrder(from []int, perm []int64) ([]int64, bool) {
	if len(from) != len(perm) {
		return nil, false
	}
	to := make([]int64, len(perm))
	last := int64(-1)
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

// nhwcAxis maps an axis of a 4-D NCHW value to the same axis of its NHWC
// twin.
var nhwcAxis = [4]int64{0, 3, 1, 2}

// nhwcWindowOp reports whether n is a 2-D sliding-window op with a
// channels-last form (LayoutChannelsLast) that has no layout yet.
func (g *Graph) nhwcWindowOp(n *Node) bool {
	if LayoutOf(n) != LayoutChannelsLast || n.HasAttr(LayoutAttr) || len(n.Inputs) == 0 || len(n.Outputs) == 0 {
		return false
	}
	if x := g.Values[n.Inputs[0]]; x == nil || len(x.Shape) != 4 || x.DType != Float32 {
		return false
	}
	// One output: MaxPool's Indices and storage order have no NHWC form.
	so, err := n.Int("storage_order", 0)
	return err == nil && so == 0 && (len(n.Outputs) == 1 || (len(n.Outputs) == 2 && n.Outputs[1] == ""))
}

// followsLayout reports whether n is a layout-free op whose tensor inputs
// all have NHWC twins, or are omitted, of one element, or constants that
// broadcast against a 4-D NCHW value (a per-channel bias [C, 1, 1]: the
// pass gives them an NHWC twin, constNHWC), so that it can run on the
// twins.
func (g *Graph) followsLayout(n *Node, nhwcOf map[string]string) bool {
	if LayoutOf(n) != LayoutFree || len(n.Outputs) != 1 {
		return false
	}
	some := false
	for _, in := range n.Inputs {
		if _, ok := nhwcOf[in]; ok {
			some = true
			continue
		}
		if in == "" {
			continue
		}
		v := g.Values[in]
		if v == nil || v.Shape == nil {
			return false
		}
		if NumElems(v.Shape) != 1 && (v.Const == nil || v.Const.DType != Float32 || len(v.Shape) > 4) {
			return false
		}
	}
	return some
}

// axisFollowsLayout reports whether n is an op along an axis (Concat,
// Split) whose 4-D inputs all have NHWC twins: it then runs on the twins
// along the permuted axis. Its other inputs (Split's sizes) do not depend
// on the layout.
func (g *Graph) axisFollowsLayout(n *Node, nhwcOf map[string]string) bool {
	if LayoutOf(n) != LayoutAxis || len(n.Inputs) == 0 {
		return false
	}
	if axis, err := n.Int("axis", 0); err != nil || axis < -4 || axis > 3 {
		return false
	}
	for _, in := range n.Inputs {
		v := g.Values[in]
		if in == "" || v == nil || len(v.Shape) != 4 {
			continue
		}
		if _, ok := nhwcOf[in]; !ok {
			return false
		}
	}
	_, ok := nhwcOf[n.Inputs[0]]
	return ok
}

// constNHWC returns constant c, broadcast against a 4-D NCHW value, in the
// NHWC order: its shape is padded with leading ones to 4-D, then permuted
// [0, 2, 3, 1] with its data.
func constNHWC(c *Tensor) *Tensor {
	s := append(make([]int, 4-len(c.Shape)), c.Shape...)
	for i := range 4 - len(c.Shape) {
		s[i] = 1
	}
	n, ch, h, w := s[0], s[1], s[2], s[3]
	out := make([]float32, len(c.F32))
	for b := range n {
		for k := range ch {
			for y := range h {
				for x := range w {
					out[((b*h+y)*w+x)*ch+k] = c.F32[((b*ch+k)*h+y)*w+x]
				}
			}
		}
	}
	return Float32Tensor([]int{n, h, w, ch}, out)
}
