package frontend

import (
	"github.com/tessera-ml/tessera/graph"
)

// eliminateDeadCode removes the nodes none of whose outputs is read (by a
// node or as a graph output), then the values nothing defines or reads
// (unused constants among them).
func eliminateDeadCode(g *graph.Graph) (bool, error) {
	live := map[string]bool{}
	for _, o := range g.Outputs {
		live[o] = true
	}
	keep := make([]bool, len(g.Nodes))
	for i := len(g.Nodes) - 1; i >= 0; i-- {
		n := g.Nodes[i]
		for _, o := range n.Outputs {
			if live[o] {
				keep[i] = true
			}
		}
		if keep[i] {
			for _, in := range n.Inputs {
				live[in] = true
			}
		}
	}
	changed := false
	var nodes []*graph.Node
	for i, n := range g.Nodes {
		if keep[i] {
			nodes = append(nodes, n)
		} else {
			changed = true
		}
	}
	g.Nodes = nodes
	used := map[string]bool{}
	for _, name := range append(g.Inputs, g.Outputs...) {
		used[name] = true
	}
	for _, n := range g.Nodes {
		for _, name := range append(n.Inputs, n.Outputs...) {
			used[name] = true
		}
	}
	for name, v := range g.Values {
		if !used[name] {
			delete(g.Values, name)
			changed = changed || v.Const != nil
		}
	}
	return changed, nil
}
