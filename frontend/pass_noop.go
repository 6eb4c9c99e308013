package frontend

import (
	"slices"

	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/ops"
)

// removeNoops removes the nodes that copy their input: those of an op
// whose Copy rule (ops.Op.Copy: Identity, the reshapes, Expand, Cast,
// Dropout in inference mode with its mask unused) makes them copies when
// the output has the input's shape and dtype, and those its CopyIf rule
// says copy (a Transpose by the identity permutation, a Pad by zero
// everywhere: PyTorch writes one before an AveragePool). Readers of the
// output read the input instead.
// When the output is a graph output, the input's producer is made to write
// it under the output's name, so graph outputs keep their names; when that
// is impossible (the input is a graph input or constant) the node stays.
func removeNoops(g *graph.Graph) (bool, error) {
	changed := false
	// A Dropout's mask that nothing reads is no output (PyTorch names it
	// in training-mode exports: Swin's attention dropout).
	consumers := g.Consumers()
	for _, n := range g.Nodes {
		if n.OpType == "Dropout" && n.Domain == "" && len(n.Outputs) > 1 && n.Outputs[1] != "" &&
			len(consumers[n.Outputs[1]]) == 0 && !g.IsOutput(n.Outputs[1]) {
			delete(g.Values, n.Outputs[1])
			n.Outputs = n.Outputs[:1]
			changed = true
		}
	}
	producers := g.Producers()
	for i := 0; i < len(g.Nodes); i++ {
		n := g.Nodes[i]
		if !isNoop(g, n) {
			continue
		}
		in, out := n.Inputs[0], n.Outputs[0]
		if g.IsOutput(out) {
			p := producers[in]
			if p == nil || g.IsOutput(in) || g.IsInput(in) {
				continue
			}
			// The producer writes out directly; readers of in read out.
			for k, o := range p.Outputs {
				if o == in {
					p.Outputs[k] = out
				}
			}
			g.Nodes = slices.Delete(g.Nodes, i, i+1)
			g.Rename(in, out)
			delete(g.Values, in)
			producers = g.Producers()
		} else {
			g.Nodes = slices.Delete(g.Nodes, i, i+1)
			g.Rename(out, in)
			delete(g.Values, out)
		}
		i--
		changed = true
	}
	return changed, nil
}

// isNoop reports whether n's first output is a copy of its first input.
func isNoop(g *graph.Graph, n *graph.Node) bool {
	if len(n.Inputs) == 0 || n.Inputs[0] == "" || len(n.Outputs) == 0 || n.Outputs[0] == "" {
		return false
	}
	for _, o := range n.Outputs[1:] {
		if o != "" {
			return false
		}
	}
	in, out := g.Values[n.Inputs[0]], g.Values[n.Outputs[0]]
	if in == nil || out == nil || in.DType != out.DType || !slices.Equal(in.Shape, out.Shape) || in.Shape == nil {
		return false
	}
	// Shape inference rejects a Dropout in training mode with a ratio
	// above 0, or with a used mask.
	if ops.CopyOf(n) != ops.CopyNever {
		return true
	}
	op := ops.LookupNode(n)
	return op != nil && op.CopyIf != nil && op.CopyIf(g, n)
}

// mergeReshapes makes a reshape of a reshape (Reshape, Flatten, Squeeze,
// Unsqueeze: the data in the same order) one Reshape, to the outer one's
// static shape, of the inner one's input; the inner one is left to dce
// when nothing else reads it. The layout pass leaves such pairs: the
// Reshape back to NCHW of a pooled [1, 1, 1, C] value, then the model's
// Flatten.
func mergeReshapes(g *graph.Graph) (bool, error) {
	producers := g.Producers()
	changed := false
	for _, n := range g.Nodes {
		if ops.CopyOf(n) != ops.CopyReshape || len(n.Outputs) != 1 {
			continue
		}
		p := producers[n.Input(0)]
		if p == nil || ops.CopyOf(p) != ops.CopyReshape || len(p.Outputs) != 1 || p.Input(0) == "" {
			continue
		}
		out, in := g.Values[n.Outputs[0]], g.Values[p.Input(0)]
		if out == nil || in == nil || out.Shape == nil || in.DType != out.DType || slices.Contains(out.Shape, 0) {
			continue
		}
		shape := make([]int64, len(out.Shape))
		for i, d := range out.Shape {
			shape[i] = int64(d)
		}
		n.OpType, n.Attrs = "Reshape", nil
		n.Inputs = []string{p.Input(0), newConst(g, n.Name+"_shape", graph.Int64Tensor([]int{len(shape)}, shape))}
		changed = true
	}
	return changed, nil
}
