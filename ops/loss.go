package ops

import "github.com/tessera-ml/tessera/graph"

// The losses NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss are ONNX
// functions; they expand into their bodies' ops (GatherElements of the
// targets' entries, their weights, the reduction), so a model that
// computes a loss at inference builds like any other.

func init() {
	define(
		&Op{Name: "NegativeLogLikelihoodLoss", MinIn: 2, MaxIn: 3, Expand: expandLoss(false)},
		&Op{Name: "SoftmaxCrossEntropyLoss", MinIn: 2, MaxIn: 3, Expand: expandLoss(true)},
	)
}

// expandLoss: for input [N, C, d...] (log-probabilities, or scores whose
// log-softmax along C is taken first), integer targets [N, d...] and
// optional class weights [C], the loss of each element is −input[n, t, d]·
// weight[t] (0 where t is ignore_index); reduction none keeps them, sum
// adds them, mean divides the sum by the weights' sum.
func expandLoss(softmax bool) func(c *InferCtx) ([]*graph.Node, error) {
	return func(c *InferCtx) ([]*graph.Node, error) {
		n := c.N
		x, t := c.Shape(0), c.Shape(1)
		if len(x) < 2 || len(t) != len(x)-1 || t[0] != x[0] {
			return nil, c.Errorf("input %v and target %v do not fit ([N, C, d...] and [N, d...])", x, t)
		}
		if !c.DType(1).IsInt() {
			return nil, c.Errorf("target is %s, want an integer type", c.DType(1))
		}
		if c.Has(2) && (len(c.Shape(2)) != 1 || c.Shape(2)[0] != x[1]) {
			return nil, c.Errorf("weight %v, want [%d]", c.Shape(2), x[1])
		}
		red, err := n.Str("reduction", "mean")
		if err != nil {
			return nil, err
		}
		if red != "none" && red != "sum" && red != "mean" {
			return nil, c.Errorf("reduction %q", red)
		}
		e := newExpander(c)
		in := n.Inputs[0]
		if softmax {
			// log-softmax along C, as the function's body writes it
			m := e.reduce("ReduceMax", in, []int64{1}, true)
			sub := e.op("Sub", nil, in, m)
			lse := e.op("Log", nil, e.reduce("ReduceSum", e.op("Exp", nil, sub), []int64{1}, true))
			in = e.op("Sub", nil, sub, lse)
			if out := n.Output(1); out != "" {
				e.write(out, "Identity", nil, in)
			}
		} else if len(n.Outputs) > 1 && n.Output(1) != "" {
			return nil, c.Errorf("%d outputs", len(n.Outputs))
		}
		target := n.Inputs[1]
		var keep string // where the target is not ignore_index (bool)
		if n.HasAttr("ignore_index") {
			ii, err := n.Int("ignore_index", 0)
			if err != nil {
				return nil, err
			}
			k := e.constant(&graph.Tensor{DType: c.DType(1), Shape: []int{}, I64: []int64{ii}})
			keep = e.op("Not", nil, e.op("Equal", nil, target, k))
			zero := e.constant(&graph.Tensor{DType: c.DType(1), Shape: []int{}, I64: []int64{0}})
			target = e.op("Where", nil, keep, target, zero)
		}
		picked := e.squeeze(e.op("GatherElements", map[string]graph.Attr{"axis": intAttr(1)}, in, e.unsqueeze(target, 1)), 1)
		loss := e.op("Neg", nil, picked)
		w := "" // each element's weight, when not 1
		if c.Has(2) {
			w = e.op("Gather", nil, n.Inputs[2], target)
		}
		if keep != "" {
			mask := e.op("Cast", map[string]graph.Attr{"to": intAttr(int64(graph.Float32.ONNX()))}, keep)
			if w == "" {
				w = mask
			} else {
				w = e.op("Mul", nil, w, mask)
			}
		}
		if w != "" {
			loss = e.op("Mul", nil, loss, w)
		}
		switch red {
		case "sum":
			loss = e.reduce("ReduceSum", loss, nil, false)
		case "mean":
			total := e.reduce("ReduceSum", loss, nil, false)
			if w != "" {
				loss = e.op("Div", nil, total, e.reduce("ReduceSum", w, nil, false))
			} else {
				loss = e.op("Div", nil, total, e.scalar(float32(graph.NumElems(t))))
			}
		}
		e.write(n.Outputs[0], "Identity", nil, loss)
		return e.nodes, nil
	}
}
