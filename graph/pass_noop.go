package graph

import "slices"

// removeNoops removes the nodes that copy their input: Identity, Dropout
// in inference mode (its mask unused), and Reshape, Transpose, Squeeze,
// Unsqueeze, Flatten, Expand and Cast whose output has the input's shape,
// element order and dtype. Readers of the output read the input instead.
// When the output is a graph output, the input's producer is made to write
// it under the output's name, so graph outputs keep their names; when that
// is impossible (the input is a graph input or constant) the node stays.
func removeNoops(g *Graph) (bool, error) {
	changed := false
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
func isNoop(g *Graph, n *Node) bool {
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
	switch n.OpType {
	case "Identity", "Reshape", "Squeeze", "Unsqueeze", "Flatten", "Expand", "Cast":
		return true
	case "Dropout":
		return true // shape inference rejects training mode and a used mask
	case "Transpose":
		p, err := n.Ints("perm")
		if err != nil {
			return false
		}
		if p == nil {
			return len(in.Shape) <= 1
		}
		for i, a := range p {
			if a != int64(i) {
				return false
			}
		}
		return true
	}
	return false
}
