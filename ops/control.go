package ops

import (
	"fmt"

	"tessera/graph"
)

// Control flow. An If whose condition is known once the inputs are bound
// (a frozen sample rate, a shape) is replaced by the nodes of its taken
// branch; kernels are compiled for one path, so an If on run-time data is
// a *graph.ControlFlowError. Loop and Scan are not supported.

func init() {
	define(&Op{Name: "If", MinIn: 1, MaxIn: 1, Expand: expandIf})
}

func expandIf(c *inferCtx) ([]*graph.Node, error) {
	n := c.N
	cond := c.G.ConstOf(n.Inputs[0])
	if cond == nil {
		return nil, &graph.ControlFlowError{Op: n.OpType, Node: n.Name, Opset: c.Opset, Cond: n.Inputs[0], Inputs: c.G.InputsBehind(n.Inputs[0])}
	}
	if cond.Len() != 1 {
		return nil, c.Errorf("condition %s has shape %v, want one element", n.Inputs[0], cond.Shape)
	}
	taken := "else_branch"
	if cond.Float64s()[0] != 0 {
		taken = "then_branch"
	}
	a, ok := n.Attrs[taken]
	if !ok || a.Kind != graph.AttrGraph || a.G == nil {
		return nil, c.Errorf("no %s graph", taken)
	}
	if len(a.G.Inputs) > 0 {
		return nil, c.Errorf("%s has inputs %v; an If branch takes none", taken, a.G.Inputs)
	}
	if len(a.G.Outputs) != len(n.Outputs) {
		return nil, c.Errorf("%s has %d outputs, the node %d", taken, len(a.G.Outputs), len(n.Outputs))
	}
	nodes, outs, err := c.G.Inline(a.G, nil)
	if err != nil {
		return nil, c.Errorf("%s: %v", taken, err)
	}
	// The If's outputs keep their names: each is an Identity of the
	// branch's output (remove-noops takes them out).
	for k, o := range n.Outputs {
		if o == "" {
			continue
		}
		nodes = append(nodes, &graph.Node{Name: fmt.Sprintf("%s/%s_output_%d", n.Name, taken, k), OpType: "Identity",
			Inputs: []string{outs[k]}, Outputs: []string{o}})
	}
	return nodes, nil
}
