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
// elementwise ops between them, run on channels-last (NHWC) activations,
// which vectorize along the channels: contiguous loads of the input, a
// register tile of output channels, weights packed to match (package
// schedule's RewriteLayout). Values keep their NCHW names and meaning:
// a converted op writes a new value NAME_nhwc, and a Transpose back to
// NAME is inserted only where something still reads the NCHW value (an op
// without an NHWC form, a graph output); a Transpose to NHWC only where a
// chain begins (a graph input, or a value an NCHW op computed). A chain
// of converted ops passes NHWC values from one to the next, so no two
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
	transpose := func(in, outName, name string, perm ...int64) {
		out = append(out, &Node{Name: name, OpType: "Transpose", Inputs: []string{in}, Outputs: []string{outName},
			Attrs: map[string]Attr{"perm": {Kind: AttrInts, Ints: perm}}})
	}
	toNHWC := func(name string) string {
		if t, ok := nhwcOf[name]; ok {
			return t
		}
		t := fresh(name + "_nhwc")
		transpose(name, t, name+"/to_nhwc", 0, 2, 3, 1)
		nhwcOf[name] = t
		return t
	}
	needNCHW := func(name string) {
		if t, ok := pending[name]; ok {
			transpose(t, name, name+"/to_nchw", 0, 3, 1, 2)
			delete(pending, name)
		}
	}
	convertOutput := func(n *Node) {
		o := n.Outputs[0]
		t := fresh(o + "_nhwc")
		n.Outputs[0] = t
		nhwcOf[o], pending[o] = t, t
		changed = true
	}
	for _, n := range g.Nodes {
		switch {
		case g.nhwcWindowOp(n):
			n.Inputs[0] = toNHWC(n.Inputs[0])
			// A copy: nodes may share one attribute map.
			n.Attrs = maps.Clone(n.Attrs)
			n.Attrs[LayoutAttr] = Attr{Kind: AttrString, S: "NHWC"}
			convertOutput(n)
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
			convertOutput(n)
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

// nhwcWindowOp reports whether n is a 2-D Conv, MaxPool or
// GlobalAveragePool of the default domain that has no layout yet.
func (g *Graph) nhwcWindowOp(n *Node) bool {
	if n.Domain != "" || n.HasAttr(LayoutAttr) || len(n.Inputs) == 0 || len(n.Outputs) == 0 {
		return false
	}
	if x := g.Values[n.Inputs[0]]; x == nil || len(x.Shape) != 4 || x.DType != Float32 {
		return false
	}
	switch n.OpType {
	case "Conv", "GlobalAveragePool":
		return len(n.Outputs) == 1
	case "MaxPool":
		so, err := n.Int("storage_order", 0)
		return err == nil && so == 0 && (len(n.Outputs) == 1 || n.Outputs[1] == "")
	}
	return false
}

// layoutFree lists the ops that compute each output element from the same
// element of their inputs (or from scalars): they run in any layout.
var layoutFree = map[string]bool{
	"Relu": true, "Clip": true, "Sigmoid": true, "Tanh": true, "LeakyRelu": true, "HardSigmoid": true,
	"HardSwish": true, "Elu": true, "Selu": true, "Exp": true, "Neg": true, "Abs": true, "Sqrt": true,
	"Identity": true, "Add": true, "Sub": true, "Mul": true, "Div": true, "Max": true, "Min": true,
	"Sum": true,
}

// followsLayout reports whether n is a layout-free op whose tensor inputs
// all have NHWC twins, or are omitted, of one element, or constants that
// broadcast against a 4-D NCHW value (a per-channel bias [C, 1, 1]: the
// pass gives them an NHWC twin, constNHWC), so that it can run on the
// twins.
func (g *Graph) followsLayout(n *Node, nhwcOf map[string]string) bool {
	if n.Domain != "" || !layoutFree[n.OpType] || len(n.Outputs) != 1 {
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
