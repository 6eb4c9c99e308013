// Package ops is Tessera's ONNX op set. Each op of the default domain is
// one Op value, defined in one place (a file per op family: unary.go,
// binary.go, window.go, ...): its arity, its fusion pattern, its shape
// rule, its evaluator for constant inputs, and its lowering to te compute.
//
//	graph.Node ──LookupNode──▶ *Op ─┬─ Infer / derived from Lower ─▶ shapes (package frontend)
//	                                ├─ Eval ─▶ folded constants       (package frontend)
//	                                ├─ Expand ─▶ other ops' nodes     (package frontend)
//	                                ├─ Layout, Copy ─▶ graph passes   (package frontend)
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
// Expand, which shape inference applies. Nothing is registered elsewhere:
// the packages above (frontend, partition, assemble) look an op up here.
//
// onnxruntime's quantized contrib ops (domain com.microsoft: QLinearAdd,
// QGemm, ...) are defined in contrib.go, each an Expand into its QDQ form;
// LookupNode finds them.
//
// Data types: each value has a storage type in kernels (Storage): 8-bit
// integers their own where the graph runs on integer kernels, int32
// constants theirs, every other integer and bool tensor float32 values
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
	Infer func(c *InferCtx) error
	// OutType is the dtype of a derived output (nil: the first input's).
	OutType func(c *InferCtx) graph.DType
	// Eval computes the outputs from constant inputs (nil: the op is never
	// folded).
	Eval func(c *InferCtx, in []*graph.Tensor) ([]*graph.Tensor, error)
	// ShapesOnly says that Eval needs only the inputs' shapes (Shape, Size,
	// EyeLike): it folds whether the inputs are constants or not.
	ShapesOnly bool
	// Layout is what the graph's layout pass may do with the op: run it
	// in any layout (elementwise ops), pick its channels-last form
	// (sliding windows), rename the axes it works along (Concat, Slice,
	// Pad: PermuteAxes), or compose its permutation (Transpose); the zero
	// value keeps the layout the model gives.
	Layout Layout
	// PermuteAxes, for Layout LayoutAxes, rewrites node n to compute on
	// inputs whose axes are permuted by perm (axis i of a permuted input
	// is axis perm[i] of the original) what it computed on the originals,
	// its outputs permuted alike. New constants are added to g; n's
	// attribute map may be shared with other nodes and is replaced, not
	// written. It reports false, n unchanged, where it cannot (axes
	// computed at run time).
	PermuteAxes func(g *graph.Graph, n *graph.Node, perm []int) bool
	// Copy says when the op's first output is its first input's data
	// (reshapes, Identity; Expand and Cast that change nothing): the
	// graph passes remove such copies and merge reshapes.
	Copy Copy
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
	// by its cells unrolled over the sequence), once its inputs' shapes
	// (and the contents shape inference knows) are known: they must write
	// the node's outputs, and their other outputs must be new names
	// (Graph.FreshName); constants they need are added with
	// Graph.AddConst. An op that expands in some forms only has a Lower
	// too, and its Expand returns the node itself (alone) for a form it
	// keeps (Resize), which its shape rule then infers.
	Expand func(c *InferCtx) ([]*graph.Node, error)
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

// define adds ops to the table. It is called from the init functions of
// the family files, and only from them: the table is this package's own.
func define(ops ...*Op) {
	for _, op := range ops {
		if _, dup := table[op.Name]; dup {
			panic("ops: " + op.Name + " defined twice")
		}
		if op.Infer == nil && op.Lower == nil && op.Expand == nil {
			panic("ops: " + op.Name + " must have Infer or Lower, or Expand")
		}
		table[op.Name] = op
	}
}

// Lookup returns the definition of op type name of the default domain, or
// nil.
func Lookup(name string) *Op { return table[name] }

// LookupNode returns the definition of node n's op: an op of the default
// domain, or one of onnxruntime's quantized contrib ops (ContribDomain,
// contrib.go), which only expand; nil for another domain or an op that is
// not defined.
func LookupNode(n *graph.Node) *Op {
	if n.Domain == ContribDomain {
		return contrib[n.OpType]
	}
	if !defaultDomain(n) {
		return nil
	}
	return table[n.OpType]
}

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
	if op := LookupNode(n); op != nil {
		return op.Pattern
	}
	return Opaque
}

// HasShapeRule reports whether the op infers its outputs itself (Infer,
// or derived from Lower); an op without one only expands (Expand).
func (op *Op) HasShapeRule() bool { return op.Infer != nil || op.Lower != nil }

// InferNode is the op's shape rule as shape inference calls it: it gives
// node c.N's outputs their dtypes and shapes, by Infer or derived from
// Lower. It checks the node's constant indices first (Indices): a kernel
// clamps them, which would turn a bad model into wrong numbers.
func (op *Op) InferNode(c *InferCtx) error {
	if !op.HasShapeRule() {
		return c.Errorf("the op has no shape rule (it only expands)")
	}
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
func (op *Op) deriveShapes(c *InferCtx) error {
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
func sameAs(i int) func(c *InferCtx) graph.DType {
	return func(c *InferCtx) graph.DType { return c.DType(i) }
}

// fixed returns an OutType rule: always d.
func fixed(d graph.DType) func(c *InferCtx) graph.DType {
	return func(*InferCtx) graph.DType { return d }
}
