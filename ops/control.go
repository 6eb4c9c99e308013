package ops

import (
	"fmt"
	"slices"

	"github.com/tessera-ml/tessera/graph"
)

// Control flow. An If whose condition is known once the inputs are bound
// (a frozen sample rate, a shape) is replaced by the nodes of its taken
// branch; kernels are compiled for one path, so an If on run-time data is
// a *graph.ControlFlowError. A Loop with a trip count known by then and a
// condition its body does not change, and a Scan, unroll into copies of
// their bodies.

func init() {
	define(&Op{Name: "If", MinIn: 1, MaxIn: 1, Expand: expandIf})
}

func expandIf(c *InferCtx) ([]*graph.Node, error) {
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

// maxUnroll bounds the iterations a Loop or Scan unrolls into.
const maxUnroll = 4096

func init() {
	define(
		&Op{Name: "Loop", MinIn: 2, MaxIn: -1, Expand: expandLoop},
		&Op{Name: "Scan", MinIn: 1, MaxIn: -1, Expand: expandScan},
	)
}

// expandLoop unrolls a Loop whose trip count is known once the inputs are
// bound and whose body passes its condition through unchanged (a for loop,
// as exporters write one): each iteration is a copy of the body reading
// the iteration number as a constant, and each scan output stacks the
// iterations' values along a new first axis. A loop that decides when to
// stop from its data (a while loop) cannot be compiled for static shapes.
func expandLoop(c *InferCtx) ([]*graph.Node, error) {
	n := c.N
	body, err := c.subgraph("body")
	if err != nil {
		return nil, err
	}
	carried := n.Inputs[2:]
	if len(body.Inputs) != 2+len(carried) || len(body.Outputs) < 1+len(carried) {
		return nil, c.Errorf("body takes %d inputs and gives %d outputs for %d loop-carried values", len(body.Inputs), len(body.Outputs), len(carried))
	}
	nscan := len(body.Outputs) - 1 - len(carried)
	if len(n.Outputs) != len(carried)+nscan {
		return nil, c.Errorf("%d outputs, want %d (loop-carried and scan outputs)", len(n.Outputs), len(carried)+nscan)
	}
	if n.Inputs[0] == "" {
		return nil, graph.Unsupportedf("Loop (opset %d) at node %s: no trip count: a while loop stops on run-time data", c.Opset, n.Name)
	}
	mt := c.G.ConstOf(n.Inputs[0])
	if mt == nil {
		return nil, &graph.ControlFlowError{Op: n.OpType, Node: n.Name, Opset: c.Opset, Cond: n.Inputs[0], What: "trip count", Inputs: c.G.InputsBehind(n.Inputs[0])}
	}
	trips := mt.Int64s()[0]
	if name := n.Input(1); name != "" {
		cond := c.G.ConstOf(name)
		if cond == nil {
			return nil, &graph.ControlFlowError{Op: n.OpType, Node: n.Name, Opset: c.Opset, Cond: name, Inputs: c.G.InputsBehind(name)}
		}
		if cond.Int64s()[0] == 0 {
			trips = 0
		}
	}
	// The body's condition must stay true: passed through, or a true
	// constant.
	condOut := body.Outputs[0]
	if condOut != body.Inputs[1] {
		src := body.Producers()[condOut]
		passes := src != nil && src.OpType == "Identity" && src.Input(0) == body.Inputs[1]
		if t := body.ConstOf(condOut); t != nil {
			passes = t.Int64s()[0] != 0
		} else if src != nil && src.OpType == "Constant" {
			if a, ok := src.Attrs["value"]; ok && a.T != nil && a.T.Len() == 1 {
				passes = a.T.Int64s()[0] != 0
			}
		}
		if !passes {
			return nil, graph.Unsupportedf("Loop (opset %d) at node %s: its body computes the condition %s: a loop that stops on run-time data", c.Opset, n.Name, condOut)
		}
	}
	if trips < 0 || trips > maxUnroll {
		return nil, graph.Unsupportedf("Loop (opset %d) at node %s: %d iterations (at most %d are unrolled)", c.Opset, n.Name, trips, maxUnroll)
	}
	if trips == 0 && nscan > 0 {
		return nil, graph.Unsupportedf("Loop (opset %d) at node %s: no iteration, so its scan outputs are empty", c.Opset, n.Name)
	}
	e := newExpander(c)
	vals := slices.Clone(carried)
	scans := make([][]string, nscan)
	for i := range int(trips) {
		bind := map[string]string{
			body.Inputs[0]: e.constant(graph.Int64Tensor([]int{}, []int64{int64(i)})),
			body.Inputs[1]: e.constant(&graph.Tensor{DType: graph.Bool, Shape: []int{}, I64: []int64{1}}),
		}
		for j, v := range vals {
			bind[body.Inputs[2+j]] = v
		}
		nodes, outs, err := c.G.Inline(body, bind)
		if err != nil {
			return nil, c.Errorf("body: %v", err)
		}
		e.nodes = append(e.nodes, nodes...)
		vals = outs[1 : 1+len(carried)]
		for k := range scans {
			scans[k] = append(scans[k], e.unsqueeze(outs[1+len(carried)+k], 0))
		}
	}
	for j, v := range vals {
		if out := n.Output(j); out != "" {
			e.write(out, "Identity", nil, v)
		}
	}
	for k, s := range scans {
		if out := n.Output(len(carried) + k); out != "" {
			e.write(out, "Identity", nil, e.concat(0, s...))
		}
	}
	return e.nodes, nil
}

// expandScan unrolls a Scan (opset 9 on) over its scan inputs' extent:
// iteration t reads slice t (or T−1−t, in reverse) of each scan input and
// the states of the last one, and each scan output stacks the iterations'
// values along its axis.
func expandScan(c *InferCtx) ([]*graph.Node, error) {
	n := c.N
	if c.Opset < 9 {
		return nil, graph.Unsupportedf("Scan (opset %d) at node %s: the batched Scan of opset 8", c.Opset, n.Name)
	}
	body, err := c.subgraph("body")
	if err != nil {
		return nil, err
	}
	m, err := n.Int("num_scan_inputs", 0)
	if err != nil {
		return nil, err
	}
	nstate := len(n.Inputs) - int(m)
	if m <= 0 || nstate < 0 || len(body.Inputs) != len(n.Inputs) || len(body.Outputs) < nstate {
		return nil, c.Errorf("num_scan_inputs %d for %d inputs and a body of %d inputs", m, len(n.Inputs), len(body.Inputs))
	}
	nscan := len(body.Outputs) - nstate
	if len(n.Outputs) != len(body.Outputs) {
		return nil, c.Errorf("%d outputs, the body %d", len(n.Outputs), len(body.Outputs))
	}
	list := func(attr string, count int, rank func(k int) int) ([]int, error) {
		v, err := n.Ints(attr)
		if err != nil {
			return nil, err
		}
		out := make([]int, count)
		if v == nil {
			return out, nil
		}
		if len(v) != count {
			return nil, c.Errorf("%s has %d values for %d tensors", attr, len(v), count)
		}
		for k := range out {
			out[k] = int(v[k])
			if rank != nil {
				if out[k], err = c.NormAxis(v[k], rank(k)); err != nil {
					return nil, err
				}
			}
		}
		return out, nil
	}
	inAxes, err := list("scan_input_axes", int(m), func(k int) int { return len(c.Shape(nstate + k)) })
	if err != nil {
		return nil, err
	}
	inDirs, err := list("scan_input_directions", int(m), nil)
	if err != nil {
		return nil, err
	}
	outAxes, err := list("scan_output_axes", nscan, nil)
	if err != nil {
		return nil, err
	}
	outDirs, err := list("scan_output_directions", nscan, nil)
	if err != nil {
		return nil, err
	}
	T := -1
	for k := range int(m) {
		d := c.Shape(nstate + k)[inAxes[k]]
		if T >= 0 && d != T {
			return nil, c.Errorf("scan inputs of %d and %d iterations", T, d)
		}
		T = d
	}
	if T > maxUnroll {
		return nil, graph.Unsupportedf("Scan (opset %d) at node %s: %d iterations (at most %d are unrolled)", c.Opset, n.Name, T, maxUnroll)
	}
	e := newExpander(c)
	states := slices.Clone(n.Inputs[:nstate])
	scans := make([][]string, nscan)
	for t := range T {
		bind := map[string]string{}
		for j, s := range states {
			bind[body.Inputs[j]] = s
		}
		for k := range int(m) {
			pos := t
			if inDirs[k] != 0 {
				pos = T - 1 - t
			}
			bind[body.Inputs[nstate+k]] = e.take(n.Inputs[nstate+k], inAxes[k], pos)
		}
		nodes, outs, err := c.G.Inline(body, bind)
		if err != nil {
			return nil, c.Errorf("body: %v", err)
		}
		e.nodes = append(e.nodes, nodes...)
		states = outs[:nstate]
		for k := range scans {
			scans[k] = append(scans[k], outs[nstate+k])
		}
	}
	for j, s := range states {
		if out := n.Output(j); out != "" {
			e.write(out, "Identity", nil, s)
		}
	}
	for k, s := range scans {
		out := n.Output(nstate + k)
		if out == "" {
			continue
		}
		if outDirs[k] != 0 {
			slices.Reverse(s)
		}
		// The axis counts in the stacked output (rank of a slice + 1).
		st := make([]string, len(s))
		for t, v := range s {
			st[t] = e.unsqueeze(v, outAxes[k])
		}
		e.write(out, "Identity", nil, e.concat(outAxes[k], st...))
	}
	return e.nodes, nil
}

// subgraph returns the node's graph attribute name.
func (c *InferCtx) subgraph(name string) (*graph.Graph, error) {
	a, ok := c.N.Attrs[name]
	if !ok || a.Kind != graph.AttrGraph || a.G == nil {
		return nil, c.Errorf("no %s graph", name)
	}
	return a.G, nil
}
