package graph

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
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
// Concat, arithmetic, ... — see RegisterOp), recording them in Value.Known.
// A node whose op expands (OpRule.Expand: an If whose condition is known
// by then, a recurrent op) is replaced by the nodes it expands to, which
// are inferred in turn. Every graph input must be bound first (see Bind).
// It fails on an op it does not know (an *UnsupportedOpError), on
// inconsistent shapes, and when an op needs the contents of a run-time
// value (a *NotConstantError; a *ControlFlowError for an If).
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
	added := 0
	for i := 0; i < len(g.Nodes); i++ {
		n := g.Nodes[i]
		if r, ok := rules[n.OpType]; ok && r.Expand != nil && defaultDomain(n) {
			nodes, err := g.expandNode(n, r)
			if err != nil {
				return err
			}
			if len(nodes) == 1 && nodes[0] == n && r.Infer != nil { // kept: inferred by its rule
				if err := g.inferNode(n, &budget); err != nil {
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
		if err := g.inferNode(n, &budget); err != nil {
			return err
		}
	}
	if added > 0 {
		if err := g.Validate(); err != nil {
			return fmt.Errorf("after expanding nodes: %w", err)
		}
	}
	return g.checkDeclared()
}

// checkDeclared compares every output with the type the model declares
// for it: a declared static dimension or dtype that the graph does not
// compute means the file contradicts itself (or tessera misreads an op),
// and nothing built from it could be trusted.
func (g *Graph) checkDeclared() error {
	for _, name := range g.Outputs {
		d, ok := g.Declared[name]
		v := g.Values[name]
		if !ok || v == nil {
			continue
		}
		if d.DType != Undefined && v.DType != Undefined && d.DType != v.DType {
			return fmt.Errorf("output %s is declared %s, but the graph computes %s", name, d.DType, v.DType)
		}
		if d.Shape == nil || v.Shape == nil {
			continue
		}
		bad := len(d.Shape) != len(v.Shape)
		for i := 0; !bad && i < len(d.Shape); i++ {
			bad = d.Shape[i] >= 0 && d.Shape[i] != v.Shape[i]
		}
		if bad {
			return fmt.Errorf("output %s is declared with shape %s, but the graph computes %s", name, dimsString(d.Shape), dimsString(v.Shape))
		}
	}
	return nil
}

// dimsString prints a shape as [d0,d1,...], "?" for a dynamic dimension.
func dimsString(shape []int) string {
	parts := make([]string, len(shape))
	for i, d := range shape {
		if d < 0 {
			parts[i] = "?"
		} else {
			parts[i] = strconv.Itoa(d)
		}
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// maxExpandNodes bounds the nodes expansion may add to one graph (an LSTM
// over a long sequence, nested Ifs), so a malicious model cannot make
// inference loop or exhaust memory.
const maxExpandNodes = 1 << 18

func defaultDomain(n *Node) bool { return n.Domain == "" || n.Domain == "ai.onnx" }

// expandNode returns the nodes that replace n, with their output values
// created.
func (g *Graph) expandNode(n *Node, r OpRule) ([]*Node, error) {
	c, err := g.inferCtx(n, r)
	if err != nil {
		return nil, err
	}
	nodes, err := r.Expand(c)
	if err != nil {
		return nil, err
	}
	for _, m := range nodes {
		if m.Attrs == nil {
			m.Attrs = map[string]Attr{}
		}
		for _, o := range m.Outputs {
			if o != "" {
				g.Value(o)
			}
		}
	}
	return nodes, nil
}

// InferCtx is what an op's infer and eval functions see.
type InferCtx struct {
	G     *Graph
	N     *Node
	Opset int
	In    []*Value // nil for an omitted optional input
	Out   []*Value // nil for an omitted optional output
}

// OpRule is what the graph knows of an op: how to infer its outputs'
// shapes and dtypes, and optionally how to evaluate it on constant inputs.
// Package ops defines every op and registers its rule with RegisterOp.
type OpRule struct {
	Infer func(c *InferCtx) error
	Eval  func(c *InferCtx, in []*Tensor) ([]*Tensor, error)
	// Expand, when set, replaces the node by the nodes it returns, once its
	// inputs' shapes (and the contents shape inference knows) are known:
	// they must write the node's outputs, and their other outputs must be
	// new names (Graph.FreshName); constants they need are added with
	// Graph.AddConst. An op that expands has no Infer, unless it expands
	// in some forms only: then Expand returns the node itself (alone) for
	// a form it keeps, which Infer then infers.
	Expand func(c *InferCtx) ([]*Node, error)
	// MinIn and MaxIn bound the number of inputs (MaxIn < 0: unbounded).
	MinIn, MaxIn int
	// ShapesOnly says that Eval reads only its inputs' shapes (Shape,
	// Size, EyeLike): it runs whether or not their contents are known, a
	// nil tensor standing for an input computed at run time.
	ShapesOnly bool
	// Layout is what the layout pass may do with the op.
	Layout Layout
	// PermuteAxes, for a LayoutAxes op, rewrites node n to compute on
	// inputs whose axes are permuted by perm (axis i of a permuted input is
	// axis perm[i] of the original) what it computed on the originals,
	// its outputs permuted alike. New constants are added to g; n's
	// attribute map may be shared with other nodes and is replaced, not
	// written. It reports false, n unchanged, where it cannot (axes
	// computed at run time).
	PermuteAxes func(g *Graph, n *Node, perm []int) bool
	// Copy says when the op's first output is its first input's data.
	Copy Copy
	// CopyIf, for an op whose Copy is CopyNever, reports whether node n
	// copies its first input all the same, with the attributes and
	// constant inputs it has (a Transpose by the identity permutation, a
	// Pad by zeros). The output's shape and dtype are checked by the
	// caller.
	CopyIf func(g *Graph, n *Node) bool
}

// Copy says when an op's first output is its first input's data, for the
// passes that remove copies (remove-noops) and merge reshapes.
type Copy uint8

const (
	// CopyNever: the op computes (the default).
	CopyNever Copy = iota
	// CopyReshape: the output holds the input's elements in the same
	// order, only the shape may differ (Identity, Reshape, Flatten,
	// Squeeze, Unsqueeze): a copy where the shapes are equal, and a
	// reshape of such a value is one Reshape of the first.
	CopyReshape
	// CopyWhenUnchanged: a copy where the output has the input's shape and
	// dtype (Expand, Cast, Dropout in inference mode).
	CopyWhenUnchanged
)

// CopyOf returns the copy rule of node n's op (CopyNever for an op of
// another domain or an unknown one).
func CopyOf(n *Node) Copy { return ruleOf(n).Copy }

// ruleOf returns the registered rule of node n's op: the zero rule for an
// op of another domain or an unknown one.
func ruleOf(n *Node) OpRule {
	if !defaultDomain(n) {
		return OpRule{}
	}
	return rules[n.OpType]
}

// Layout says what the layout pass (convert-layout) may do with an op: how
// the op's meaning depends on the order of its inputs' axes.
type Layout uint8

const (
	// LayoutFixed: the op reads its inputs in the layout the model gives
	// them (the default).
	LayoutFixed Layout = iota
	// LayoutFree: each output element is computed from the same element
	// of every input, with numpy broadcasting (Relu, Add, Where): the op
	// runs in any layout, its constant operands permuted alike.
	LayoutFree
	// LayoutChannelsLast: a 2-D sliding-window op with a channels-last
	// form, chosen by its data_layout attribute (Conv, the pools).
	LayoutChannelsLast
	// LayoutAxes: the op works along axes that its attributes or constant
	// inputs name and is otherwise layout-free (Concat, Split, Slice,
	// Pad): its rule's PermuteAxes renames them for permuted inputs.
	LayoutAxes
	// LayoutTranspose: the op permutes its input's axes by its perm
	// attribute (Transpose): on a permuted input it permutes by the
	// composition.
	LayoutTranspose
)

// LayoutOf returns the layout rule of node n's op (LayoutFixed for an op
// of another domain or an unknown one).
func LayoutOf(n *Node) Layout { return ruleOf(n).Layout }

// permuteAxes runs node n's PermuteAxes (false for an op without one).
func (g *Graph) permuteAxes(n *Node, perm []int) bool {
	f := ruleOf(n).PermuteAxes
	return f != nil && f(g, n, perm)
}

// rules holds the registered op rules by op type (default domain).
var rules = map[string]OpRule{}

// RegisterOp makes op type op known to shape inference. It is called from
// package ops' initialization; registering an op twice panics.
func RegisterOp(op string, r OpRule) {
	if _, dup := rules[op]; dup {
		panic("graph: op " + op + " registered twice")
	}
	if r.Infer == nil && r.Expand == nil {
		panic("graph: op " + op + " must have Infer or Expand (or both: an op that expands in some forms only)")
	}
	rules[op] = r
}

// KnownOp reports whether the graph can infer shapes for op type op of
// the default domain.
func KnownOp(op string) bool {
	_, ok := rules[op]
	return ok
}

// inferNode infers n's outputs; budget is the number of elements
// evaluation may still produce.
func (g *Graph) inferNode(n *Node, budget *int) error {
	info, ok := rules[n.OpType]
	if !ok || !defaultDomain(n) {
		return &UnsupportedOpError{Op: n.OpType, Domain: n.Domain, Opset: g.OpsetOf(n), Node: n.Name}
	}
	c, err := g.inferCtx(n, info)
	if err != nil {
		return err
	}
	if err := info.Infer(c); err != nil {
		return err
	}
	return g.evalNode(c, info, budget)
}

// inferCtx checks n's arity and that its inputs are inferred, and returns
// the context its rule sees.
func (g *Graph) inferCtx(n *Node, info OpRule) (*InferCtx, error) {
	opset := g.OpsetOf(n)
	nin := len(n.Inputs)
	for nin > 0 && n.Inputs[nin-1] == "" {
		nin--
	}
	if nin < info.MinIn || (info.MaxIn >= 0 && nin > info.MaxIn) {
		return nil, n.Errorf("%d inputs (want %d to %d)", nin, info.MinIn, info.MaxIn)
	}
	c := &InferCtx{G: g, N: n, Opset: opset, In: make([]*Value, nin), Out: make([]*Value, len(n.Outputs))}
	for i := range nin {
		name := n.Inputs[i]
		if name == "" {
			continue
		}
		v := g.Values[name]
		if v == nil || v.DType == Undefined || v.Shape == nil {
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

// evalNode checks the outputs Infer gave, and evaluates them when the
// inputs are known and the rule has an evaluator.
func (g *Graph) evalNode(c *InferCtx, info OpRule, budget *int) error {
	n := c.N
	for i, v := range c.Out {
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
	if info.Eval == nil {
		return nil
	}
	ins := make([]*Tensor, len(c.In))
	for i, v := range c.In {
		if v == nil {
			continue
		}
		if ins[i] = g.ConstOf(v.Name); ins[i] == nil && !info.ShapesOnly {
			return nil
		}
	}
	size := 0
	for _, v := range c.Out {
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
	res, err := info.Eval(c, ins)
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
		if d > 0 && n > MaxElems/d {
			return fmt.Errorf("shape %v has more than %d elements", shape, MaxElems)
		}
		n *= d
	}
	return nil
}

// Helpers for the infer functions.

func (c *InferCtx) Errorf(format string, args ...any) error { return c.N.Errorf(format, args...) }

// set gives output i its dtype and shape (a nil output is skipped).
func (c *InferCtx) Set(i int, dt DType, shape []int) {
	if i < len(c.Out) && c.Out[i] != nil {
		c.Out[i].DType = dt
		c.Out[i].Shape = slices.Clone(shape)
		if c.Out[i].Shape == nil {
			c.Out[i].Shape = []int{}
		}
	}
}

// has reports whether input i is given.
func (c *InferCtx) Has(i int) bool { return i < len(c.In) && c.In[i] != nil }

// shape returns input i's shape.
func (c *InferCtx) Shape(i int) []int { return c.In[i].Shape }

// dtype returns input i's dtype.
func (c *InferCtx) DType(i int) DType { return c.In[i].DType }

// needFloat checks that input i is float32.
func (c *InferCtx) NeedFloat(i int) error {
	if c.Has(i) && c.In[i].DType != Float32 {
		return c.Errorf("input %d (%s) is %s, want float32", i, c.In[i].Name, c.In[i].DType)
	}
	return nil
}

// constant returns the contents of input i, or a *NotConstantError.
func (c *InferCtx) Constant(i int, what string) (*Tensor, error) {
	t := c.G.ConstOf(c.In[i].Name)
	if t == nil {
		return nil, &NotConstantError{Value: c.In[i].Name, Node: c.N.Name, Op: c.N.OpType, What: what}
	}
	return t, nil
}

// intsParam returns an integer list given either as input i (opsets where
// it is an input) or as attribute attr (opsets where it is an attribute).
// ok is false when neither is given.
func (c *InferCtx) IntsParam(i int, attr, what string) (vals []int64, ok bool, err error) {
	return IntsParam(c.G, c.N, i, attr, what)
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
		if t.DType != Int64 && t.DType != Int32 {
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
func (c *InferCtx) NormAxis(axis int64, rank int) (int, error) {
	if axis < -int64(rank) || axis >= int64(rank) {
		return 0, c.Errorf("axis %d out of range for rank %d", axis, rank)
	}
	if axis < 0 {
		axis += int64(rank)
	}
	return int(axis), nil
}

// normAxes normalizes axes, rejecting duplicates.
func (c *InferCtx) NormAxes(axes []int64, rank int) ([]int, error) {
	out := make([]int, len(axes))
	seen := map[int]bool{}
	for i, a := range axes {
		n, err := c.NormAxis(a, rank)
		if err != nil {
			return nil, err
		}
		if seen[n] {
			return nil, c.Errorf("axis %d repeated in %v", a, axes)
		}
		seen[n] = true
		out[i] = n
	}
	return out, nil
}

// OnlyOutputs rejects the optional outputs past the first n that are used.
func (c *InferCtx) OnlyOutputs(n int, what string) error {
	for i := n; i < len(c.Out); i++ {
		if c.Out[i] != nil {
			return Unsupportedf("%s at node %s: output %d (%s)", c.N.OpType, c.N.Name, i, what)
		}
	}
	return nil
}
