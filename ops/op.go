// Package ops is Tessera's ONNX op set. Each op of the default domain is
// one Op value, defined in one place (a file per op family: unary.go,
// binary.go, window.go, ...): its arity, its fusion pattern, its shape
// rule, its evaluator for constant inputs, and its lowering to te compute.
//
//	graph.Node ──Lookup(op)──▶ *Op ─┬─ Infer / derived from Lower ─▶ shapes (package graph)
//	                                ├─ Eval ─▶ folded constants       (package graph)
//	                                ├─ Pattern ─▶ fusion              (package partition)
//	                                ├─ Lower ─▶ te tensors            (package partition)
//	                                ├─ Alternatives ─▶ rival tasks    (package partition)
//	                                └─ Indices ─▶ run-time index checks (partition, build)
//
// The shape rule of an op that has a lowering is derived from it: shape
// inference lowers the node onto placeholders of its inputs' shapes and
// reads the shapes of the te tensors it gets, so the two cannot disagree.
// Only ops that never reach a kernel (Shape, Constant, Range, ...) or whose
// lowering needs the inferred shape (Reshape) write an Infer of their own.
//
// Adding an op: write its definition in the file of its family (or a new
// file), with a Lower built from te's library or te.Compute/te.Reduce; give
// an Infer only when there is no Lower; give an Eval when the op appears in
// shape arithmetic that constant folding must evaluate; add a conformance or
// unit test. An op best written as other ops (the recurrent ops unrolled
// into MatMul and elementwise nodes, If as its taken branch) gives only an
// Expand, which shape inference applies. The package registers every op
// with package graph at init.
//
// Data types: integer and bool tensors reach kernels as float32 values
// (bool as 0 and 1), exact within ±2^24 (graph.MaxExactInt); a lowering
// whose arithmetic differs for integers (Div truncates, Cast to an integer
// truncates) asks for its inputs' dtypes (lowerCtx.dtype).
package ops

import (
	"fmt"
	"slices"
	"sort"

	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/te"
)

// Op is everything Tessera knows of one ONNX op.
type Op struct {
	Name string
	// MinIn and MaxIn bound the number of inputs (MaxIn < 0: unbounded).
	MinIn, MaxIn int
	// Pattern is what fusion may do with the op.
	Pattern Pattern
	// Infer gives the outputs their dtypes and shapes. When nil, they are
	// derived from Lower, with the dtype OutType gives.
	Infer func(c *inferCtx) error
	// OutType is the dtype of a derived output (nil: the first input's).
	OutType func(c *inferCtx) graph.DType
	// Eval computes the outputs from constant inputs (nil: the op is never
	// folded).
	Eval func(c *inferCtx, in []*graph.Tensor) ([]*graph.Tensor, error)
	// ShapesOnly says that Eval needs only the inputs' shapes (Shape, Size,
	// EyeLike): it folds whether the inputs are constants or not.
	ShapesOnly bool
	// Layout is what the graph's layout pass may do with the op: run it
	// in any layout (elementwise ops), pick its channels-last form
	// (sliding windows), rename the axes it works along (Concat, Slice,
	// Pad: PermuteAxes), or compose its permutation (Transpose); the zero
	// value keeps the layout the model gives.
	Layout graph.Layout
	// PermuteAxes, for Layout graph.LayoutAxes, rewrites a node for
	// permuted inputs (graph.OpRule.PermuteAxes).
	PermuteAxes func(g *graph.Graph, n *graph.Node, perm []int) bool
	// Copy says when the op's first output is its first input's data
	// (reshapes, Identity; Expand and Cast that change nothing): the
	// graph passes remove such copies and merge reshapes.
	Copy graph.Copy
	// CopyIf reports whether node n copies its first input although the
	// op computes in general (a Transpose by the identity permutation, a
	// Pad by zeros); the graph passes remove such nodes too.
	CopyIf func(g *graph.Graph, n *graph.Node) bool
	// Lower maps the node to te tensors, one per output (nil for an
	// omitted output). nil: the op never reaches a kernel (it must be
	// folded away first).
	Lower func(c *lowerCtx) ([]*te.Tensor, error)
	// Expand replaces the node, during shape inference, by the nodes of
	// other ops that compute its outputs (an If by its taken branch, LSTM
	// by its cells unrolled over the sequence); see graph.OpRule. An op
	// that expands in some forms only has a Lower too, and its Expand
	// returns the node itself for a form it keeps (Resize).
	Expand func(c *inferCtx) ([]*graph.Node, error)
	// Alternatives returns the op's other compute definitions that apply
	// to node n (Winograd for a 3×3 Conv; nil: none), adding to g the
	// constants they read; see Alternative.
	Alternatives func(g *graph.Graph, n *graph.Node) ([]Alternative, error)
	// Indices returns the node's inputs that hold indices read at run
	// time, each with the data axes it indexes and the bounds of an index
	// there (nil: none; see IndexOperand). Kernels clamp such indices to
	// stay in memory, so an index out of bounds must be caught before:
	// shape inference checks constant ones, fusion leaves the others in a
	// buffer, and the build's executor checks them when the model runs.
	Indices func(g *graph.Graph, n *graph.Node) ([]IndexOperand, error)
}

// table holds every op by name.
var table = map[string]*Op{}

// define adds ops to the table and registers their shape rules with
// package graph. It is called from the init functions of the family files.
func define(ops ...*Op) {
	for _, op := range ops {
		if _, dup := table[op.Name]; dup {
			panic("ops: " + op.Name + " defined twice")
		}
		if op.Infer == nil && op.Lower == nil && op.Expand == nil {
			panic("ops: " + op.Name + " must have Infer or Lower, or Expand")
		}
		table[op.Name] = op
		r := graph.OpRule{MinIn: op.MinIn, MaxIn: op.MaxIn, ShapesOnly: op.ShapesOnly, Layout: op.Layout, PermuteAxes: op.PermuteAxes, Copy: op.Copy, CopyIf: op.CopyIf}
		if op.Expand != nil {
			r.Expand = func(c *graph.InferCtx) ([]*graph.Node, error) { return op.Expand(&inferCtx{c}) }
		}
		if op.Infer != nil || op.Lower != nil {
			// With Expand too, the op expands in some forms and keeps
			// the node in the others (Resize: see resize.go).
			r.Infer = op.infer
		}
		if op.Eval != nil {
			r.Eval = func(c *graph.InferCtx, in []*graph.Tensor) ([]*graph.Tensor, error) {
				return op.Eval(&inferCtx{c}, in)
			}
		}
		graph.RegisterOp(op.Name, r)
	}
}

// Lookup returns the definition of op type name of the default domain, or
// nil.
func Lookup(name string) *Op { return table[name] }

// FoldOnly reports whether op type name of the default domain is defined
// but never reaches a kernel (Shape, Size, Range, Constant, ...): constant
// folding must remove it before a group is lowered.
func FoldOnly(name string) bool {
	op := table[name]
	return op != nil && op.Lower == nil && op.Expand == nil
}

// LoweredNames lists the ops that have a lowering, sorted.
func LoweredNames() []string {
	var out []string
	for name, op := range table {
		if op.Lower != nil {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// defaultDomain reports whether n belongs to the default ONNX domain.
func defaultDomain(n *graph.Node) bool { return n.Domain == "" || n.Domain == "ai.onnx" }

// PatternOf returns the pattern of node n's op: Opaque for an op of another
// domain or one that is not defined.
func PatternOf(n *graph.Node) Pattern {
	if op := table[n.OpType]; op != nil && defaultDomain(n) {
		return op.Pattern
	}
	return Opaque
}

// infer is the op's shape rule as package graph calls it. It checks the
// node's constant indices too (Indices): a kernel clamps them, which would
// turn a bad model into wrong numbers.
func (op *Op) infer(gc *graph.InferCtx) error {
	c := &inferCtx{gc}
	if op.Indices != nil {
		ios, err := op.Indices(c.G, c.N)
		if err != nil {
			return err
		}
		if err := checkConstIndices(c.G, c.N, ios); err != nil {
			return err
		}
	}
	if op.Infer != nil {
		return op.Infer(c)
	}
	return op.deriveShapes(c)
}

// deriveShapes infers the outputs by lowering the node onto placeholders of
// its inputs' shapes. The outputs take the dtype OutType gives, else the
// first input's. An empty input read as data is unsupported (te holds no
// empty tensors); an empty parameter is fine (ReduceSum's axes).
func (op *Op) deriveShapes(c *inferCtx) error {
	var data []string // the inputs read as data
	lc := &lowerCtx{g: c.G, n: c.N, opset: c.Opset, src: func(name string) (*te.Tensor, error) {
		v := c.G.Values[name]
		if v == nil || v.Shape == nil {
			return nil, fmt.Errorf("value %s has no shape", name)
		}
		data = append(data, name)
		return te.Placeholder(name, v.Shape...), nil
	}}
	outs, err := op.Lower(lc)
	if err != nil {
		return lowerError(c.N, err)
	}
	for _, name := range data {
		if err := CheckShape(name, c.G.Values[name].Shape); err != nil {
			return fmt.Errorf("%s at node %s: %w", c.N.OpType, c.N.Name, err)
		}
	}
	dt := graph.Float32
	if op.OutType != nil {
		dt = op.OutType(c)
	} else {
		for i := range c.In {
			if c.Has(i) {
				dt = c.DType(i)
				break
			}
		}
	}
	for i, t := range outs {
		if t != nil {
			c.Set(i, dt, slices.Clone(t.Shape))
		}
	}
	return nil
}

// sameAs returns an OutType rule: the dtype of input i.
func sameAs(i int) func(c *inferCtx) graph.DType {
	return func(c *inferCtx) graph.DType { return c.DType(i) }
}

// fixed returns an OutType rule: always d.
func fixed(d graph.DType) func(c *inferCtx) graph.DType {
	return func(*inferCtx) graph.DType { return d }
}
