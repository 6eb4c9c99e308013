package ops

import (
	"fmt"
	"slices"

	"github.com/tessera-ml/tessera/graph"
)

// expander builds the nodes an op expands to (Op.Expand): every helper
// appends one node of the graph's opset, spelled as that opset wants it
// (Slice's and Unsqueeze's parameters are inputs in newer opsets and
// attributes in older ones), and returns its output, a fresh name.
type expander struct {
	g     *graph.Graph
	n     *graph.Node // the node being expanded
	opset int
	nodes []*graph.Node
}

func newExpander(c *InferCtx) *expander {
	return &expander{g: c.G, n: c.N, opset: c.Opset}
}

// op appends a node of op type typ with one output and returns the output.
func (e *expander) op(typ string, attrs map[string]graph.Attr, inputs ...string) string {
	out := e.g.FreshName(fmt.Sprintf("%s/%s", e.n.Name, typ))
	e.write(out, typ, attrs, inputs...)
	return out
}

// write appends a node of op type typ that writes out.
func (e *expander) write(out, typ string, attrs map[string]graph.Attr, inputs ...string) {
	if attrs == nil {
		attrs = map[string]graph.Attr{}
	}
	e.nodes = append(e.nodes, &graph.Node{Name: fmt.Sprintf("%s/%s_%d", e.n.Name, typ, len(e.nodes)), OpType: typ,
		Inputs: slices.Clone(inputs), Outputs: []string{out}, Attrs: attrs})
}

// constant adds a constant tensor and returns its name.
func (e *expander) constant(t *graph.Tensor) string {
	name := e.g.FreshName(e.n.Name + "/const")
	e.g.AddConst(name, t)
	return name
}

// ints adds a constant int64 vector.
func (e *expander) ints(v ...int64) string {
	return e.constant(graph.Int64Tensor([]int{len(v)}, slices.Clone(v)))
}

// scalar adds a constant float32 scalar.
func (e *expander) scalar(v float32) string {
	return e.constant(graph.Float32Tensor([]int{}, []float32{v}))
}

// index adds a constant int64 scalar.
func (e *expander) index(k int) string {
	return e.constant(graph.Int64Tensor([]int{}, []int64{int64(k)}))
}

// zeros adds a constant float32 tensor of zeros.
func (e *expander) zeros(shape ...int) string {
	return e.constant(graph.Float32Tensor(slices.Clone(shape), make([]float32, graph.NumElems(shape))))
}

func intAttr(v int64) graph.Attr     { return graph.Attr{Kind: graph.AttrInt, I: v} }
func intsAttr(v ...int64) graph.Attr { return graph.Attr{Kind: graph.AttrInts, Ints: slices.Clone(v)} }
func floatAttr(v float32) graph.Attr { return graph.Attr{Kind: graph.AttrFloat, F: v} }

// slice takes x[start:end] along axis.
func (e *expander) slice(x string, axis, start, end int) string {
	if e.opset < 10 {
		return e.op("Slice", map[string]graph.Attr{"starts": intsAttr(int64(start)), "ends": intsAttr(int64(end)), "axes": intsAttr(int64(axis))}, x)
	}
	return e.op("Slice", nil, x, e.ints(int64(start)), e.ints(int64(end)), e.ints(int64(axis)))
}

// unsqueeze inserts a dimension of 1 at axis.
func (e *expander) unsqueeze(x string, axis int) string {
	if e.opset < 13 {
		return e.op("Unsqueeze", map[string]graph.Attr{"axes": intsAttr(int64(axis))}, x)
	}
	return e.op("Unsqueeze", nil, x, e.ints(int64(axis)))
}

// take is x's slice k along axis, the axis removed (Gather of a scalar).
func (e *expander) take(x string, axis, k int) string {
	return e.op("Gather", map[string]graph.Attr{"axis": intAttr(int64(axis))}, x, e.index(k))
}

func (e *expander) transpose(x string, perm ...int64) string {
	return e.op("Transpose", map[string]graph.Attr{"perm": intsAttr(perm...)}, x)
}

// concat joins xs along axis (one input is returned as it is).
func (e *expander) concat(axis int, xs ...string) string {
	if len(xs) == 1 {
		return xs[0]
	}
	return e.op("Concat", map[string]graph.Attr{"axis": intAttr(int64(axis))}, xs...)
}

// reduceMean averages x over axes, keeping them.
func (e *expander) reduceMean(x string, axes []int64) string {
	return e.reduce("ReduceMean", x, axes, true)
}

// reduce applies Reduce op (ReduceSum, ReduceMax, ...) over axes (nil: all
// of them); the axes are an input from opset 13 for ReduceSum and 18 for
// the others, an attribute before.
func (e *expander) reduce(op, x string, axes []int64, keep bool) string {
	attrs := map[string]graph.Attr{"keepdims": intAttr(0)}
	if keep {
		attrs["keepdims"] = intAttr(1)
	}
	if axes == nil {
		return e.op(op, attrs, x)
	}
	if e.opset < 13 || (op != "ReduceSum" && e.opset < 18) {
		attrs["axes"] = intsAttr(axes...)
		return e.op(op, attrs, x)
	}
	return e.op(op, attrs, x, e.ints(axes...))
}

// squeeze removes the dimension of 1 at axis.
func (e *expander) squeeze(x string, axis int) string {
	if e.opset < 13 {
		return e.op("Squeeze", map[string]graph.Attr{"axes": intsAttr(int64(axis))}, x)
	}
	return e.op("Squeeze", nil, x, e.ints(int64(axis)))
}
