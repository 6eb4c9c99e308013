package ops

import (
	"github.com/tessera-ml/tessera/graph"
	"math"
)

// Ops of shape arithmetic and constants: they never reach a kernel (no
// Lower); constant folding evaluates them, and Pattern Opaque keeps one
// that is left over from hiding inside a kernel.

func init() {
	define(
		&Op{Name: "Shape", MinIn: 1, MaxIn: 1, Pattern: Opaque, Infer: inferShape, Eval: evalShape, ShapesOnly: true},
		&Op{Name: "Size", MinIn: 1, MaxIn: 1, Pattern: Opaque, Infer: inferSize, Eval: evalSize, ShapesOnly: true},
		&Op{Name: "ConstantOfShape", MinIn: 1, MaxIn: 1, Pattern: Opaque, Infer: inferConstantOfShape, Eval: evalConstantOfShape},
		&Op{Name: "Constant", MinIn: 0, MaxIn: 0, Pattern: Opaque, Infer: inferConstant, Eval: evalConstant},
		&Op{Name: "Range", MinIn: 3, MaxIn: 3, Pattern: Opaque, Infer: inferRange, Eval: evalRange},
	)
}

// shapeRange returns Shape's [start, end) (attributes from opset 15).
func (c *InferCtx) shapeRange() (int, int, error) {
	rank := int64(len(c.Shape(0)))
	s, err := c.N.Int("start", 0)
	if err != nil {
		return 0, 0, err
	}
	e, err := c.N.Int("end", rank)
	if err != nil {
		return 0, 0, err
	}
	clamp := func(v int64) int64 {
		if v < 0 {
			v += rank
		}
		return min(max(v, 0), rank)
	}
	s, e = clamp(s), clamp(e)
	return int(s), int(max(s, e)), nil
}

func inferShape(c *InferCtx) error {
	s, e, err := c.shapeRange()
	if err != nil {
		return err
	}
	c.Set(0, graph.Int64, []int{e - s})
	return nil
}

func evalShape(c *InferCtx, _ []*graph.Tensor) ([]*graph.Tensor, error) {
	s, e, _ := c.shapeRange()
	v := make([]int64, 0, e-s)
	for _, d := range c.Shape(0)[s:e] {
		v = append(v, int64(d))
	}
	return []*graph.Tensor{graph.Int64Tensor([]int{e - s}, v)}, nil
}

func inferSize(c *InferCtx) error {
	c.Set(0, graph.Int64, []int{})
	return nil
}

func evalSize(c *InferCtx, _ []*graph.Tensor) ([]*graph.Tensor, error) {
	return []*graph.Tensor{graph.Int64Tensor([]int{}, []int64{int64(graph.NumElems(c.Shape(0)))})}, nil
}

// constantOfShapeValue returns ConstantOfShape's fill value (default
// float32 0).
func (c *InferCtx) constantOfShapeValue() (*graph.Tensor, error) {
	a, ok := c.N.Attrs["value"]
	if !ok {
		return graph.Float32Tensor([]int{1}, []float32{0}), nil
	}
	if a.Kind != graph.AttrTensor || a.T == nil || a.T.Len() != 1 {
		return nil, c.Errorf("value must be a one-element tensor")
	}
	return a.T, nil
}

func inferConstantOfShape(c *InferCtx) error {
	t, err := c.Constant(0, "shape")
	if err != nil {
		return err
	}
	if t.DType != graph.Int64 || len(t.Shape) != 1 {
		return c.Errorf("shape must be a 1-D int64 tensor")
	}
	for _, d := range t.I64 {
		if d < 0 || d > graph.MaxElems {
			return c.Errorf("shape %v", t.I64)
		}
	}
	v, err := c.constantOfShapeValue()
	if err != nil {
		return err
	}
	c.Set(0, v.DType, toInts(t.I64))
	return nil
}

func evalConstantOfShape(c *InferCtx, in []*graph.Tensor) ([]*graph.Tensor, error) {
	v, _ := c.constantOfShapeValue()
	return []*graph.Tensor{remap(v, c.Out[0].Shape, func([]int) int { return 0 })}, nil
}

// constantValue returns a Constant node's value.
func (c *InferCtx) constantValue() (*graph.Tensor, error) {
	for name, a := range c.N.Attrs {
		switch name {
		case "value":
			if a.Kind != graph.AttrTensor || a.T == nil {
				return nil, c.Errorf("value is not a tensor")
			}
			return a.T, nil
		case "value_float":
			return graph.Float32Tensor([]int{}, []float32{a.F}), nil
		case "value_floats":
			return graph.Float32Tensor([]int{len(a.Floats)}, a.Floats), nil
		case "value_int":
			return graph.Int64Tensor([]int{}, []int64{a.I}), nil
		case "value_ints":
			return graph.Int64Tensor([]int{len(a.Ints)}, a.Ints), nil
		case "value_string", "value_strings", "sparse_value":
			return nil, graph.Unsupportedf("Constant at node %s: %s", c.N.Name, name)
		}
	}
	return nil, c.Errorf("no value")
}

func inferConstant(c *InferCtx) error {
	t, err := c.constantValue()
	if err != nil {
		return err
	}
	if err := t.Check(); err != nil {
		return c.Errorf("%v", err)
	}
	c.Set(0, t.DType, t.Shape)
	return nil
}

func evalConstant(c *InferCtx, _ []*graph.Tensor) ([]*graph.Tensor, error) {
	t, err := c.constantValue()
	return []*graph.Tensor{t}, err
}

// rangeParams returns Range's start, limit and delta and the element count.
func (c *InferCtx) rangeParams() (s, l, d float64, n int, err error) {
	var v [3]float64
	for i, what := range []string{"start", "limit", "delta"} {
		t, err := c.Constant(i, what)
		if err != nil {
			return 0, 0, 0, 0, err
		}
		if t.Len() != 1 {
			return 0, 0, 0, 0, c.Errorf("%s must be a scalar", what)
		}
		v[i] = t.Float64s()[0]
	}
	s, l, d = v[0], v[1], v[2]
	cnt := math.Ceil((l - s) / d)
	if math.IsNaN(cnt) || cnt > graph.MaxElems {
		return 0, 0, 0, 0, c.Errorf("range(%v, %v, %v) is too long", s, l, d)
	}
	return s, l, d, int(max(cnt, 0)), nil
}

func inferRange(c *InferCtx) error {
	_, _, _, n, err := c.rangeParams()
	if err != nil {
		return err
	}
	c.Set(0, c.DType(0), []int{n})
	return nil
}

func evalRange(c *InferCtx, in []*graph.Tensor) ([]*graph.Tensor, error) {
	s, _, d, n, _ := c.rangeParams()
	out := &graph.Tensor{DType: in[0].DType, Shape: []int{n}}
	for i := range n {
		v := s + float64(i)*d
		if out.DType.IsInt() {
			out.I64 = append(out.I64, int64(v))
		} else {
			out.F32 = append(out.F32, float32(v))
		}
	}
	if out.DType == graph.Int64 && out.I64 == nil {
		out.I64 = []int64{}
	}
	if out.DType == graph.Float32 && out.F32 == nil {
		out.F32 = []float32{}
	}
	return []*graph.Tensor{out}, nil
}
