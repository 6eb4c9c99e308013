package ops

import (
	"errors"
	"fmt"
	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/te"
	"github.com/tessera-ml/tessera/tir"
	"slices"
)

// TensorSource returns the te tensor for a graph value read by a node: an
// already lowered value, or a new placeholder for a graph input or a
// constant.
type TensorSource func(name string) (*te.Tensor, error)

// LowerNode maps node n of g to te tensors, one per output of n (nil for
// an omitted output); src supplies the tensors of the values n reads as
// data. Operands that parametrize the op (Reshape's shape, Clip's bounds,
// axes, ...) must be constants and become attributes of the compute.
// Unsupported ops fail with "unsupported op X (opset N) at node NAME";
// errors name the node.
func LowerNode(g *graph.Graph, n *graph.Node, src TensorSource) ([]*te.Tensor, error) {
	opset := g.OpsetOf(n)
	op := table[n.OpType]
	if op == nil || op.Lower == nil || !defaultDomain(n) {
		return nil, &graph.UnsupportedOpError{Op: n.OpType, Domain: n.Domain, Opset: opset, Node: n.Name}
	}
	for _, o := range n.Outputs {
		if v := g.Values[o]; o != "" && v != nil {
			if err := CheckShape(o, v.Shape); err != nil {
				return nil, fmt.Errorf("%s at node %s: %w", n.OpType, n.Name, err)
			}
		}
	}
	outs, err := op.Lower(&lowerCtx{g: g, n: n, opset: opset, src: src})
	if err != nil {
		return nil, lowerError(n, err)
	}
	for i, t := range outs {
		if i < len(n.Outputs) && t != nil {
			if v := g.Values[n.Outputs[i]]; v != nil && !slices.Equal(v.Shape, t.Shape) {
				return nil, n.Errorf("lowered output %s has shape %v, shape inference says %v", n.Outputs[i], t.Shape, v.Shape)
			}
			outs[i] = stored(n.Outputs[i], t, Storage(g, n.Outputs[i]))
		}
	}
	return outs, nil
}

// lowerError names the node in a lowering error, unless the error already
// says what is unsupported or which operand must be constant.
func lowerError(n *graph.Node, err error) error {
	var uo *graph.UnsupportedOpError
	var nc *graph.NotConstantError
	if errors.As(err, &uo) || errors.As(err, &nc) || errors.Is(err, graph.ErrUnsupported) {
		return err
	}
	return n.Errorf("%v", err)
}

// CheckShape rejects empty values, which te cannot hold.
func CheckShape(name string, shape []int) error {
	for _, d := range shape {
		if d == 0 {
			return graph.Unsupportedf("value %s is empty (shape %v)", name, shape)
		}
	}
	return nil
}

// lowerCtx is what a lowering function sees.
type lowerCtx struct {
	g      *graph.Graph
	n      *graph.Node
	opset  int
	src    TensorSource
	consts int // scalar constants made so far
}

// name is the te name of output i (intermediates add a suffix).
func (c *lowerCtx) name(i int) string { return c.n.Outputs[i] }

func (c *lowerCtx) sub(suffix string) string { return c.n.Outputs[0] + "_" + suffix }

// in returns data input i as float32 (see Storage).
func (c *lowerCtx) in(i int) (*te.Tensor, error) {
	t, err := c.raw(i)
	if err != nil {
		return nil, err
	}
	return floatView(c.n.Input(i)+"_f32", t), nil
}

// raw returns data input i in its storage type, for a lowering that
// computes on integers.
func (c *lowerCtx) raw(i int) (*te.Tensor, error) {
	name := c.n.Input(i)
	if name == "" {
		return nil, fmt.Errorf("input %d is missing", i)
	}
	return c.src(name)
}

// opt returns optional data input i, or nil.
func (c *lowerCtx) opt(i int) (*te.Tensor, error) {
	if c.n.Input(i) == "" {
		return nil, nil
	}
	return c.in(i)
}

// ins returns every data input.
func (c *lowerCtx) ins() ([]*te.Tensor, error) {
	out := make([]*te.Tensor, len(c.n.Inputs))
	for i := range c.n.Inputs {
		t, err := c.in(i)
		if err != nil {
			return nil, err
		}
		out[i] = t
	}
	return out, nil
}

func (c *lowerCtx) ints(attr string) ([]int, error) {
	v, err := c.n.Ints(attr)
	if err != nil || v == nil {
		return nil, err
	}
	return toInts(v), nil
}

// intsParam is graph.IntsParam for this node, converted to int.
func (c *lowerCtx) intsParam(i int, attr, what string) ([]int, bool, error) {
	v, ok, err := graph.IntsParam(c.g, c.n, i, attr, what)
	return toInts(v), ok, err
}

// scalar returns a constant rank-0 tensor (inlined into its readers).
func (c *lowerCtx) scalar(v float64) *te.Tensor {
	c.consts++
	return te.Compute(fmt.Sprintf("%s_c%d", c.n.Outputs[0], c.consts), []int{}, func([]tir.Expr) tir.Expr { return tir.F32(v) })
}

// lowerWithInts lowers an op of one data input and one integer list that
// is the attribute attr in older opsets and the second input in newer ones
// (Squeeze and Unsqueeze axes from opset 13, Expand's shape always).
func lowerWithInts(attr, what string, op func(name string, x *te.Tensor, v []int) (*te.Tensor, error)) func(c *lowerCtx) ([]*te.Tensor, error) {
	return func(c *lowerCtx) ([]*te.Tensor, error) {
		x, err := c.in(0)
		if err != nil {
			return nil, err
		}
		v, _, err := c.intsParam(1, attr, what)
		if err != nil {
			return nil, err
		}
		return one(op(c.name(0), x, v))
	}
}

func one(t *te.Tensor, err error) ([]*te.Tensor, error) {
	if err != nil {
		return nil, err
	}
	return []*te.Tensor{t}, nil
}

// outShape returns the inferred shape of output i.
func (c *lowerCtx) outShape(i int) []int { return c.g.Values[c.n.Outputs[i]].Shape }

// dtype returns the graph dtype of input i (Undefined when omitted).
func (c *lowerCtx) dtype(i int) graph.DType {
	if v := c.g.Values[c.n.Input(i)]; v != nil {
		return v.DType
	}
	return graph.Undefined
}

// elementwise lowers the op to one broadcasting stage over its inputs.
func elementwise(f func(c *lowerCtx, v []tir.Expr) tir.Expr) func(c *lowerCtx) ([]*te.Tensor, error) {
	return func(c *lowerCtx) ([]*te.Tensor, error) {
		xs, err := c.ins()
		if err != nil {
			return nil, err
		}
		return one(te.Elementwise(c.name(0), xs, func(v []tir.Expr) tir.Expr { return f(c, v) }))
	}
}

// boolE is a tir condition as a float32 0 or 1.
func boolE(cond tir.Expr) tir.Expr { return tir.SelectE(cond, tir.F32(1), tir.F32(0)) }

// truthE is a float32 value as a tir condition (nonzero).
func truthE(v tir.Expr) tir.Expr { return tir.Cmp(tir.NE, v, tir.F32(0)) }

// truncE rounds toward zero, as a C cast to an integer does.
func truncE(v tir.Expr) tir.Expr { return tir.CallE("trunc", v) }

// EvalGraph runs the whole of graph g (shapes inferred) on inputs, by
// name, with the reference evaluator (te's Eval of its nodes' lowerings),
// and returns its outputs in order. Graph inputs and outputs cross as
// float32 values whatever their type (Storage). It is meant for small
// graphs that the passes evaluate whole: the tables of lookup-tables.
func EvalGraph(g *graph.Graph, inputs map[string][]float32) ([][]float32, error) {
	vals := map[string]*te.Tensor{}
	src := func(name string) (*te.Tensor, error) {
		if t, ok := vals[name]; ok {
			return t, nil
		}
		v := g.Values[name]
		if v == nil || (v.Const == nil && !g.IsInput(name)) {
			return nil, fmt.Errorf("value %s is read before it is computed", name)
		}
		t := Placeholder(g, name)
		vals[name] = t
		return t, nil
	}
	for _, n := range g.Nodes {
		outs, err := LowerNode(g, n, src)
		if err != nil {
			return nil, err
		}
		for i, o := range n.Outputs {
			if o != "" && i < len(outs) {
				vals[o] = outs[i]
			}
		}
	}
	outs := make([]*te.Tensor, len(g.Outputs))
	for i, o := range g.Outputs {
		t, err := src(o)
		if err != nil {
			return nil, err
		}
		if t.IsPlaceholder() {
			return nil, fmt.Errorf("output %s is not computed", o)
		}
		outs[i] = t
	}
	d, err := te.NewDAG(outs...)
	if err != nil {
		return nil, err
	}
	feed := make([][]float32, len(d.Inputs))
	for i, t := range d.Inputs {
		if g.Values[t.Name] != nil && g.Values[t.Name].Const != nil {
			if feed[i], _, err = ConstSlots(g, t.Name); err != nil {
				return nil, err
			}
			continue
		}
		data, ok := inputs[t.Name]
		if !ok {
			return nil, fmt.Errorf("no data for graph input %s", t.Name)
		}
		feed[i] = data
	}
	return d.Eval(feed)
}
