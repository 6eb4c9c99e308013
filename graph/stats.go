package graph

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Stats describes a graph's size: what `tune inspect` prints of a model
// as decoded and after the passes.
type Stats struct {
	Nodes      int            `json:"nodes"`
	Consts     int            `json:"constants"`      // constants some node or output reads
	ConstBytes int64          `json:"constant_bytes"` // their size: 4 bytes an element, 8 for integer types
	Ops        map[string]int `json:"ops"`            // nodes per op type
}

// StatsOf returns g's size.
func StatsOf(g *Graph) Stats {
	s := Stats{Nodes: len(g.Nodes), Ops: map[string]int{}}
	used := map[string]bool{}
	for _, n := range g.Nodes {
		s.Ops[n.OpType]++
		for _, in := range n.Inputs {
			used[in] = true
		}
	}
	for _, o := range g.Outputs {
		used[o] = true
	}
	for _, name := range g.ConstNames() {
		if !used[name] {
			continue
		}
		c := g.Values[name].Const
		s.Consts++
		if c.DType.IsInt() {
			s.ConstBytes += int64(8 * c.Len())
		} else {
			s.ConstBytes += int64(4 * c.Len())
		}
	}
	return s
}

// OpsString lists the op counts, most frequent first: "Conv×53 Relu×49 ...".
func (s Stats) OpsString() string {
	ops := slices.Collect(maps.Keys(s.Ops))
	slices.SortFunc(ops, func(a, b string) int {
		if s.Ops[a] != s.Ops[b] {
			return s.Ops[b] - s.Ops[a]
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(ops))
	for i, op := range ops {
		parts[i] = fmt.Sprintf("%s×%d", op, s.Ops[op])
	}
	return strings.Join(parts, " ")
}
