package ops

import (
	"slices"

	"github.com/tessera-ml/tessera/graph"
)

// InferCtx is what an op's shape rule (Infer, OutType), evaluator (Eval)
// and expansion (Expand) see of the node they are called for: its graph,
// the opset that applies to it, and its input and output values. The
// caller (package frontend's shape inference) checks the node's arity
// against MinIn and MaxIn and that every input given has a dtype and a
// shape, and creates the output values.
type InferCtx struct {
	G     *graph.Graph
	N     *graph.Node
	Opset int
	In    []*graph.Value // nil for an omitted optional input
	Out   []*graph.Value // nil for an omitted optional output
}

func toInts(v []int64) []int {
	if v == nil {
		return nil
	}
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x)
	}
	return out
}

// Helpers for the shape rules.

// Errorf returns an error naming the node and its op.
func (c *InferCtx) Errorf(format string, args ...any) error { return c.N.Errorf(format, args...) }

// Set gives output i its dtype and shape (a nil output is skipped).
func (c *InferCtx) Set(i int, dt graph.DType, shape []int) {
	if i < len(c.Out) && c.Out[i] != nil {
		c.Out[i].DType = dt
		c.Out[i].Shape = slices.Clone(shape)
		if c.Out[i].Shape == nil {
			c.Out[i].Shape = []int{}
		}
	}
}

// Has reports whether input i is given.
func (c *InferCtx) Has(i int) bool { return i < len(c.In) && c.In[i] != nil }

// Shape returns input i's shape.
func (c *InferCtx) Shape(i int) []int { return c.In[i].Shape }

// DType returns input i's dtype.
func (c *InferCtx) DType(i int) graph.DType { return c.In[i].DType }

// NeedFloat checks that input i is float32.
func (c *InferCtx) NeedFloat(i int) error {
	if c.Has(i) && c.In[i].DType != graph.Float32 {
		return c.Errorf("input %d (%s) is %s, want float32", i, c.In[i].Name, c.In[i].DType)
	}
	return nil
}

// Constant returns the contents of input i, or a *NotConstantError.
func (c *InferCtx) Constant(i int, what string) (*graph.Tensor, error) {
	t := c.G.ConstOf(c.In[i].Name)
	if t == nil {
		return nil, &graph.NotConstantError{Value: c.In[i].Name, Node: c.N.Name, Op: c.N.OpType, What: what}
	}
	return t, nil
}

// IntsParam returns an integer list given either as input i (opsets where
// it is an input) or as attribute attr (opsets where it is an attribute).
// ok is false when neither is given.
func (c *InferCtx) IntsParam(i int, attr, what string) (vals []int64, ok bool, err error) {
	return graph.IntsParam(c.G, c.N, i, attr, what)
}

// NormAxis maps axis in [-rank, rank) to [0, rank).
func (c *InferCtx) NormAxis(axis int64, rank int) (int, error) {
	if axis < -int64(rank) || axis >= int64(rank) {
		return 0, c.Errorf("axis %d out of range for rank %d", axis, rank)
	}
	if axis < 0 {
		axis += int64(rank)
	}
	return int(axis), nil
}

// NormAxes normalizes axes, rejecting duplicates.
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
			return graph.Unsupportedf("%s at node %s: output %d (%s)", c.N.OpType, c.N.Name, i, what)
		}
	}
	return nil
}
