package frontend

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/tessera-ml/tessera/graph"
)

// eliminateCommonSubexpressions merges nodes that apply the same op with
// the same attributes to the same inputs: readers of the later node's
// outputs read the earlier node's instead. A node whose output is a graph
// output is kept (graph outputs keep their names).
func eliminateCommonSubexpressions(g *graph.Graph) (bool, error) {
	seen := map[string][]*graph.Node{}
	changed := false
	var nodes []*graph.Node
	for _, n := range g.Nodes {
		if hasGraphAttr(n) {
			nodes = append(nodes, n)
			continue
		}
		key := n.Domain + "." + n.OpType + "(" + strings.Join(n.Inputs, ",") + ")" + fmt.Sprint(len(n.Outputs))
		var same *graph.Node
		for _, m := range seen[key] {
			if sameAttrs(m, n) {
				same = m
				break
			}
		}
		dup := same != nil
		for _, o := range n.Outputs {
			if g.IsOutput(o) {
				dup = false
			}
		}
		if !dup {
			seen[key] = append(seen[key], n)
			nodes = append(nodes, n)
			continue
		}
		for k, o := range n.Outputs {
			if o == "" {
				continue
			}
			if same.Outputs[k] == "" {
				same.Outputs[k] = o // the earlier node now writes it
				continue
			}
			g.Rename(o, same.Outputs[k])
			delete(g.Values, o)
		}
		changed = true
	}
	g.Nodes = nodes
	return changed, nil
}

func sameAttrs(a, b *graph.Node) bool {
	if len(a.Attrs) != len(b.Attrs) {
		return false
	}
	keys := make([]string, 0, len(a.Attrs))
	for k := range a.Attrs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		bv, ok := b.Attrs[k]
		if !ok || !reflect.DeepEqual(a.Attrs[k], bv) {
			return false
		}
	}
	return true
}

// hasGraphAttr reports whether n has a subgraph attribute, whose body the
// graph does not keep (so two such nodes cannot be compared).
func hasGraphAttr(n *graph.Node) bool {
	for _, a := range n.Attrs {
		if a.Kind == graph.AttrGraph {
			return true
		}
	}
	return false
}
