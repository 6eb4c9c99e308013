package graph

import (
	"fmt"
	"slices"
)

// MaxFoldElems caps the size of a tensor that shape inference evaluates
// (and constant folding materializes): larger constant subgraphs are left to
// run time, and a malicious model cannot make the compiler allocate
// gigabytes.
const MaxFoldElems = 1 << 22

// maxFoldTotal caps the elements shape inference evaluates over a whole
// graph, so that many large constant nodes cannot exhaust memory either.
const maxFoldTotal = 1 << 26

// MaxElems caps the element count of any value's static shape.
const MaxElems = 1 << 40

// InferShapes gives every value its dtype and static shape, op by op in
// topological order, and works out the contents of values computed from
// constants and shapes when the op has an evaluator (Shape, Gather,
// Concat, arithmetic, ... — see opTable), recording them in Value.Known.
// Every graph input must be bound first (see Bind). It fails on an op it
// does not know (an *UnsupportedOpError), on inconsistent shapes, and when
// an op needs the contents of a run-time value (a *NotConstantError).
func (g *Graph) InferShapes() error {
	if err := g.checkBound(); err != nil {
		return err
	}
	if err := g.Validate(); err != nil {
		return err
	}
	for _, n := range g.Nodes {
		for _, o := range n.Outputs {
			if v := g.Values[o]; o != "" && v != nil && v.Const == nil {
				v.DType, v.Shape, v.Known = Undefined, nil, nil
			}
		}
	}
	budget := maxFoldTotal
	for _, n := range g.Nodes {
		if err := g.inferNode(n, &budget); err != nil {
			return err
		}
	}
	return nil
}

// inferCtx is what an op's infer and eval functions see.
type inferCtx struct {
	g     *Graph
	n     *Node
	opset int
	in    []*Value // nil for an omitted optional input
	out   []*Value // nil for an omitted optional output
}

// opInfo is what the graph knows of an op: how to infer its outputs'
// shapes and dtypes, and optionally how to evaluate it on constant inputs.
type opInfo struct {
	infer func(c *inferCtx) error
	eval  func(c *inferCtx, in []*Tensor) ([]*Tensor, error)
	// minIn and maxIn bound the number of inputs (maxIn < 0: unbounded).
	minIn, maxIn int
}

// KnownOp reports whether the graph can infer shapes for op type op of
// the default domain.
func KnownOp(op string) bool {
	_, ok := opTable[op]
	return ok
}

// inferNode infers n's outputs; budget is the number of elements
// evaluation may still produce.
func (g *Graph) inferNode(n *Node, budget *int) error {
	opset := g.OpsetOf(n)
	info, ok := opTable[n.OpType]
	if !ok || (n.Domain != "" && n.Domain != "ai.onnx") {
		return &UnsupportedOpError{Op: n.OpType, Domain: n.Domain, Opset: opset, Node: n.Name}
	}
	nin := len(n.Inputs)
	for nin > 0 && n.Inputs[nin-1] == "" {
		nin--
	}
	if nin < info.minIn || (info.maxIn >= 0 && nin > info.maxIn) {
		return n.Errorf("%d inputs (want %d to %d)", nin, info.minIn, info.maxIn)
	}
	c := &inferCtx{g: g, n: n, opset: opset, in: make([]*Value, nin), out: make([]*Value, len(n.Outputs))}
	for i := range nin {
		name := n.Inputs[i]
		if name == "" {
			continue
		}
		v := g.Values[name]
		if v == nil || v.DType == Undefined || v.Shape == nil {
			return n.Errorf("input %d (%s) has no type or shape", i, name)
		}
		c.in[i] = v
	}
	if len(n.Outputs) == 0 {
		return n.Errorf("no outputs")
	}
	for i, o := range n.Outputs {
		if o != "" {
			c.out[i] = g.Value(o)
		}
	}
	if err := info.infer(c); err != nil {
		return err
	}
	for i, v := range c.out {
		if v == nil {
			continue
		}
		if v.DType == Undefined || v.Shape == nil {
			return n.Errorf("output %d (%s): no shape inferred", i, v.Name)
		}
		if err := checkElems(v.Shape); err != nil {
			return n.Errorf("output %s: %v", v.Name, err)
		}
	}
	if info.eval == nil {
		return nil
	}
	ins := make([]*Tensor, len(c.in))
	for i, v := range c.in {
		if v == nil {
			continue
		}
		if ins[i] = g.ConstOf(v.Name); ins[i] == nil && n.OpType != "Shape" && n.OpType != "Size" {
			return nil
		}
	}
	size := 0
	for _, v := range c.out {
		if v != nil {
			size += NumElems(v.Shape)
		}
	}
	if n.OpType == "Constant" {
		size = 0 // its tensor is already in memory
	}
	if size > MaxFoldElems || size > *budget {
		return nil
	}
	*budget -= size
	res, err := info.eval(c, ins)
	if err != nil {
		return err
	}
	for i, t := range res {
		if i >= len(c.out) || c.out[i] == nil || t == nil {
			continue
		}
		if v := c.out[i]; t.DType != v.DType || !slices.Equal(t.Shape, v.Shape) {
			return n.Errorf("internal error: output %s evaluates to %s%v but is inferred as %s%v", v.Name, t.DType, t.Shape, v.DType, v.Shape)
		}
		c.out[i].Known = t
	}
	return nil
}

func checkElems(shape []int) error {
	n := 1
	for _, d := range shape {
		if d < 0 {
			return fmt.Errorf("negative dimension in %v", shape)
		}
		if d > 0 && n > MaxElems/d {
			return fmt.Errorf("shape %v has more than %d elements", shape, MaxElems)
		}
		n *= d
	}
	return nil
}

// Helpers for the infer functions.

func (c *inferCtx) errorf(format string, args ...any) error { return c.n.Errorf(format, args...) }

// set gives output i its dtype and shape (a nil output is skipped).
func (c *inferCtx) set(i int, dt DType, shape []int) {
	if i < len(c.out) && c.out[i] != nil {
		c.out[i].DType = dt
		c.out[i].Shape = slices.Clone(shape)
		if c.out[i].Shape == nil {
			c.out[i].Shape = []int{}
		}
	}
}

// has reports whether input i is given.
func (c *inferCtx) has(i int) bool { return i < len(c.in) && c.in[i] != nil }

// shape returns input i's shape.
func (c *inferCtx) shape(i int) []int { return c.in[i].Shape }

// dtype returns input i's dtype.
func (c *inferCtx) dtype(i int) DType { return c.in[i].DType }

// needFloat checks that input i is float32.
func (c *inferCtx) needFloat(i int) error {
	if c.has(i) && c.in[i].DType != Float32 {
		return c.errorf("input %d (%s) is %s, want float32", i, c.in[i].Name, c.in[i].DType)
	}
	return nil
}

// constant returns the contents of input i, or a *NotConstantError.
func (c *inferCtx) constant(i int, what string) (*Tensor, error) {
	t := c.g.ConstOf(c.in[i].Name)
	if t == nil {
		return nil, &NotConstantError{Value: c.in[i].Name, Node: c.n.Name, Op: c.n.OpType, What: what}
	}
	return t, nil
}

// intsParam returns an integer list given either as input i (opsets where
// it is an input) or as attribute attr (opsets where it is an attribute).
// ok is false when neither is given.
func (c *inferCtx) intsParam(i int, attr, what string) (vals []int64, ok bool, err error) {
	return IntsParam(c.g, c.n, i, attr, what)
}

// IntsParam returns an integer list operand of node n given either as input
// i (in the opsets where it is an input) or as attribute attr (in the older
// opsets where it is an attribute): ok is false when neither is given. An
// input must be constant (else a *NotConstantError); what names it in
// errors.
func IntsParam(g *Graph, n *Node, i int, attr, what string) (vals []int64, ok bool, err error) {
	if name := n.Input(i); name != "" {
		t := g.ConstOf(name)
		if t == nil {
			return nil, false, &NotConstantError{Value: name, Node: n.Name, Op: n.OpType, What: what}
		}
		if t.DType != Int64 {
			return nil, false, n.Errorf("%s input %s is %s, want int64", what, name, t.DType)
		}
		return t.I64, true, nil
	}
	if attr == "" || !n.HasAttr(attr) {
		return nil, false, nil
	}
	v, err := n.Ints(attr)
	return v, err == nil, err
}

// FloatParam returns a scalar float operand of node n given either as input
// i or as attribute attr; ok is false when neither is given.
func FloatParam(g *Graph, n *Node, i int, attr, what string) (v float32, ok bool, err error) {
	if name := n.Input(i); name != "" {
		t := g.ConstOf(name)
		if t == nil {
			return 0, false, &NotConstantError{Value: name, Node: n.Name, Op: n.OpType, What: what}
		}
		if t.Len() != 1 {
			return 0, false, n.Errorf("%s input %s has shape %v, want a scalar", what, name, t.Shape)
		}
		return float32(t.Float64s()[0]), true, nil
	}
	if attr == "" || !n.HasAttr(attr) {
		return 0, false, nil
	}
	v, err = n.Float(attr, 0)
	return v, err == nil, err
}

// normAxis maps axis in [-rank, rank) to [0, rank).
func (c *inferCtx) normAxis(axis int64, rank int) (int, error) {
	if axis < -int64(rank) || axis >= int64(rank) {
		return 0, c.errorf("axis %d out of range for rank %d", axis, rank)
	}
	if axis < 0 {
		axis += int64(rank)
	}
	return int(axis), nil
}

// normAxes normalizes axes, rejecting duplicates.
func (c *inferCtx) normAxes(axes []int64, rank int) ([]int, error) {
	out := make([]int, len(axes))
	seen := map[int]bool{}
	for i, a := range axes {
		n, err := c.normAxis(a, rank)
		if err != nil {
			return nil, err
		}
		if seen[n] {
			return nil, c.errorf("axis %d repeated in %v", a, axes)
		}
		seen[n] = true
		out[i] = n
	}
	return out, nil
}

// broadcast returns the multidirectional broadcast of shapes.
func broadcast(shapes ...[]int) ([]int, bool) {
	rank := 0
	for _, s := range shapes {
		rank = max(rank, len(s))
	}
	out := make([]int, rank)
	for i := range out {
		out[i] = 1
	}
	for _, s := range shapes {
		off := rank - len(s)
		for i, d := range s {
			switch o := out[off+i]; {
			case d == o || d == 1:
			case o == 1:
				out[off+i] = d
			default:
				return nil, false
			}
		}
	}
	return out, true
}

func toInts(v []int64) []int {
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x)
	}
	return out
}
