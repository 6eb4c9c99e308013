package frontend

import (
	"fmt"
	"slices"

	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/ops"
)

// maxFoldTotal caps the elements shape inference evaluates over a whole
// graph, so that many large constant nodes cannot exhaust memory either
// (one tensor is capped by ops.MaxFoldElems).
const maxFoldTotal = 1 << 26

// InferShapes gives every value of g its dtype and static shape, op by op
// in topological order, by the rules of package ops (ops.Op), and works
// out the contents of values computed from constants and shapes when the
// op has an evaluator (Shape, Gather, Concat, arithmetic, ... — Op.Eval),
// recording them in Value.Known. A node whose op expands (Op.Expand: an If
// whose condition is known by then, a recurrent op) is replaced by the
// nodes it expands to, which are inferred in turn. Every graph input must
// be bound first (see Graph.Bind). It fails on an op it does not know (a
// *graph.UnsupportedOpError), on inconsistent shapes, on an output that
// contradicts its declared type (Graph.CheckDeclared), and when an op
// needs the contents of a run-time value (a *graph.NotConstantError; a
// *graph.ControlFlowError for an If).
func InferShapes(g *graph.Graph) error {
	if err := g.CheckBound(); err != nil {
		return err
	}
	if err := g.Validate(); err != nil {
		return err
	}
	for _, n := range g.Nodes {
		for _, o := range n.Outputs {
			if v := g.Values[o]; o != "" && v != nil && v.Const == nil {
				v.DType, v.Shape, v.Known = graph.Undefined, nil, nil
			}
		}
	}
	budget := maxFoldTotal
	added := 0
	for i := 0; i < len(g.Nodes); i++ {
		n := g.Nodes[i]
		if op := ops.LookupNode(n); op != nil && op.Expand != nil {
			nodes, err := expandNode(g, n, op)
			if err != nil {
				return err
			}
			if len(nodes) == 1 && nodes[0] == n && op.HasShapeRule() { // kept: inferred by its rule
				if err := inferNode(g, n, &budget); err != nil {
					return err
				}
				continue
			}
			if added += len(nodes); added > maxExpandNodes {
				return n.Errorf("expanding it makes the graph more than %d nodes larger", maxExpandNodes)
			}
			g.Nodes = slices.Replace(g.Nodes, i, i+1, nodes...)
			i-- // infer the first of the new nodes next
			continue
		}
		if err := inferNode(g, n, &budget); err != nil {
			return err
		}
	}
	if added > 0 {
		if err := g.Validate(); err != nil {
			return fmt.Errorf("after expanding nodes: %w", err)
		}
	}
	return g.CheckDeclared()
}

// maxExpandNodes bounds the nodes expansion may add to one graph (an LSTM
// over a long sequence, nested Ifs), so a malicious model cannot make
// inference loop or exhaust memory.
const maxExpandNodes = 1 << 18

// expandNode returns the nodes that replace n, with their output values
// created.
func expandNode(g *graph.Graph, n *graph.Node, op *ops.Op) ([]*graph.Node, error) {
	c, err := inferCtx(g, n, op)
	if err != nil {
		return nil, err
	}
	nodes, err := op.Expand(c)
	if err != nil {
		return nil, err
	}
	for _, m := range nodes {
		if m.Attrs == nil {
			m.Attrs = map[string]graph.Attr{}
		}
		for _, o := range m.Outputs {
			if o != "" {
				g.Value(o)
			}
		}
	}
	return nodes, nil
}

// inferNode infers n's outputs; budget is the number of elements
// evaluation may still produce.
func inferNode(g *graph.Graph, n *graph.Node, budget *int) error {
	op := ops.LookupNode(n)
	if op == nil {
		return &graph.UnsupportedOpError{Op: n.OpType, Domain: n.Domain, Opset: g.OpsetOf(n), Node: n.Name}
	}
	c, err := inferCtx(g, n, op)
	if err != nil {
		return err
	}
	if err := op.InferNode(c); err != nil {
		return err
	}
	return evalNode(c, op, budget)
}

// inferCtx checks n's arity and that its inputs are inferred, and returns
// the context its op's rules see.
func inferCtx(g *graph.Graph, n *graph.Node, op *ops.Op) (*ops.InferCtx, error) {
	opset := g.OpsetOf(n)
	nin := len(n.Inputs)
	for nin > 0 && n.Inputs[nin-1] == "" {
		nin--
	}
	if nin < op.MinIn || (op.MaxIn >= 0 && nin > op.MaxIn) {
		return nil, n.Errorf("%d inputs (want %d to %d)", nin, op.MinIn, op.MaxIn)
	}
	c := &ops.InferCtx{G: g, N: n, Opset: opset, In: make([]*graph.Value, nin), Out: make([]*graph.Value, len(n.Outputs))}
	for i := range nin {
		name := n.Inputs[i]
		if name == "" {
			continue
		}
		v := g.Values[name]
		if v == nil || v.DType == graph.Undefined || v.Shape == nil {
			return nil, n.Errorf("input %d (%s) has no type or shape", i, name)
		}
		c.In[i] = v
	}
	if len(n.Outputs) == 0 {
		return nil, n.Errorf("no outputs")
	}
	for i, o := range n.Outputs {
		if o != "" {
			c.Out[i] = g.Value(o)
		}
	}
	return c, nil
}

// evalNode checks the outputs the shape rule gave, and evaluates them when
// the inputs are known and the op has an evaluator.
func evalNode(c *ops.InferCtx, op *ops.Op, budget *int) error {
	g, n := c.G, c.N
	for i, v := range c.Out {
		if v == nil {
			continue
		}
		if v.DType == graph.Undefined || v.Shape == nil {
			return n.Errorf("output %d (%s): no shape inferred", i, v.Name)
		}
		if err := checkElems(v.Shape); err != nil {
			return n.Errorf("output %s: %v", v.Name, err)
		}
	}
	if op.Eval == nil {
		return nil
	}
	ins := make([]*graph.Tensor, len(c.In))
	for i, v := range c.In {
		if v == nil {
			continue
		}
		if ins[i] = g.ConstOf(v.Name); ins[i] == nil && !op.ShapesOnly {
			return nil
		}
	}
	size := 0
	for _, v := range c.Out {
		if v != nil {
			size += graph.NumElems(v.Shape)
		}
	}
	if n.OpType == "Constant" {
		size = 0 // its tensor is already in memory
	}
	if size > ops.MaxFoldElems || size > *budget {
		return nil
	}
	*budget -= size
	res, err := op.Eval(c, ins)
	if err != nil {
		return err
	}
	for i, t := range res {
		if i >= len(c.Out) || c.Out[i] == nil || t == nil {
			continue
		}
		if v := c.Out[i]; t.DType != v.DType || !slices.Equal(t.Shape, v.Shape) {
			return n.Errorf("internal error: output %s evaluates to %s%v but is inferred as %s%v", v.Name, t.DType, t.Shape, v.DType, v.Shape)
		}
		c.Out[i].Known = t
	}
	return nil
}

func checkElems(shape []int) error {
	n := 1
	for _, d := range shape {
		if d < 0 {
			return fmt.Errorf("negative dimension in %v", shape)
		}
		if d > 0 && n > graph.MaxElems/d {
			return fmt.Errorf("shape %v has more than %d elements", shape, graph.MaxElems)
		}
		n *= d
	}
	return nil
}
