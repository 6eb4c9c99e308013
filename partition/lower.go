package partition

import (
	"fmt"

	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/ops"
	"github.com/tessera-ml/tessera/te"
)

// Lowering: graph → te tensors, node by node with package ops' lowerings.
// A constant used as data (a weight) is a placeholder: weights are inputs
// of the kernel, not baked into it.

// Lowered is a graph (or a part of one) mapped to te tensors.
type Lowered struct {
	Outputs []*te.Tensor          // one per graph output, in order
	Values  map[string]*te.Tensor // every lowered value by name
	// Sources names the graph value behind each placeholder: a graph input
	// or a constant (whose data Feed supplies).
	Sources map[*te.Tensor]string

	g *graph.Graph
}

// TensorSource returns the te tensor for a graph value read by a node: an
// already lowered value, or a new placeholder for a graph input or a
// constant.
type TensorSource = ops.TensorSource

// Lower maps every node of g (shapes inferred, passes run) to te tensors
// and returns the tensors of the graph outputs, so that
// te.NewDAG(l.Outputs...) computes the whole graph. A graph output that is
// a graph input or a constant gets a copy stage.
func Lower(g *graph.Graph) (*Lowered, error) {
	l := &Lowered{Values: map[string]*te.Tensor{}, Sources: map[*te.Tensor]string{}, g: g}
	for _, n := range g.Nodes {
		outs, err := LowerNode(g, n, l.tensor)
		if err != nil {
			return nil, err
		}
		for i, o := range n.Outputs {
			if o != "" && i < len(outs) {
				l.Values[o] = outs[i]
			}
		}
	}
	for _, o := range g.Outputs {
		t, err := l.tensor(o)
		if err != nil {
			return nil, err
		}
		if t.IsPlaceholder() {
			if t, err = te.Reshape(o+"_copy", t, t.Shape, false); err != nil {
				return nil, err
			}
		}
		l.Outputs = append(l.Outputs, t)
	}
	return l, nil
}

// tensor is Lower's TensorSource.
func (l *Lowered) tensor(name string) (*te.Tensor, error) {
	if t, ok := l.Values[name]; ok {
		return t, nil
	}
	v := l.g.Values[name]
	if v == nil {
		return nil, fmt.Errorf("value %s is not defined", name)
	}
	if v.Const == nil && !l.g.IsInput(name) {
		return nil, fmt.Errorf("value %s is read before it is computed", name)
	}
	if err := ops.CheckShape(name, v.Shape); err != nil {
		return nil, err
	}
	t := ops.Placeholder(l.g, name)
	l.Values[name] = t
	l.Sources[t] = name
	return t, nil
}

// Feed returns the input data of d (a DAG over tensors of l) in the order
// of d.Inputs: graph inputs from inputs (by name), constants from the
// graph (integer and bool constants converted to float32, see
// graph.Tensor.KernelData). Inputs of integer or bool type are given as
// float32 values too.
func (l *Lowered) Feed(d *te.DAG, inputs map[string][]float32) ([][]float32, error) {
	out := make([][]float32, len(d.Inputs))
	for i, t := range d.Inputs {
		name, ok := l.Sources[t]
		if !ok {
			return nil, fmt.Errorf("placeholder %s does not come from the graph", t.Name)
		}
		if l.g.Values[name].Const != nil {
			data, _, err := ops.ConstSlots(l.g, name)
			if err != nil {
				return nil, fmt.Errorf("constant %s: %w", name, err)
			}
			out[i] = data
			continue
		}
		data, ok := inputs[name]
		if !ok {
			return nil, fmt.Errorf("no data for graph input %s", name)
		}
		out[i] = data
	}
	return out, nil
}

// LowerNode maps node n of g to te tensors (see ops.LowerNode).
func LowerNode(g *graph.Graph, n *graph.Node, src TensorSource) ([]*te.Tensor, error) {
	return ops.LowerNode(g, n, src)
}

// OpNames lists the ops Lower supports, sorted.
func OpNames() []string { return ops.LoweredNames() }
