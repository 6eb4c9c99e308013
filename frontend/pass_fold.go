package frontend

import (
	"github.com/tessera-ml/tessera/graph"
)

// foldConstants replaces every node whose outputs shape inference could
// evaluate (constant inputs, or Shape/Size of a static shape) by the
// constants themselves. Constant nodes fold the same way.
func foldConstants(g *graph.Graph) (bool, error) {
	changed := false
	removeNodes(g, func(n *graph.Node) bool {
		used := false
		for _, o := range n.Outputs {
			if o == "" {
				continue
			}
			v := g.Values[o]
			if v == nil || v.Known == nil {
				return false
			}
			used = true
		}
		if !used {
			return false
		}
		for _, o := range n.Outputs {
			if v := g.Values[o]; v != nil {
				v.Const, v.Known = v.Known, nil
			}
		}
		changed = true
		return true
	})
	return changed, nil
}
