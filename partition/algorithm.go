package partition

import (
	"fmt"
	"math"
	"slices"

	"tessera/graph"
	"tessera/te"
	"tessera/tir"
)

// Algorithms: a group whose anchor op has more than one compute definition
// gets an alternative group per other definition. Each alternative is
// lowered, keyed and merged into tasks like any group, so the search tunes
// it as a task of its own; Plan.Choose then keeps, for every group, the
// alternative whose task measured fastest.
//
//	group (direct) ──────────────▶ task A
//	  └─ alternative (winograd) ─▶ task B     Choose: min(cost A, cost B)
//
// The one alternative today is Winograd F(m×m, 3×3) for 3×3, stride-1,
// ungrouped 2-D convolutions with constant weights (te.WinogradConv2D). Its
// weights are transformed once, when the plan is made, into a new constant
// value of the graph (WinogradWeightsName), which the build stores in the
// weights file like any other.

// Winograd names the Winograd F(m×m, 3×3) algorithm of a group.
func Winograd(m int) string { return fmt.Sprintf("winograd F(%d×%d,3×3)", m, m) }

// WinogradWeightsName is the graph value holding weights w transformed for
// F(m×m, 3×3).
func WinogradWeightsName(w string, m int) string { return fmt.Sprintf("%s.winograd%d", w, m) }

// minWinogradChannels is the fewest input and output channels for which a
// convolution gets a Winograd alternative: below it the transforms cost
// more than the multiplications they save.
const minWinogradChannels = 16

// winogradTile returns the m of the Winograd alternative of node n, or 0
// when n has none: 4 when both output sides are at least 8, else 2.
// Measured with default schedules on a Zen 5 (go run ./bench/conv -fused
// -cpu L -m M, ResNet-18's 56×56 3×3 Conv+Relu, one thread, against
// oneDNN at the same ISA), F(4×4) ran 1.6× F(2×2) natively (AVX-512:
// 1.97 vs 1.21) and 1.5× at x86-64-v3 (AVX2, 16 registers: 1.91 vs
// 1.27), though its 6×6 transforms hold more values than 16 registers:
// no level measured prefers the smaller tile where the larger fits.
func winogradTile(g *graph.Graph, n *graph.Node) int {
	if n.OpType != "Conv" || n.Domain != "" || len(n.Inputs) < 2 {
		return 0
	}
	x, w := g.Values[n.Inputs[0]], g.Values[n.Inputs[1]]
	out := g.Values[n.Outputs[0]]
	if x == nil || w == nil || out == nil || len(x.Shape) != 4 || len(out.Shape) != 4 {
		return 0
	}
	if w.Const == nil || w.Const.DType != graph.Float32 || !slices.Equal(w.Shape[2:], []int{3, 3}) {
		return 0
	}
	if w.Shape[0] < minWinogradChannels || w.Shape[1] < minWinogradChannels {
		return 0
	}
	if grp, err := n.Int("group", 1); err != nil || grp != 1 {
		return 0
	}
	if ap, err := n.Str("auto_pad", "NOTSET"); err != nil || (ap != "NOTSET" && ap != "") {
		return 0
	}
	for _, attr := range []string{"strides", "dilations"} {
		if n.HasAttr(attr) {
			v, err := n.Ints(attr)
			if err != nil || slices.ContainsFunc(v, func(s int64) bool { return s != 1 }) {
				return 0
			}
		}
	}
	if _, err := convPads(n); err != nil {
		return 0
	}
	oh, ow := out.Shape[2], out.Shape[3]
	if channelsLast(n) {
		oh, ow = out.Shape[1], out.Shape[2]
	}
	if oh >= 8 && ow >= 8 {
		return 4
	}
	return 2
}

// channelsLast reports whether the layout pass made n NHWC.
func channelsLast(n *graph.Node) bool {
	l, _ := n.Str(graph.LayoutAttr, "NCHW")
	return l == "NHWC"
}

// convPads returns a 2-D Conv's pads as [top, left, bottom, right].
func convPads(n *graph.Node) ([]int, error) {
	if !n.HasAttr("pads") {
		return []int{0, 0, 0, 0}, nil
	}
	v, err := n.Ints("pads")
	if err != nil {
		return nil, err
	}
	if len(v) != 4 || slices.ContainsFunc(v, func(p int64) bool { return p < 0 || p > 2 }) {
		return nil, fmt.Errorf("pads %v", v)
	}
	return []int{int(v[0]), int(v[1]), int(v[2]), int(v[3])}, nil
}

// winogradAlternative returns the Winograd alternative of grp, or nil when
// its anchor (its one Conv) has none. The transformed weights are added to
// g as a constant the first time they are needed.
func winogradAlternative(g *graph.Graph, grp *Group) (*Group, error) {
	var conv *graph.Node
	for _, n := range grp.Nodes {
		if n.OpType == "Conv" {
			if conv != nil {
				return nil, nil // two convolutions: no single anchor
			}
			conv = n
		}
	}
	if conv == nil {
		return nil, nil
	}
	m := winogradTile(g, conv)
	if m == 0 {
		return nil, nil
	}
	pads, err := convPads(conv)
	if err != nil {
		return nil, err
	}
	wName := conv.Inputs[1]
	uName := WinogradWeightsName(wName, m)
	if _, ok := g.Values[uName]; !ok {
		w := g.Values[wName]
		K, C := w.Shape[0], w.Shape[1]
		u, err := te.WinogradWeights(w.Const.F32, K, C, m)
		if err != nil {
			return nil, fmt.Errorf("node %s: %w", conv.Name, err)
		}
		g.AddConst(uName, graph.Float32Tensor([]int{m + 2, m + 2, C, K}, u))
	}
	alt := &Group{ID: grp.ID, Nodes: grp.Nodes, Pattern: grp.Pattern, Outputs: grp.Outputs, Algorithm: Winograd(m)}
	lowerConv := func(n *graph.Node, src TensorSource) ([]*te.Tensor, bool, error) {
		if n != conv {
			return nil, false, nil
		}
		x, err := src(n.Inputs[0])
		if err != nil {
			return nil, true, err
		}
		u, err := src(uName)
		if err != nil {
			return nil, true, err
		}
		wino, channel := te.WinogradConv2D, 1
		if channelsLast(n) {
			wino, channel = te.WinogradConv2DNHWC, 3
		}
		out, err := wino(n.Outputs[0]+"_winograd", x, u, m, pads)
		if err != nil {
			return nil, true, n.Errorf("%v", err)
		}
		if len(n.Inputs) > 2 && n.Inputs[2] != "" {
			b, err := src(n.Inputs[2])
			if err != nil {
				return nil, true, err
			}
			conv := out
			out = te.Compute(n.Outputs[0]+"_bias", conv.Shape, func(i []tir.Expr) tir.Expr {
				return tir.AddE(conv.At(i...), b.At(i[channel]))
			})
		}
		return []*te.Tensor{out}, true, nil
	}
	if _, err := lowerGroup(g, alt, lowerConv); err != nil {
		return nil, fmt.Errorf("%s: %w", alt.Algorithm, err)
	}
	return alt, nil
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
