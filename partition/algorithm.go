package partition

import (
	"fmt"
	"math"
	"slices"

	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/ops"
	"github.com/tessera-ml/tessera/te"
)

// Algorithms: a group whose anchor op has other compute definitions
// (ops.Op.Alternatives) gets an alternative group per definition that
// applies. Each alternative is lowered, keyed and merged into tasks like
// any group, so the search tunes it as a task of its own; Plan.Choose then
// keeps, for every group, the alternative whose task measured fastest.
//
//	group (direct) ──────────────▶ task A
//	  └─ alternative (winograd) ─▶ task B     Choose: min(cost A, cost B)
//
// The one alternative today is Winograd F(m×m, 3×3) for a Conv (see
// ops.Winograd); its transformed weights are a new constant of the graph,
// which the build stores in the weights file like any other.

// alternatives returns the alternative groups of grp: none unless exactly
// one of its nodes (the anchor) has an op with alternatives.
func alternatives(g *graph.Graph, grp *Group) ([]*Group, error) {
	var anchor *graph.Node
	for _, n := range grp.Nodes {
		if ops.HasAlternatives(n) {
			if anchor != nil {
				return nil, nil // two candidates: no single anchor
			}
			anchor = n
		}
	}
	if anchor == nil {
		return nil, nil
	}
	defs, err := ops.AlternativesOf(g, anchor)
	if err != nil {
		return nil, err
	}
	var out []*Group
	for _, def := range defs {
		alt := &Group{ID: grp.ID, Nodes: grp.Nodes, Pattern: grp.Pattern, Outputs: grp.Outputs, Algorithm: def.Name}
		lower := func(n *graph.Node, src TensorSource) ([]*te.Tensor, bool, error) {
			if n != anchor {
				return nil, false, nil
			}
			outs, err := def.Lower(src)
			return outs, true, err
		}
		if _, err := lowerGroup(g, alt, lower); err != nil {
			return nil, fmt.Errorf("%s: %w", alt.Algorithm, err)
		}
		out = append(out, alt)
	}
	return out, nil
}

// channelsLast reports whether the layout pass made n's output NHWC.
func channelsLast(n *graph.Node) bool {
	l, _ := n.Str(graph.LayoutAttr, "NCHW")
	o, _ := n.Str(graph.OutLayoutAttr, l)
	return o == "NHWC"
}

// Choose returns the plan that runs, for every group with alternatives,
// the one whose task has the lowest cost; cost reports a task's best
// measured cost (seconds), ok false when it has none. A group keeps its
// direct definition unless an alternative has a lower cost. The returned
// plan's groups have no alternatives, and its tasks are those the chosen
// groups run, in order of first occurrence.
func (p *Plan) Choose(cost func(*Task) (float64, bool)) *Plan {
	return p.ChooseOr(cost, false)
}

// ChooseOr is Choose where, with fewest, a group none of whose definitions
// has a measured cost runs the one of the fewest FLOPs (a Winograd
// alternative rather than the direct convolution) instead of the direct
// one.
func (p *Plan) ChooseOr(cost func(*Task) (float64, bool), fewest bool) *Plan {
	out := &Plan{}
	seen := map[*Task]bool{}
	for _, grp := range p.Groups {
		best, bestCost := grp, math.Inf(1)
		measured := false
		if c, ok := cost(grp.Task); ok {
			bestCost, measured = c, true
		}
		for _, alt := range grp.Alternatives {
			c, ok := cost(alt.Task)
			if ok && c < bestCost {
				best, bestCost = alt, c
			}
			measured = measured || ok
		}
		if fewest && !measured {
			for _, alt := range grp.Alternatives {
				if alt.Task.FLOPs < best.Task.FLOPs {
					best = alt
				}
			}
		}
		chosen := *best
		chosen.Alternatives = nil
		out.Groups = append(out.Groups, &chosen)
		if !seen[best.Task] {
			seen[best.Task] = true
			out.Tasks = append(out.Tasks, best.Task)
		}
	}
	// The chosen groups are copies: point the tasks' group lists at them.
	byTask := map[*Task][]*Group{}
	for _, grp := range out.Groups {
		byTask[grp.Task] = append(byTask[grp.Task], grp)
	}
	for i, t := range out.Tasks {
		c := *t
		c.Groups = byTask[t]
		c.Rivals = nil // the chosen plan has no alternatives
		c.Weight = len(c.Groups)
		out.Tasks[i] = &c
		for _, grp := range c.Groups {
			grp.Task = out.Tasks[i]
		}
	}
	return out
}

// Rivals returns, for every task of p, the indices of the other tasks that
// compute the same groups by another algorithm (nil for most).
func (p *Plan) Rivals() [][]int {
	index := map[*Task]int{}
	for i, t := range p.Tasks {
		index[t] = i
	}
	out := make([][]int, len(p.Tasks))
	add := func(a, b *Task) {
		i, j := index[a], index[b]
		if !slices.Contains(out[i], j) {
			out[i] = append(out[i], j)
		}
	}
	for _, grp := range p.Groups {
		all := append([]*Group{grp}, grp.Alternatives...)
		for _, a := range all {
			for _, b := range all {
				if a.Task != b.Task {
					add(a.Task, b.Task)
				}
			}
		}
	}
	return out
}
